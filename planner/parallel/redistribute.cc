#include "planner/parallel/redistribute.h"

#include <algorithm>

#include "graph/error.h"

namespace tensoropt::planner {

std::string_view step_kind_name(StepKind k) {
  switch (k) {
    case StepKind::AllGather: return "AllGather";
    case StepKind::ReduceScatter: return "ReduceScatter";
    case StepKind::AllReduce: return "AllReduce";
    case StepKind::AllToAll: return "AllToAll";
    case StepKind::LocalSlice: return "LocalSlice";
    case StepKind::LocalPad: return "LocalPad";
    case StepKind::LocalPartial: return "LocalPartial";
  }
  return "?";
}

bool is_collective(StepKind k) {
  return k != StepKind::LocalSlice && k != StepKind::LocalPad && k != StepKind::LocalPartial;
}

// Mirrors the table in redistribute.h, which is the specification.
StepKind transition_kind(const Placement& from, const Placement& to) {
  TO_CHECK(!(from == to));
  if (from.is_replicate()) return to.is_partial() ? StepKind::LocalPartial : StepKind::LocalSlice;
  if (from.is_partial()) return to.is_replicate() ? StepKind::AllReduce : StepKind::ReduceScatter;
  if (to.is_replicate()) return StepKind::AllGather;
  return to.is_partial() ? StepKind::LocalPad : StepKind::AllToAll;
}

StepKind dual(StepKind k) {
  switch (k) {
    case StepKind::AllGather: return StepKind::ReduceScatter;
    case StepKind::ReduceScatter: return StepKind::AllGather;
    case StepKind::LocalSlice: return StepKind::LocalPad;
    case StepKind::LocalPad: return StepKind::LocalSlice;
    default: return k;  // AllReduce, AllToAll (dims swapped by the placements), LocalPartial
  }
}

std::string Step::str() const {
  return std::string(step_kind_name(kind)) + "@" + std::to_string(mesh_axis) + " " + from.str() + "->" + to.str() +
         " n=" + std::to_string(group_size) + " in=" + std::to_string(bytes_in) + " out=" + std::to_string(bytes_out) +
         " bytes=" + std::to_string(bytes);
}

std::string RedistributePlan::str() const {
  std::string s = from.str() + " -> " + to.str() + "\n";
  for (const auto& st : steps) s += "  " + st.str() + "\n";
  return s;
}

int RedistributePlan::count(StepKind k) const {
  return static_cast<int>(std::count_if(steps.begin(), steps.end(), [k](const Step& s) { return s.kind == k; }));
}

Placement gradient_placement(const Placement& p) {
  if (p.is_replicate()) return Placement::partial();
  if (p.is_partial()) return Placement::replicate();
  return p;
}

Layout gradient_layout(const Layout& l) {
  std::vector<Placement> g;
  for (const auto& p : l.placements()) g.push_back(gradient_placement(p));
  return Layout(std::move(g));
}

namespace {

// The step turning cur[axis] into `to`, with its sizes. REQUIRES: the step is legal (see header).
Step make_step(const Shape& shape, int dtype_bytes, const Layout& cur, int axis, const Placement& to,
               const DeviceMesh& mesh) {
  Step s;
  s.mesh_axis = axis;
  s.from = cur[axis];
  s.to = to;
  s.kind = transition_kind(s.from, to);
  s.group_size = mesh.axis(axis).size;
  s.bytes_in = max_local_bytes(shape, dtype_bytes, cur, mesh);
  s.bytes_out = max_local_bytes(shape, dtype_bytes, cur.with(axis, to), mesh);
  // The tensor as this axis sees it: the largest shard with the axis itself unsplit. Legal steps
  // make `axis` the innermost splitter of the dims they touch, so this is well defined.
  Shape piece = max_local_shape(shape, cur.with(axis, Placement::replicate()), mesh);
  auto split = [&](int d) {
    auto& x = piece[static_cast<size_t>(d)];
    x = (x + s.group_size - 1) / s.group_size;
  };
  int64_t n = 1;
  switch (s.kind) {
    case StepKind::AllGather: split(s.from.dim()); n = s.group_size; break;
    case StepKind::ReduceScatter: split(s.to.dim()); n = s.group_size; break;
    case StepKind::AllToAll:
      split(s.from.dim());
      split(s.to.dim());
      n = s.group_size;
      break;
    case StepKind::AllReduce: break;
    default: n = 0;
  }
  int64_t elements = 0;  // cannot overflow on a mesh the shape fits on (fits_on_mesh)
  TO_CHECK(!__builtin_mul_overflow(n, numel(piece), &elements) &&
           !__builtin_mul_overflow(elements, int64_t{dtype_bytes}, &s.bytes));
  return s;
}

// No axis after `a` shards tensor dimension d.
bool later_free(const Layout& cur, int a, int d) {
  for (int c = a + 1; c < cur.size(); ++c)
    if (cur[c].is_shard(d)) return false;
  return true;
}
// The axes before `a` shard tensor dimension d exactly as the target does.
bool earlier_match(const Layout& cur, const Layout& to, int a, int d) {
  for (int c = 0; c < a; ++c)
    if (cur[c].is_shard(d) != to[c].is_shard(d)) return false;
  return true;
}
// Axis a holds its final placement, nested as in the target.
bool settled(const Layout& cur, const Layout& to, int a) {
  return cur[a] == to[a] && (!cur[a].is_shard() || earlier_match(cur, to, a, cur[a].dim()));
}

// The next step from cur towards to, by the phases of the header; {-1, R} when cur == to.
std::pair<int, Placement> next_step(const Layout& cur, const Layout& to) {
  const int k = cur.size();
  // 1. shard, ascending axes.
  for (int a = 0; a < k; ++a) {
    const Placement &c = cur[a], &t = to[a];
    if (t.is_shard() && !c.is_shard() && earlier_match(cur, to, a, t.dim()) && later_free(cur, a, t.dim())) return {a, t};
  }
  // 2. AllReduce, LocalPartial, AllToAll, ascending axes.
  for (int a = 0; a < k; ++a)
    if (cur[a].is_partial() && to[a].is_replicate()) return {a, to[a]};
  for (int a = 0; a < k; ++a)
    if (cur[a].is_replicate() && to[a].is_partial()) return {a, to[a]};
  for (int a = 0; a < k; ++a) {
    const Placement &c = cur[a], &t = to[a];
    if (c.is_shard() && t.is_shard() && c.dim() != t.dim() && later_free(cur, a, c.dim()) &&
        earlier_match(cur, to, a, t.dim()) && later_free(cur, a, t.dim()))
      return {a, t};
  }
  // 3. unshard, descending axes.
  for (int a = k - 1; a >= 0; --a) {
    const Placement& c = cur[a];
    if (c.is_shard() && !settled(cur, to, a) && later_free(cur, a, c.dim()))
      return {a, to[a].is_partial() ? Placement::partial() : Placement::replicate()};
  }
  return {-1, Placement::replicate()};
}

int phase2_rank(StepKind k) {
  switch (k) {
    case StepKind::AllReduce: return 0;
    case StepKind::LocalPartial: return 1;
    case StepKind::AllToAll: return 2;
    default: return -1;
  }
}

}  // namespace

bool fits_on_mesh(const Shape& shape, int dtype_bytes, const DeviceMesh& mesh) {
  int64_t bytes = 0;
  return !__builtin_mul_overflow(numel(shape), std::max<int64_t>(dtype_bytes, 1) * mesh.size(), &bytes);
}

RedistributePlan redistribute(const Shape& shape, int dtype_bytes, const Layout& from, const Layout& to,
                              const DeviceMesh& mesh) {
  check_layout(shape, from, mesh);
  check_layout(shape, to, mesh);
  TO_CHECK(dtype_bytes > 0);
  RedistributePlan plan{shape, dtype_bytes, from, to, {}};
  Layout cur = from;
  // Each axis moves at most three times (detour to R, reshard, and one more), so this bounds the loop.
  for (int guard = 0; !(cur == to); ++guard) {
    TO_CHECK(guard <= 3 * mesh.ndim());
    auto [axis, p] = next_step(cur, to);
    TO_CHECK(axis >= 0);
    plan.steps.push_back(make_step(shape, dtype_bytes, cur, axis, p, mesh));
    cur = cur.with(axis, p);
  }
  return plan;
}

ZeroFlat zero_flat(const Layout& storage) {
  std::vector<Placement> gradient, chunk, whole;
  for (const Placement& p : storage.placements()) {
    const bool replicated = p.is_replicate();
    gradient.push_back(replicated ? Placement::partial() : Placement::replicate());
    chunk.push_back(replicated ? Placement::shard(0) : Placement::replicate());
    whole.push_back(Placement::replicate());
  }
  return {Layout(gradient), Layout(chunk), Layout(whole)};
}

int64_t outer_size(const Shape& shape, int d) {
  int64_t n = 1;
  for (int k = 0; k < d; ++k) n *= shape[static_cast<size_t>(k)];
  return n;
}

int64_t transient_bytes(const RedistributePlan& plan, const DeviceMesh& mesh, bool consume_input) {
  const std::vector<int> origin(static_cast<size_t>(mesh.ndim()), 0);
  Layout layout = plan.from;
  int64_t most = 0, carried = 0;  // carried: the bytes of the current shard that are not the input
  for (size_t k = 0; k < plan.steps.size(); ++k) {
    const Step& s = plan.steps[k];
    const Layout next = layout.with(s.mesh_axis, s.to);
    const Shape before = local_shape(plan.shape, layout, mesh, origin);
    const int64_t in = numel(before) * plan.dtype_bytes, out = numel(local_shape(plan.shape, next, mesh, origin)) * plan.dtype_bytes;
    int64_t held = out;
    switch (s.kind) {
      case StepKind::AllGather:
        if (outer_size(before, s.from.dim()) != 1) held += out;  // received, then unpacked
        break;
      case StepKind::ReduceScatter:
        if (outer_size(before, s.to.dim()) != 1) held += in;  // packed
        break;
      case StepKind::AllToAll: {
        if (outer_size(before, s.to.dim()) != 1) held += in;  // packed
        Shape mine = before;
        mine[static_cast<size_t>(s.to.dim())] = chunk_size(before[static_cast<size_t>(s.to.dim())], s.group_size, 0);
        if (outer_size(mine, s.from.dim()) != 1) held += out;  // received, then unpacked
        break;
      }
      case StepKind::AllReduce:
        if (k > 0 || consume_input) held = -1;  // in place
        break;
      case StepKind::LocalSlice:
      case StepKind::LocalPad:
      case StepKind::LocalPartial: break;
    }
    if (held < 0) {
      most = std::max(most, carried);  // the result is the shard itself
    } else {
      most = std::max(most, carried + held);
      carried = out;
    }
    layout = next;
  }
  return most;
}

RedistributePlan backward_plan(const RedistributePlan& plan, const DeviceMesh& mesh) {
  struct Move {
    int axis;
    Placement from, to;
    StepKind kind;
  };
  std::vector<Move> moves;
  for (auto it = plan.steps.rbegin(); it != plan.steps.rend(); ++it)
    moves.push_back({it->mesh_axis, gradient_placement(it->to), gradient_placement(it->from), dual(it->kind)});
  // Runs of consecutive phase-2 steps act on distinct axes; they commute, and are listed in phase-2
  // order, when no tensor dimension is touched by two of them. Two AllToAlls that touch the same
  // dimension do not commute: the chunks of a dimension nest in mesh-axis order (layout.h), so
  // [S(2),S(1)] -> [S(1),S(0)] must move axis 1 off dimension 1 before axis 0 moves onto it.
  for (size_t i = 0; i < moves.size();) {
    size_t j = i;
    std::vector<int> touched;
    bool disjoint = true;
    while (j < moves.size() && phase2_rank(moves[j].kind) >= 0) {
      for (const Placement& p : {moves[j].from, moves[j].to}) {
        if (!p.is_shard()) continue;
        disjoint = disjoint && std::find(touched.begin(), touched.end(), p.dim()) == touched.end();
        touched.push_back(p.dim());
      }
      ++j;
    }
    if (disjoint) {
      std::stable_sort(moves.begin() + static_cast<std::ptrdiff_t>(i), moves.begin() + static_cast<std::ptrdiff_t>(j),
                       [](const Move& x, const Move& y) {
                         return std::pair(phase2_rank(x.kind), x.axis) < std::pair(phase2_rank(y.kind), y.axis);
                       });
    }
    i = j == i ? i + 1 : j;
  }
  RedistributePlan back{plan.shape, plan.dtype_bytes, gradient_layout(plan.to), gradient_layout(plan.from), {}};
  Layout cur = back.from;
  for (const auto& m : moves) {
    TO_CHECK(cur[m.axis] == m.from);
    back.steps.push_back(make_step(plan.shape, plan.dtype_bytes, cur, m.axis, m.to, mesh));
    TO_CHECK(back.steps.back().kind == m.kind);
    cur = cur.with(m.axis, m.to);
  }
  TO_CHECK(cur == back.to);
  return back;
}

}  // namespace tensoropt::planner
