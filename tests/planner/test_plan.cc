// The plan over every candidate mesh (plan_frontier): pure data parallelism is in the space and
// the merged frontier dominates it, on every model.
#include <doctest/doctest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "graph/import.h"
#include "planner/baselines.h"
#include "planner/plan.h"

namespace tensoropt::planner {
namespace {

const Cluster kH100 = load_cluster("h100-sxm");

std::string fixture(const std::string& name) { return std::string(TENSOROPT_SOURCE_DIR) + "/" + name; }

}  // namespace

TEST_CASE("strategy space: pure data parallelism is in the space and the frontier dominates it, every model") {
  std::vector<std::string> models = {"models/resnet18.onnx", "models/resnet50.onnx", "models/vgg16.onnx",
                                     "models/vit_b_16.onnx", "models/bert_base.onnx", "models/gpt2_small.onnx"};
  std::ifstream mf(fixture("tests/fixtures/models/manifest.json"));
  nlohmann::json manifest = nlohmann::json::parse(mf);
  for (auto it = manifest.begin(); it != manifest.end(); ++it) {
    if (it.value().contains("expect_error")) continue;
    models.push_back("tests/fixtures/models/" + it.key() + ".onnx");
  }
  for (const std::string& m : models) {
    CAPTURE(m);
    Graph g = import_onnx_file(fixture(m), {.batch = 8});
    AnalyticCompute compute(kH100, Precision::Fp32);
    PlanOptions o;
    o.max_mesh_axes = 1;
    GpuFrontier f = plan_frontier(g, kH100, 2, compute, o);
    const StrategySpace& space = *f.spaces.at(0);
    std::vector<std::vector<int>> allowed(space.variables().size());
    for (size_t v = 0; v < allowed.size(); ++v) {
      const Variable& var = space.variables()[v];
      for (size_t k = 0; k < var.configs.size(); ++k) {
        const VarConfig& c = var.configs[k];
        bool ok = var.kind != VarKind::Op || (!c.recompute && data_parallel(var, var.op_configs[static_cast<size_t>(c.op_config)]));
        if (var.kind == VarKind::Parameter) ok = c.zero == 0;
        if (ok) allowed[v].push_back(static_cast<int>(k));
      }
      REQUIRE(!allowed[v].empty());
    }
    auto dp = fastest_restricted(space, allowed);
    REQUIRE(dp);
    Cost cost = space.cost(*dp);
    bool dominated = false;
    for (const PlanPoint& p : f.points) dominated = dominated || weakly_dominates(p.cost, cost);
    CHECK(dominated);
  }
}

}  // namespace tensoropt::planner
