// run_transition executes the planner's RedistributePlans on real shards between processes that
// talk through Gloo (a file store in a fresh directory): for every pair of layouts of a tensor on
// meshes [2], [3], [4], [2,2] and [2,3] (uneven and empty chunks included), each worker's shard
// after the plan is exactly its shard of the target layout, and backward_plan carries a gradient
// in gradient_layout(to) to the same gradient in gradient_layout(from). Values are small integers,
// so sums are exact in float32. A Partial layout's addends differ per device (not one device
// holding the value), so a step that drops or double-counts an addend shows. The most bytes a
// worker's allocator holds during a plan, beyond its input, is planner::transient_bytes(plan) on
// the worker at coordinate 0 (which holds the largest chunks) and at most that on the others, with
// and without consuming the input: the planner charges what the runtime allocates.
#include <doctest/doctest.h>

#include <sstream>
#include <string>
#include <vector>

#include "launcher/comm/gloo_communicator.h"
#include "launcher/runtime/cpu/backend.h"
#include "launcher/runtime/transition.h"
#include "planner/parallel/redistribute.h"
#include "planner/parallel/cluster.h"
#include "tests/children.h"

namespace tensoropt {
namespace {

using planner::DeviceMesh;
using planner::Layout;
using planner::Placement;
using runtime::Array;

// A dense host tensor.
struct Host {
  Shape shape;
  std::vector<float> v;
};

Host slice(const Host& x, int dim, int64_t lo, int64_t len) {
  Host y{x.shape, {}};
  y.shape[static_cast<size_t>(dim)] = len;
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < static_cast<int>(x.shape.size()); ++d) {
    if (d < dim) outer *= x.shape[static_cast<size_t>(d)];
    if (d > dim) inner *= x.shape[static_cast<size_t>(d)];
  }
  const int64_t n = x.shape[static_cast<size_t>(dim)];
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = lo; k < lo + len; ++k)
      for (int64_t i = 0; i < inner; ++i) y.v.push_back(x.v[static_cast<size_t>((o * n + k) * inner + i)]);
  return y;
}

// The device at `coord`'s shard of x in `layout`. A Partial axis of p devices splits the value into
// addends: position k > 0 holds d(i) = (i * 7 + k) % 5 - 2, position 0 the value less the others.
Host shard(Host x, const Layout& layout, const DeviceMesh& mesh, const std::vector<int>& coord) {
  for (int a = 0; a < layout.size(); ++a) {
    const Placement& p = layout[a];
    const int parts = mesh.axis(a).size, k = coord[static_cast<size_t>(a)];
    if (p.is_shard()) {
      const int64_t n = x.shape[static_cast<size_t>(p.dim())], c = (n + parts - 1) / parts;
      x = slice(x, p.dim(), std::min(k * c, n), planner::chunk_size(n, parts, k));
    } else if (p.is_partial()) {
      for (size_t i = 0; i < x.v.size(); ++i) {
        auto d = [&](int pos) { return static_cast<float>((static_cast<int64_t>(i) * 7 + pos) % 5 - 2); };
        if (k > 0) {
          x.v[i] = d(k);
        } else {
          for (int other = 1; other < parts; ++other) x.v[i] -= d(other);
        }
      }
    }
  }
  return x;
}

// h as an array of `dt` (float32, or bfloat16: the test's values and sums are small integers,
// exact in both).
Array to_array(const Host& h, runtime::Backend& b, DType dt) {
  Array a(DType::F32, h.shape, b.allocator(), runtime::MemoryKind::Transients);
  b.write(a, h.v.data(), a.bytes());
  if (dt == DType::F32) return a;
  Array c(dt, h.shape, b.allocator(), runtime::MemoryKind::Transients);
  b.convert(a, c);
  return c;
}

std::vector<Layout> all_layouts(int rank, int axes) {
  std::vector<Placement> one = {Placement::replicate(), Placement::partial()};
  for (int d = 0; d < rank; ++d) one.push_back(Placement::shard(d));
  std::vector<Layout> out;
  std::vector<size_t> idx(static_cast<size_t>(axes), 0);
  while (true) {
    std::vector<Placement> p;
    for (size_t i : idx) p.push_back(one[i]);
    out.emplace_back(p);
    size_t a = 0;
    while (a < idx.size() && ++idx[a] == one.size()) idx[a++] = 0;
    if (a == idx.size()) break;
  }
  return out;
}

bool has_partial(const Layout& l) {
  for (const Placement& p : l.placements())
    if (p.is_partial()) return true;
  return false;
}

// Checks `got` (this worker's shard in `layout`) holds x: compared directly when the layout has no
// Partial axis, and after a transition to replicated (through the checked code paths) when it has.
void check_holds(const Array& got, const Host& x, const Layout& layout, const runtime::MeshContext& where,
                 runtime::Backend& b, const std::string& what) {
  const DeviceMesh& mesh = *where.mesh;
  Array a = got;
  Layout at = layout;
  if (has_partial(layout)) {
    const Layout r = Layout::replicated(mesh.ndim());
    a = runtime::run_transition(got, planner::redistribute(x.shape, static_cast<int>(dtype_size(got.dtype())), layout, r, mesh), where, b,
                                runtime::MemoryKind::Transients);
    at = r;
  }
  if (a.dtype() != DType::F32) {
    Array f(DType::F32, a.shape(), b.allocator(), runtime::MemoryKind::Transients);
    b.convert(a, f);
    a = f;
  }
  const Host want = shard(x, at, mesh, mesh.coords(where.rank));
  std::vector<float> have(static_cast<size_t>(a.numel()));
  if (a.shape() != want.shape) throw std::runtime_error(what + ": shard " + a.str() + ", expected " + shape_str(want.shape));
  b.read(a, have.data(), a.bytes());
  for (size_t i = 0; i < have.size(); ++i) {
    if (have[i] != want.v[i]) {
      std::ostringstream os;
      os << what << ": rank " << where.rank << " element " << i << " is " << have[i] << ", expected " << want.v[i];
      throw std::runtime_error(os.str());
    }
  }
}

// Every pair of layouts of `shape` on a mesh of `mesh_shape`, forward and backward, on every rank.
void every_transition(const std::vector<int>& mesh_shape, const Shape& shape, DType dt = DType::F32) {
  CAPTURE(shape_str(shape));
  CAPTURE(static_cast<int>(dt));
  const DeviceMesh mesh = DeviceMesh::with_shape(planner::load_cluster("cpu"), mesh_shape);
  test::TempDir dir;
  auto results = test::run_children(mesh.size(), [&](int rank) {
    comm::GlooOptions o;
    o.rank = rank;
    o.size = mesh.size();
    o.rendezvous = "file:" + dir.path;
    o.timeout = std::chrono::seconds(10);
    o.hostname = "127.0.0.1";
    auto comm = comm::make_gloo_communicator(o);
    runtime::cpu::CpuBackend backend(1);
    const runtime::MeshContext where{&mesh, rank, comm.get()};
    const std::vector<int> coord = mesh.coords(rank);
    Host x{shape, {}}, g{shape, {}};
    for (int64_t i = 0; i < numel(shape); ++i) {
      x.v.push_back(static_cast<float>(i % 17 + 1));
      g.v.push_back(static_cast<float>(i % 11) - 5);
    }
    const std::vector<Layout> layouts = all_layouts(static_cast<int>(shape.size()), mesh.ndim());
    for (const Layout& from : layouts) {
      for (const Layout& to : layouts) {
        if (from == to) continue;
        const std::string what = from.str() + " -> " + to.str();
        const planner::RedistributePlan plan = planner::redistribute(shape, static_cast<int>(dtype_size(dt)), from, to, mesh);
        // Runs a plan on `input` and checks the bytes it held against transient_bytes.
        auto run = [&](const Array& input, const planner::RedistributePlan& p, runtime::MemoryKind kind, const std::string& name,
                       bool consume = false) {
          backend.allocator().reset_peaks();
          const int64_t base = backend.allocator().stats().live_total;
          Array out = runtime::run_transition(input, p, where, backend, kind, consume);
          const int64_t used = backend.allocator().stats().peak_total - base, want = planner::transient_bytes(p, mesh, consume);
          if (used > want || (rank == 0 && used != want)) {
            std::ostringstream os;
            os << name << ": rank " << rank << " held " << used << " bytes besides its input, transient_bytes says " << want;
            throw std::runtime_error(os.str());
          }
          return out;
        };
        Array y = run(to_array(shard(x, from, mesh, coord), backend, dt), plan, runtime::MemoryKind::Activations, what);
        check_holds(y, x, to, where, backend, what);
        y = run(to_array(shard(x, from, mesh, coord), backend, dt), plan, runtime::MemoryKind::Activations, what + " (consuming its input)", true);
        check_holds(y, x, to, where, backend, what + " (consuming its input)");
        // The gradient of the result, carried back by the dual plan.
        const planner::RedistributePlan back = planner::backward_plan(plan, mesh);
        const Layout gto = planner::gradient_layout(to), gfrom = planner::gradient_layout(from);
        Array dx = run(to_array(shard(g, gto, mesh, coord), backend, dt), back, runtime::MemoryKind::Transients, "backward of " + what);
        check_holds(dx, g, gfrom, where, backend, "backward of " + what);
      }
    }
  }, std::chrono::seconds(120));
  for (size_t r = 0; r < results.size(); ++r) {
    CAPTURE(r);
    CHECK(results[r].message == "ok");
  }
}

}  // namespace

TEST_CASE("transition: every layout pair on one mesh axis of 2, 3 and 4 workers, forward and backward, uneven and empty chunks") {
  every_transition({2}, {5, 3});
  every_transition({3}, {4, 2, 3});
  every_transition({4}, {3, 6});
}

TEST_CASE("transition: bfloat16 (mixed precision's activations and gradients) on every layout pair of 2 workers and of a 2x2 mesh") {
  every_transition({2}, {5, 3}, DType::BF16);
  every_transition({2, 2}, {3, 5}, DType::BF16);
  every_transition({2, 2}, {2, 4, 6}, DType::BF16);
}

TEST_CASE("transition: every layout pair on 2x2 and 2x3 meshes, forward and backward") {
  every_transition({2, 2}, {3, 5});
  every_transition({2, 2}, {2, 4, 6});
  every_transition({2, 3}, {4, 7});
}

}  // namespace tensoropt
