// DeviceMesh: shapes per device count, link levels per axis, coordinates, groups, factorizations.
#include <doctest/doctest.h>

#include "graph/error.h"
#include "planner/parallel/cluster.h"
#include "planner/parallel/mesh.h"

namespace tensoropt::planner {
namespace {

const Cluster& h100() {
  static const Cluster c = load_cluster("h100-sxm");
  return c;
}

TEST_CASE("mesh: one node is one intra-node axis") {
  auto m = DeviceMesh::for_cluster(h100(), 8);
  CHECK(m.str() == "[8 intra]");
  CHECK(m.axis(0).link.bandwidth == h100().intra_node.bandwidth);
  CHECK(DeviceMesh::for_cluster(h100(), 3).str() == "[3 intra]");
  CHECK(DeviceMesh::for_cluster(h100(), 1).str() == "[1 intra]");
}

TEST_CASE("mesh: whole nodes are [nodes, gpus_per_node]") {
  auto m = DeviceMesh::for_cluster(h100(), 16);
  CHECK(m.str() == "[2 inter, 8 intra]");
  CHECK(m.axis(0).link.bandwidth == h100().inter_node.bandwidth);
  CHECK(m.axis(1).link.latency == h100().intra_node.latency);
  CHECK(DeviceMesh::for_cluster(h100(), 64).shape() == std::vector<int>{8, 8});
}

TEST_CASE("mesh: a partial node is one flat inter-node axis") {
  auto m = DeviceMesh::for_cluster(h100(), 12);
  CHECK(m.str() == "[12 inter]");
  CHECK(m.axis(0).link.bandwidth == h100().inter_node.bandwidth);
}

TEST_CASE("mesh: coordinates round-trip, row-major") {
  for (const auto& shape : {std::vector<int>{2, 4}, std::vector<int>{4, 2}, std::vector<int>{2, 3, 4}, std::vector<int>{5}}) {
    auto m = DeviceMesh::with_shape(h100(), shape);
    for (int r = 0; r < m.size(); ++r) CHECK(m.rank(m.coords(r)) == r);
  }
  auto m = DeviceMesh::with_shape(h100(), {2, 3, 4});
  CHECK(m.coords(23) == std::vector<int>{1, 2, 3});
  CHECK(m.coords(5) == std::vector<int>{0, 1, 1});
}

TEST_CASE("mesh: groups along each axis of [2,4], by hand") {
  auto m = DeviceMesh::with_shape(h100(), {2, 4});
  CHECK(m.group(0, 1) == std::vector<int>{0, 1, 2, 3});
  CHECK(m.group(6, 1) == std::vector<int>{4, 5, 6, 7});
  CHECK(m.group(0, 0) == std::vector<int>{0, 4});
  CHECK(m.group(6, 0) == std::vector<int>{2, 6});
  CHECK(m.group(7, 0) == std::vector<int>{3, 7});
  CHECK(m.str() == "[2 intra, 4 intra]");  // 8 GPUs: one node
}

TEST_CASE("mesh: link level of an axis follows whether its groups cross nodes") {
  CHECK(DeviceMesh::with_shape(h100(), {4, 4}).str() == "[4 inter, 4 intra]");
  CHECK(DeviceMesh::with_shape(h100(), {8, 2}).str() == "[8 inter, 2 intra]");
  CHECK(DeviceMesh::with_shape(h100(), {3, 4}).str() == "[3 inter, 4 intra]");  // 12 GPUs: 0-7 and 8-11
  CHECK(DeviceMesh::with_shape(h100(), {4, 3}).str() == "[4 inter, 3 inter]");  // {6,7,8} crosses
  CHECK(DeviceMesh::with_shape(h100(), {2, 3}).str() == "[2 intra, 3 intra]");  // 6 GPUs, one node
  CHECK(DeviceMesh::with_shape(h100(), {2, 2, 4}).str() == "[2 inter, 2 intra, 4 intra]");
}

TEST_CASE("mesh: factorizations of 8 and 16") {
  auto f = DeviceMesh::for_cluster(h100(), 8).factorizations();
  std::vector<std::string> s;
  for (const auto& m : f) s.push_back(m.str());
  CHECK(s == std::vector<std::string>{"[8 intra]", "[2 intra, 4 intra]", "[4 intra, 2 intra]", "[2 intra, 2 intra, 2 intra]"});
  auto g = DeviceMesh::for_cluster(h100(), 16).factorizations(2);
  s.clear();
  for (const auto& m : g) s.push_back(m.str());
  CHECK(s == std::vector<std::string>{"[16 inter]", "[2 inter, 8 intra]", "[4 inter, 4 intra]", "[8 inter, 2 intra]"});
  CHECK(DeviceMesh::for_cluster(h100(), 1).factorizations().size() == 1);
  CHECK(DeviceMesh::for_cluster(h100(), 7).factorizations().size() == 1);  // prime
  for (const auto& m : DeviceMesh::for_cluster(h100(), 64).factorizations()) CHECK(m.size() == 64);
}

TEST_CASE("mesh: bad sizes are refused") {
  CHECK_THROWS_AS(DeviceMesh::for_cluster(h100(), 0), InputError);
  CHECK_THROWS_AS(DeviceMesh::with_shape(h100(), {2, 0}), InputError);
  CHECK_THROWS_AS(DeviceMesh::with_shape(h100(), {}), InputError);
}

}  // namespace
}  // namespace tensoropt::planner
