// The plan-to-runtime contract (planner/parallel/sharding_plan.h): layouts read back from their
// names, the ceil rule's offsets, and every frontier point's sharding read from a plan file equal
// to what the strategy space gives, so that `run --plan` needs no search.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "graph/error.h"
#include "graph/import.h"
#include "planner/parallel/cluster.h"
#include "planner/plan.h"
#include "planner/plan_file.h"
#include "planner/sharding.h"

namespace tensoropt::planner {
namespace {

std::string fixture(const std::string& name) { return std::string(TENSOROPT_SOURCE_DIR) + "/" + name; }

std::string temp_file(const std::string& name) { return (std::filesystem::temp_directory_path() / name).string(); }

}  // namespace

TEST_CASE("sharding: parse_layout reads back every Layout::str() and refuses anything else") {
  for (const Layout& l : {Layout({}), Layout{Placement::replicate()}, Layout{Placement::partial()}, Layout{Placement::shard(0)},
                          Layout{Placement::shard(12), Placement::replicate()}, Layout{Placement::partial(), Placement::shard(3)}}) {
    CAPTURE(l.str());
    const std::optional<Layout> back = parse_layout(l.str());
    REQUIRE(back);
    CHECK(*back == l);
  }
  for (const char* bad : {"", "[", "R", "[S]", "[S()]", "[S(x)]", "[R,]", "[,R]", "[Q]", "[S(0)R]", "[R] ", "[S(123456789)]"}) {
    CAPTURE(bad);
    CHECK_FALSE(parse_layout(bad));
  }
}

TEST_CASE("sharding: chunk_offset and shard_offset follow the ceil rule, nested in mesh-axis order") {
  // 10 split four ways: 3, 3, 3, 1 from 0, 3, 6, 9; 2 split four ways: 1, 1, 0, 0 from 0, 1, 2, 2.
  CHECK(chunk_offset(10, 4, 0) == 0);
  CHECK(chunk_offset(10, 4, 3) == 9);
  CHECK(chunk_offset(2, 4, 2) == 2);
  CHECK(chunk_offset(2, 4, 3) == 2);
  const DeviceMesh mesh = DeviceMesh::with_shape(load_cluster("h100-sxm"), {2, 2});
  // Axis 0 splits dim 0 (10 -> 5, 5), axis 1 splits that chunk again (5 -> 3, 2).
  const Layout both{Placement::shard(0), Placement::shard(0)};
  CHECK(shard_offset({10, 7}, both, mesh, {0, 0}) == std::vector<int64_t>{0, 0});
  CHECK(shard_offset({10, 7}, both, mesh, {0, 1}) == std::vector<int64_t>{3, 0});
  CHECK(shard_offset({10, 7}, both, mesh, {1, 0}) == std::vector<int64_t>{5, 0});
  CHECK(shard_offset({10, 7}, both, mesh, {1, 1}) == std::vector<int64_t>{8, 0});
  const Layout cross{Placement::shard(1), Placement::partial()};
  CHECK(shard_offset({10, 7}, cross, mesh, {1, 1}) == std::vector<int64_t>{0, 4});
}

TEST_CASE("sharding: every frontier point's sharding, read back from the plan file, is the space's") {
  for (const auto& [model, gpus] : {std::pair{"tests/fixtures/user_exports/gpt_train_inline_b4.onnx", 4},
                                    std::pair{"models/resnet18.onnx", 8}}) {
    CAPTURE(model);
    const Cluster cluster = load_cluster("h100-sxm");
    Graph g = import_onnx_file(fixture(model), {.batch = 8});
    AnalyticCompute compute(cluster, Precision::Fp32);
    PlanSettings settings;
    settings.model_path = fixture(model);
    settings.model_hash = file_hash(settings.model_path);
    settings.batch = 8;
    settings.cluster = cluster;
    std::vector<GpuPlan> plans(1);
    plans[0].frontier = plan_frontier(g, cluster, gpus, compute, PlanOptions{});
    const GpuFrontier& f = plans[0].frontier;
    REQUIRE(f.points.size() > 1);
    const std::string path = temp_file("tensoropt_test_sharding.json");
    {
      std::ofstream out(path);
      write_plan_json(out, settings, g, plans);
    }
    // Each read parses the whole plan file: about 40 points spread evenly over the frontier, both
    // ends among them, are read back.
    int meshes_seen = 0, prev_mesh = -1;
    std::vector<size_t> read;
    const size_t stride = std::max<size_t>(1, f.points.size() / 40);
    for (size_t k = 0; k < f.points.size(); k += stride) read.push_back(k);
    if (read.back() != f.points.size() - 1) read.push_back(f.points.size() - 1);
    for (const size_t k : read) {
      CAPTURE(k);
      const StoredStrategy stored = read_strategy(path, gpus, static_cast<int>(k));
      REQUIRE(stored.sharding);
      const StrategySpace& space = *f.spaces[static_cast<size_t>(f.points[k].mesh)];
      CHECK(*stored.sharding == sharding_table(space));
      const ShardingPlan want = sharding_plan(space, f.points[k].assignment);
      CHECK(resolve_sharding(*stored.sharding, g, stored.indices, stored.where) == want);
      if (f.points[k].mesh != prev_mesh) ++meshes_seen;
      prev_mesh = f.points[k].mesh;
    }
    CHECK(meshes_seen >= 1);
    std::filesystem::remove(path);
  }
}

TEST_CASE("sharding: a table that does not fit the model is refused in one line, naming where") {
  Graph g = import_onnx_file(fixture("models/resnet18.onnx"), {.batch = 8});
  const Cluster cluster = load_cluster("h100-sxm");
  AnalyticCompute compute(cluster, Precision::Fp32);
  StrategySpace space(g, DeviceMesh::with_shape(cluster, {2}), compute, SpaceOptions{});
  const ShardingTable table = sharding_table(space);
  std::vector<int> a(space.variables().size(), 0);
  CHECK(resolve_sharding(table, g, a, "t") == sharding_plan(space, a));
  a.pop_back();
  CHECK_THROWS_WITH_AS(resolve_sharding(table, g, a, "plan.json, 2 GPUs, point 0"), doctest::Contains("plan.json, 2 GPUs, point 0"),
                       InputError);
  a.push_back(99);
  CHECK_THROWS_WITH_AS(resolve_sharding(table, g, a, "p"), doctest::Contains("out of range"), InputError);
  ShardingTable wide = table;
  wide.mesh_axes = 2;  // layouts of one placement on a mesh of two axes
  CHECK_THROWS_WITH_AS(resolve_sharding(wide, g, std::vector<int>(a.size(), 0), "p"), doctest::Contains("placements"), InputError);
  ShardingTable other = table;
  other.variables[0].node = static_cast<int>(g.nodes.size()) + 5;
  CHECK_THROWS_WITH_AS(resolve_sharding(other, g, std::vector<int>(a.size(), 0), "p"), doctest::Contains("no node or tensor"), InputError);
}

}  // namespace tensoropt::planner
