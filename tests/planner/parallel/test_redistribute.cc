// The layout transition function: every single-axis transition, multi-axis orders, sizes by hand,
// the backward duality, and an exhaustive check that every plan, executed on a simulated mesh,
// moves real values to where the target layout says they are.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>

#include "planner/parallel/cluster.h"
#include "tests/planner/parallel/placements.h"
#include "planner/parallel/redistribute.h"

namespace tensoropt::planner {
namespace {

using test::mesh;
using test::P;
using test::R;
using test::S;

std::vector<StepKind> kinds(const RedistributePlan& p) {
  std::vector<StepKind> k;
  for (const auto& s : p.steps) k.push_back(s.kind);
  return k;
}

TEST_CASE("redistribute: every single-axis transition is the one step of the table") {
  auto m = mesh({4});
  const Shape shape{8, 12};  // fp32; full 384 bytes, a quarter 96
  struct Row {
    Placement from, to;
    StepKind kind;
    int64_t in, out, bytes;
  };
  const std::vector<Row> table = {
      {S(0), R, StepKind::AllGather, 96, 384, 384},
      {S(1), R, StepKind::AllGather, 96, 384, 384},
      {P, R, StepKind::AllReduce, 384, 384, 384},
      {P, S(0), StepKind::ReduceScatter, 384, 96, 384},
      {P, S(1), StepKind::ReduceScatter, 384, 96, 384},
      {R, S(0), StepKind::LocalSlice, 384, 96, 0},
      {R, S(1), StepKind::LocalSlice, 384, 96, 0},
      {S(0), S(1), StepKind::AllToAll, 96, 96, 96},
      {S(1), S(0), StepKind::AllToAll, 96, 96, 96},
      {R, P, StepKind::LocalPartial, 384, 384, 0},
      {S(0), P, StepKind::LocalPad, 96, 384, 0},
      {S(1), P, StepKind::LocalPad, 96, 384, 0},
  };
  for (const auto& row : table) {
    auto plan = redistribute(shape, 4, Layout({row.from}), Layout({row.to}), m);
    INFO(plan.str());
    REQUIRE(plan.steps.size() == 1);
    const Step& s = plan.steps[0];
    CHECK(s.kind == row.kind);
    CHECK(s.kind == transition_kind(row.from, row.to));
    CHECK(s.mesh_axis == 0);
    CHECK(s.from == row.from);
    CHECK(s.to == row.to);
    CHECK(s.group_size == 4);
    CHECK(s.bytes_in == row.in);
    CHECK(s.bytes_out == row.out);
    CHECK(s.bytes == row.bytes);
    CHECK(plan.count(row.kind) == 1);
    int collectives = 0;
    for (auto k : {StepKind::AllGather, StepKind::ReduceScatter, StepKind::AllReduce, StepKind::AllToAll})
      collectives += plan.count(k);
    CHECK(collectives == (is_collective(row.kind) ? 1 : 0));
  }
  for (auto p : {R, P, S(0), S(1)}) CHECK(redistribute(shape, 4, Layout({p}), Layout({p}), m).steps.empty());
}

TEST_CASE("redistribute: identity is an empty plan on any mesh") {
  auto m = mesh({2, 4});
  for (auto a : {R, P, S(0), S(1)})
    for (auto b : {R, P, S(0), S(1)}) CHECK(redistribute({6, 10}, 2, Layout({a, b}), Layout({a, b}), m).steps.empty());
}

TEST_CASE("redistribute: [S(0),S(0)] -> [R,R] gathers the inner axis first") {
  auto m = mesh({2, 4});
  auto plan = redistribute({16, 4}, 4, Layout({S(0), S(0)}), Layout({R, R}), m);
  INFO(plan.str());
  CHECK(plan.str() ==
        "[S(0),S(0)] -> [R,R]\n"
        "  AllGather@1 S(0)->R n=4 in=32 out=128 bytes=128\n"
        "  AllGather@0 S(0)->R n=2 in=128 out=256 bytes=256\n");
  CHECK(plan.count(StepKind::AllGather) == 2);
}

TEST_CASE("redistribute: [P,S(1)] -> [R,R] reduces the shard, then gathers") {
  auto m = mesh({2, 4});
  auto plan = redistribute({16, 4}, 4, Layout({P, S(1)}), Layout({R, R}), m);
  CHECK(plan.str() ==
        "[P,S(1)] -> [R,R]\n"
        "  AllReduce@0 P->R n=2 in=64 out=64 bytes=64\n"
        "  AllGather@1 S(1)->R n=4 in=64 out=256 bytes=256\n");
}

TEST_CASE("redistribute: [S(0),R] -> [R,S(0)] gathers axis 0, then slices axis 1") {
  auto m = mesh({2, 4});
  auto plan = redistribute({16, 4}, 4, Layout({S(0), R}), Layout({R, S(0)}), m);
  CHECK(plan.str() ==
        "[S(0),R] -> [R,S(0)]\n"
        "  AllGather@0 S(0)->R n=2 in=128 out=256 bytes=256\n"
        "  LocalSlice@1 R->S(0) n=4 in=256 out=64 bytes=0\n");
}

TEST_CASE("redistribute: more two-axis cases, by hand") {
  auto m = mesh({2, 4});
  // A detour: axis 1's S(0) is nested under axis 0's, so it must be gathered and cut again.
  auto detour = redistribute({16, 4}, 4, Layout({S(0), S(0)}), Layout({R, S(0)}), m);
  CHECK(kinds(detour) == std::vector<StepKind>{StepKind::AllGather, StepKind::AllGather, StepKind::LocalSlice});
  // An all-to-all waits until the inner axis no longer shards its target dimension.
  auto a2a = redistribute({16, 8}, 4, Layout({S(0), S(1)}), Layout({S(1), R}), m);
  CHECK(a2a.str() ==
        "[S(0),S(1)] -> [S(1),R]\n"
        "  AllGather@1 S(1)->R n=4 in=64 out=256 bytes=256\n"
        "  AllToAll@0 S(0)->S(1) n=2 in=256 out=256 bytes=256\n");
  // Reduce-scatters go outer axis first; the inner one splits the outer one's chunk.
  auto rs = redistribute({16, 4}, 4, Layout({P, P}), Layout({S(0), S(0)}), m);
  CHECK(rs.str() ==
        "[P,P] -> [S(0),S(0)]\n"
        "  ReduceScatter@0 P->S(0) n=2 in=256 out=128 bytes=256\n"
        "  ReduceScatter@1 P->S(0) n=4 in=128 out=32 bytes=128\n");
}

TEST_CASE("redistribute: uneven sizes pad each collective piece to the ceil chunk") {
  auto m = mesh({4});
  // 10 rows four ways: 3,3,3,1. The gather moves 4 padded pieces of 3 rows.
  auto ag = redistribute({10, 2}, 4, Layout({S(0)}), Layout({R}), m);
  CHECK(ag.steps[0].bytes_in == 3 * 2 * 4);
  CHECK(ag.steps[0].bytes_out == 10 * 2 * 4);
  CHECK(ag.steps[0].bytes == 4 * 3 * 2 * 4);
  // 3 rows four ways: 1,1,1,0; an all-to-all from rows to 6 columns (2,2,2,0).
  auto a2a = redistribute({3, 6}, 4, Layout({S(0)}), Layout({S(1)}), m);
  CHECK(a2a.steps[0].bytes_in == 1 * 6 * 4);
  CHECK(a2a.steps[0].bytes_out == 3 * 2 * 4);
  CHECK(a2a.steps[0].bytes == 4 * (1 * 2) * 4);
  auto m2 = mesh({2, 4});
  auto two = redistribute({10, 2}, 4, Layout({S(0), S(0)}), Layout({R, R}), m2);
  // 10 -> 5,5 -> (2,2,1,0): gather axis 1 of 4 pieces of 2 rows, then axis 0 of 2 pieces of 5.
  CHECK(two.steps[0].bytes == 4 * 2 * 2 * 4);
  CHECK(two.steps[1].bytes == 2 * 5 * 2 * 4);
}

TEST_CASE("redistribute: gradient layouts") {
  CHECK(gradient_placement(R) == P);
  CHECK(gradient_placement(P) == R);
  CHECK(gradient_placement(S(2)) == S(2));
  CHECK(gradient_layout(Layout({R, P, S(0)})) == Layout({P, R, S(0)}));
}

TEST_CASE("redistribute: backward_plan is the plan of the gradient transition, single axis") {
  auto m = mesh({4});
  for (auto a : {R, P, S(0), S(1)})
    for (auto b : {R, P, S(0), S(1)}) {
      auto fwd = redistribute({10, 7}, 4, Layout({a}), Layout({b}), m);
      auto back = backward_plan(fwd, m);
      auto want = redistribute({10, 7}, 4, gradient_layout(Layout({b})), gradient_layout(Layout({a})), m);
      INFO(fwd.str(), back.str(), want.str());
      CHECK(back == want);
      if (!fwd.steps.empty()) {
        CHECK(back.steps[0].kind == dual(fwd.steps[0].kind));
        CHECK(back.steps[0].bytes == fwd.steps[0].bytes);
      }
    }
}

TEST_CASE("redistribute: backward_plan on two axes") {
  auto m = mesh({2, 4});
  const std::vector<std::pair<Layout, Layout>> cases = {
      {Layout({S(0), S(0)}), Layout({R, R})}, {Layout({P, S(1)}), Layout({R, R})}, {Layout({S(0), R}), Layout({R, S(0)})},
      {Layout({P, P}), Layout({R, R})},       {Layout({R, R}), Layout({S(0), S(1)})}, {Layout({S(0), S(1)}), Layout({S(1), R})},
      {Layout({R, P}), Layout({P, S(0)})},    {Layout({S(1), P}), Layout({S(0), R})}, {Layout({P, R}), Layout({S(0), P})},
  };
  for (const auto& [a, b] : cases) {
    auto fwd = redistribute({12, 8}, 4, a, b, m);
    auto back = backward_plan(fwd, m);
    auto want = redistribute({12, 8}, 4, gradient_layout(b), gradient_layout(a), m);
    INFO(fwd.str(), back.str(), want.str());
    CHECK(back == want);
  }
}

// ---- Simulation: execute a plan on every device with real numbers. ----

struct Device {
  std::vector<int64_t> lo, hi;  // the global box held
  std::vector<double> vals;     // global-sized; only the box is meaningful
};

int64_t flat(const Shape& shape, const std::vector<int64_t>& idx) {
  int64_t f = 0;
  for (size_t d = 0; d < shape.size(); ++d) f = f * shape[d] + idx[d];
  return f;
}
template <class F>
void for_box(const std::vector<int64_t>& lo, const std::vector<int64_t>& hi, F f) {
  for (size_t d = 0; d < lo.size(); ++d)
    if (lo[d] >= hi[d]) return;
  std::vector<int64_t> idx = lo;
  while (true) {
    f(idx);
    size_t d = lo.size();
    while (d > 0) {
      --d;
      if (++idx[d] < hi[d]) break;
      idx[d] = lo[d];
      if (d == 0) return;
    }
  }
}
std::pair<int64_t, int64_t> chunk_range(int64_t lo, int64_t hi, int parts, int k) {
  int64_t n = hi - lo, c = (n + parts - 1) / parts;
  return {lo + std::min(c * k, n), lo + std::min(c * (k + 1), n)};
}
double value(int64_t e) { return 1000.0 + 7.0 * static_cast<double>(e); }

// Boxes by the layout's nesting; values split over Partial axes (integers, so sums are exact).
std::vector<Device> place(const Shape& shape, const Layout& l, const DeviceMesh& m) {
  std::vector<Device> devs(static_cast<size_t>(m.size()));
  int64_t n = numel(shape);
  for (int r = 0; r < m.size(); ++r) {
    auto c = m.coords(r);
    Device& d = devs[static_cast<size_t>(r)];
    d.lo.assign(shape.size(), 0);
    d.hi = shape;
    int parts = 1, index = 0;
    for (int a = 0; a < m.ndim(); ++a) {
      if (l[a].is_shard()) {
        auto dim = static_cast<size_t>(l[a].dim());
        std::tie(d.lo[dim], d.hi[dim]) = chunk_range(d.lo[dim], d.hi[dim], m.axis(a).size, c[static_cast<size_t>(a)]);
      } else if (l[a].is_partial()) {
        index = index * m.axis(a).size + c[static_cast<size_t>(a)];
        parts *= m.axis(a).size;
      }
    }
    d.vals.assign(static_cast<size_t>(n), 0);
    for_box(d.lo, d.hi, [&](const std::vector<int64_t>& i) {
      int64_t e = flat(shape, i);
      double share = static_cast<double>(e + 1);
      d.vals[static_cast<size_t>(e)] = index == 0 ? value(e) - (parts - 1) * share : share;
    });
  }
  return devs;
}

void execute(const Shape& shape, const Step& s, const DeviceMesh& m, std::vector<Device>& devs) {
  std::vector<Device> next = devs;
  for (int r = 0; r < m.size(); ++r) {
    auto group = m.group(r, s.mesh_axis);
    int k = m.coords(r)[static_cast<size_t>(s.mesh_axis)];
    Device& out = next[static_cast<size_t>(r)];
    const Device& me = devs[static_cast<size_t>(r)];
    auto gather = [&](int dim, bool zero_others) {  // union of the group's boxes along dim
      auto d = static_cast<size_t>(dim);
      int64_t total = 0;
      out.lo[d] = me.lo[d];
      out.hi[d] = me.hi[d];
      for (int g : group) {
        const Device& o = devs[static_cast<size_t>(g)];
        out.lo[d] = std::min(out.lo[d], o.lo[d]);
        out.hi[d] = std::max(out.hi[d], o.hi[d]);
        total += o.hi[d] - o.lo[d];
        for (size_t x = 0; x < shape.size(); ++x)
          if (x != d) REQUIRE((o.lo[x] == me.lo[x] && o.hi[x] == me.hi[x]));
        if (zero_others && g != r) continue;
        for_box(o.lo, o.hi, [&](const std::vector<int64_t>& i) {
          out.vals[static_cast<size_t>(flat(shape, i))] = o.vals[static_cast<size_t>(flat(shape, i))];
        });
      }
      REQUIRE(total == out.hi[d] - out.lo[d]);  // the pieces tile the union: the nesting was right
      if (zero_others)
        for_box(out.lo, out.hi, [&](const std::vector<int64_t>& i) {
          bool mine = true;
          for (size_t x = 0; x < shape.size(); ++x) mine = mine && i[x] >= me.lo[x] && i[x] < me.hi[x];
          if (!mine) out.vals[static_cast<size_t>(flat(shape, i))] = 0;
        });
    };
    auto slice = [&](int dim) {
      auto d = static_cast<size_t>(dim);
      std::tie(out.lo[d], out.hi[d]) = chunk_range(out.lo[d], out.hi[d], static_cast<int>(group.size()), k);
    };
    auto sum = [&] {
      for (int g : group) {
        const Device& o = devs[static_cast<size_t>(g)];
        REQUIRE((o.lo == me.lo && o.hi == me.hi));
      }
      for_box(me.lo, me.hi, [&](const std::vector<int64_t>& i) {
        double t = 0;
        for (int g : group) t += devs[static_cast<size_t>(g)].vals[static_cast<size_t>(flat(shape, i))];
        out.vals[static_cast<size_t>(flat(shape, i))] = t;
      });
    };
    switch (s.kind) {
      case StepKind::AllGather: gather(s.from.dim(), false); break;
      case StepKind::AllToAll: gather(s.from.dim(), false); slice(s.to.dim()); break;
      case StepKind::LocalPad: gather(s.from.dim(), true); break;
      case StepKind::LocalSlice: slice(s.to.dim()); break;
      case StepKind::AllReduce: sum(); break;
      case StepKind::ReduceScatter: sum(); slice(s.to.dim()); break;
      case StepKind::LocalPartial:
        if (k != 0) std::fill(out.vals.begin(), out.vals.end(), 0.0);
        break;
    }
  }
  devs = next;
}

// Every device holds the box the layout gives it, and the Partial groups sum to the tensor.
void check_holds(const Shape& shape, const Layout& l, const DeviceMesh& m, const std::vector<Device>& devs) {
  auto want = place(shape, l, m);
  for (int r = 0; r < m.size(); ++r) {
    const Device& d = devs[static_cast<size_t>(r)];
    REQUIRE(d.lo == want[static_cast<size_t>(r)].lo);
    REQUIRE(d.hi == want[static_cast<size_t>(r)].hi);
    auto c = m.coords(r);
    for_box(d.lo, d.hi, [&](const std::vector<int64_t>& i) {
      // Sum over the devices that differ from r only on Partial axes.
      double t = 0;
      for (int q = 0; q < m.size(); ++q) {
        auto cq = m.coords(q);
        bool same = true;
        for (int a = 0; a < m.ndim(); ++a) same = same && (l[a].is_partial() || cq[static_cast<size_t>(a)] == c[static_cast<size_t>(a)]);
        if (same) t += devs[static_cast<size_t>(q)].vals[static_cast<size_t>(flat(shape, i))];
      }
      REQUIRE(t == value(flat(shape, i)));
    });
  }
}

std::vector<Layout> all_layouts(int axes, int dims) {
  std::vector<Placement> choices = {R, P};
  for (int d = 0; d < dims; ++d) choices.push_back(S(d));
  std::vector<Layout> out = {Layout(std::vector<Placement>{})};
  for (int a = 0; a < axes; ++a) {
    std::vector<Layout> grown;
    for (const auto& l : out)
      for (auto p : choices) {
        auto v = l.placements();
        v.push_back(p);
        grown.push_back(Layout(v));
      }
    out = grown;
  }
  return out;
}

// Returns how many transitions without detours have backward_plan == redistribute(dual).
int exhaustive(const DeviceMesh& m, const Shape& shape) {
  auto layouts = all_layouts(m.ndim(), static_cast<int>(shape.size()));
  int dual_equal = 0, single_change = 0;
  for (const auto& a : layouts)
    for (const auto& b : layouts) {
      auto plan = redistribute(shape, 4, a, b, m);
      INFO(plan.str());
      auto devs = place(shape, a, m);
      check_holds(shape, a, m, devs);
      for (const auto& s : plan.steps) execute(shape, s, m, devs);
      check_holds(shape, b, m, devs);
      // The backward plan is executable too and lands the gradient in gradient_layout(a).
      auto back = backward_plan(plan, m);
      auto g = place(shape, back.from, m);
      for (const auto& s : back.steps) execute(shape, s, m, g);
      check_holds(shape, gradient_layout(a), m, g);
      std::vector<int> moves(static_cast<size_t>(m.ndim()), 0);
      for (const auto& s : plan.steps) ++moves[static_cast<size_t>(s.mesh_axis)];
      if (std::all_of(moves.begin(), moves.end(), [](int x) { return x <= 1; })) {
        ++single_change;
        auto want = redistribute(shape, 4, gradient_layout(b), gradient_layout(a), m);
        dual_equal += back == want;
      }
    }
  MESSAGE(m.str() << ": " << layouts.size() * layouts.size() << " transitions, " << single_change
                  << " without detours, backward == redistribute(dual) on " << dual_equal);
  return dual_equal;
}

TEST_CASE("redistribute: every plan moves real values correctly, [4] and [2,3] and [2,2,2], uneven") {
  // Exact duality on every single-axis transition; on more axes the greedy order is not symmetric
  // in every case (redistribute.h, "Guarantee"): these counts guard against regressions.
  CHECK(exhaustive(mesh({4}), {5, 3}) == 16);
  CHECK(exhaustive(mesh({2, 3}), {5, 7}) >= 232);     // of 236 without detours
  CHECK(exhaustive(mesh({2, 2, 2}), {3, 5}) >= 2880);  // of 3300
}

}  // namespace
}  // namespace tensoropt::planner
