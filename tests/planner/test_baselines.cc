// The baselines (find_baselines): data parallel and ZeRO-2 store every parameter whole.
#include <doctest/doctest.h>

#include "graph/import.h"
#include "planner/baselines.h"

namespace tensoropt::planner {
namespace {

std::string fixture(const std::string& name) { return std::string(TENSOROPT_SOURCE_DIR) + "/" + name; }

}  // namespace

TEST_CASE("baselines: data parallel and ZeRO-2 store every parameter whole on every device, as DDP does") {
  // Storing a weight split and gathering it at each use is cheaper for the analytic model on the
  // cpu cluster: a baseline named data parallel must not drift into it (the DDP benchmark runs it).
  int checked = 0;
  for (const char* name : {"tests/fixtures/models/gpt_gelu_tanh.onnx", "tests/fixtures/models/llama_tiny.onnx", "models/resnet18.onnx"}) {
    Graph g = import_onnx_file(fixture(name), {.batch = 8});
    for (const char* cluster : {"cpu", "h100-sxm"}) {
      const Cluster c = load_cluster(cluster);
      AnalyticCompute compute(c, Precision::Fp32);
      for (const Baseline& b : find_baselines(g, c, 2, compute, PlanOptions{})) {
        if (b.name != "data parallel" && b.name != "ZeRO-2") continue;
        CAPTURE(name);
        CAPTURE(cluster);
        CAPTURE(b.name);
        for (size_t v = 0; v < b.space->variables().size(); ++v) {
          const Variable& var = b.space->variables()[v];
          if (var.kind != VarKind::Parameter) continue;
          const VarConfig& config = var.configs[static_cast<size_t>(b.assignment[v])];
          CAPTURE(var.name);
          for (int a = 0; a < config.layout.size(); ++a) CHECK(config.layout[a].is_replicate());
          ++checked;
        }
      }
    }
  }
  CHECK(checked > 100);
}

}  // namespace tensoropt::planner
