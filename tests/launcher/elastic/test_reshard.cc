// elastic::reshard (launcher/elastic/reshard.h) against the slices it must produce: tensors of
// uneven sizes (a matrix, a vector, a scalar), every pair of layouts of the old and the new point,
// growing (2 -> 4 workers, 1 -> 3) and shrinking (4 -> 3, 3 -> 1), with two optimizer slots each;
// every new worker's shards equal the global tensor's slices under the new layouts.
#include <doctest/doctest.h>

#include <sstream>
#include <string>
#include <vector>

#include "launcher/comm/gloo_communicator.h"
#include "launcher/elastic/reshard.h"
#include "launcher/runtime/cpu/backend.h"
#include "planner/parallel/cluster.h"
#include "tests/children.h"

namespace tensoropt {
namespace {

using planner::DeviceMesh;
using planner::Layout;
using planner::Placement;
using runtime::Array;

// Every layout of a tensor of `rank` dimensions on a mesh of `axes` axes (no partial sums: homes
// never hold one).
std::vector<Layout> layouts(int rank, int axes) {
  std::vector<Layout> out{Layout(std::vector<Placement>{})};
  for (int a = 0; a < axes; ++a) {
    std::vector<Layout> more;
    for (const Layout& l : out) {
      std::vector<Placement> p = l.placements();
      p.push_back(Placement::replicate());
      more.emplace_back(p);
      for (int d = 0; d < rank; ++d) {
        p.back() = Placement::shard(d);
        more.emplace_back(p);
      }
    }
    out = more;
  }
  return out;
}

// The global value of tensor t's item k (0 the parameter, 1.. its slots): distinct everywhere.
float value(int t, int k, int64_t i) { return static_cast<float>(1000 * t + 100 * k) + static_cast<float>(i); }

// Tensor t's item k sliced to rank's box under `h`.
std::vector<float> slice(const Shape& shape, const elastic::Holding& h, int t, int k, int rank) {
  const std::vector<int> coord = h.mesh.coords(rank);
  const Layout& l = h.home[static_cast<size_t>(t)];
  const std::vector<int64_t> at = planner::shard_offset(shape, l, h.mesh, coord);
  const Shape size = planner::local_shape(shape, l, h.mesh, coord);
  int64_t n = 1;
  for (int64_t d : size) n *= d;
  std::vector<float> out;
  for (int64_t i = 0; i < n; ++i) {
    int64_t rest = i, global = 0, stride = 1;
    std::vector<int64_t> idx(size.size());
    for (size_t d = size.size(); d-- > 0;) {
      idx[d] = rest % size[d];
      rest /= size[d];
    }
    for (size_t d = size.size(); d-- > 0;) {
      global += (idx[d] + at[d]) * stride;
      stride *= shape[d];
    }
    out.push_back(value(t, k, global));
  }
  return out;
}

Array to_array(const std::vector<float>& v, const Shape& shape, runtime::Backend& b) {
  Array a(DType::F32, shape, b.allocator(), runtime::MemoryKind::Parameters);
  b.write(a, v.data(), static_cast<int64_t>(v.size() * sizeof(float)));
  return a;
}

void check(const Array& a, const std::vector<float>& want, runtime::Backend& b, const std::string& what) {
  std::vector<float> have(static_cast<size_t>(a.numel()));
  b.read(a, have.data(), a.bytes());
  if (have != want) throw std::runtime_error(what + ": the shard differs from the slice");
}

void every_reshard(const std::vector<int>& from_shape, const std::vector<int>& to_shape) {
  CAPTURE(from_shape.size());
  CAPTURE(to_shape.size());
  const DeviceMesh from_mesh = DeviceMesh::with_shape(planner::load_cluster("cpu"), from_shape);
  const DeviceMesh to_mesh = DeviceMesh::with_shape(planner::load_cluster("cpu"), to_shape);
  const int world = std::max(from_mesh.size(), to_mesh.size());
  Graph g;
  g.tensors.resize(3);
  g.tensors[0].shape = {7, 5};
  g.tensors[1].shape = {3};
  g.tensors[2].shape = {};
  for (Tensor& x : g.tensors) x.dtype = DType::F32;
  test::TempDir dir;
  const auto results = test::run_children(world, [&](int rank) {
    comm::GlooOptions o;
    o.rank = rank;
    o.size = world;
    o.rendezvous = "file:" + dir.path;
    o.timeout = std::chrono::seconds(20);
    o.hostname = "127.0.0.1";
    auto c = comm::make_gloo_communicator(o);
    runtime::cpu::CpuBackend backend(1);
    const std::vector<Layout> matrix_from = layouts(2, from_mesh.ndim()), matrix_to = layouts(2, to_mesh.ndim());
    const std::vector<Layout> vector_from = layouts(1, from_mesh.ndim()), vector_to = layouts(1, to_mesh.ndim());
    for (size_t i = 0; i < matrix_from.size(); ++i)
      for (size_t j = 0; j < matrix_to.size(); ++j) {
        const elastic::Holding from{from_mesh, {matrix_from[i], vector_from[j % vector_from.size()], Layout::replicated(from_mesh.ndim())},
                                    from_mesh.size()};
        const elastic::Holding to{to_mesh, {matrix_to[j], vector_to[i % vector_to.size()], Layout::replicated(to_mesh.ndim())}, to_mesh.size()};
        const std::string what = matrix_from[i].str() + " -> " + matrix_to[j].str() + " on rank " + std::to_string(rank);
        runtime::LocalShards mine;
        if (rank < from.workers)
          for (int t = 0; t < 3; ++t) {
            const Shape& shape = g.tensors[static_cast<size_t>(t)].shape;
            const Shape local = planner::local_shape(shape, from.home[static_cast<size_t>(t)], from_mesh, from_mesh.coords(rank));
            mine.params[t] = to_array(slice(shape, from, t, 0, rank), local, backend);
            for (int k = 1; k <= 2; ++k) mine.slots[t].push_back(to_array(slice(shape, from, t, k, rank), local, backend));
          }
        const runtime::LocalShards got = elastic::reshard(*c, backend, g, from, to, mine);
        if (rank >= to.workers) {
          if (!got.params.empty()) throw std::runtime_error(what + ": a worker leaving received shards");
          continue;
        }
        for (int t = 0; t < 3; ++t) {
          const Shape& shape = g.tensors[static_cast<size_t>(t)].shape;
          check(got.params.at(t), slice(shape, to, t, 0, rank), backend, what + " tensor " + std::to_string(t));
          for (int k = 1; k <= 2; ++k) check(got.slots.at(t).at(static_cast<size_t>(k - 1)), slice(shape, to, t, k, rank), backend, what + " slot");
        }
      }
  }, std::chrono::seconds(120));
  for (size_t r = 0; r < results.size(); ++r) {
    CAPTURE(r);
    CHECK(results[r].message == "ok");
  }
}

TEST_CASE("elastic reshard: every layout pair growing 2 -> [2,2] and 1 -> 3, shrinking [2,2] -> 3 and 3 -> 1") {
  every_reshard({2}, {2, 2});
  every_reshard({1}, {3});
  every_reshard({2, 2}, {3});
  every_reshard({3}, {1});
}

}  // namespace
}  // namespace tensoropt
