// Every op of the catalogue has a CPU kernel and at least one kernel case (kernel_check.h), except
// the ops import always folds (Constant, Shape, Size: their values are known at import).
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "graph/error.h"
#include "graph/import.h"
#include "graph/op_catalogue.h"
#include "graph/summary.h"
#include "launcher/runtime/cpu/backend.h"
#include "tests/launcher/runtime/kernel_check.h"

namespace tensoropt::test {

TEST_CASE("kernels: every catalogue op has a CPU kernel and a kernel case") {
  std::set<std::string> covered;
  for (auto family : {elementwise_cases, linear_cases, pool_cases, norm_cases, movement_cases, resample_cases, shape_cases}) {
    for (const KernelCase& c : family()) covered.insert(c.op);
  }
  const std::set<std::string> folded = {"Constant", "Shape", "Size"};
  runtime::cpu::CpuBackend backend;
  std::string missing_kernel, missing_case;
  for (const OpDef& d : all_ops()) {
    if (folded.count(d.type)) continue;
    if (!backend.kernel(d.type)) missing_kernel += " " + d.type;
    if (!covered.count(d.type)) missing_case += " " + d.type;
  }
  CHECK_MESSAGE(missing_kernel.empty(), "no CPU kernel:" << missing_kernel);
  CHECK_MESSAGE(missing_case.empty(), "no kernel case:" << missing_case);
}

// The step schedule (graph/step_schedule.h) decides from the catalogue which inputs take a
// gradient; on every shipped model and fixture, a node whose inputs can take one must have a
// kernel with a backward.
TEST_CASE("kernels: every node the catalogue gives an input gradient has a CPU backward, on every shipped model") {
  runtime::cpu::CpuBackend backend;
  int nodes = 0;
  for (const char* dir : {"models", "tests/fixtures/models", "tests/fixtures/user_exports"}) {
    for (const auto& entry : std::filesystem::directory_iterator(std::string(TENSOROPT_SOURCE_DIR) + "/" + dir)) {
      if (entry.path().extension() != ".onnx") continue;
      Graph g;
      try {
        g = import_onnx_file(entry.path().string(), {.batch = 2});
      } catch (const InputError&) {
        continue;  // fixtures of refusals
      }
      const std::vector<NodeCost> costs = node_costs(g);
      for (size_t i = 0; i < g.nodes.size(); ++i) {
        const bool some = std::find(costs[i].input_grad.begin(), costs[i].input_grad.end(), true) != costs[i].input_grad.end();
        const runtime::OpKernel* k = backend.kernel(g.nodes[i].op_type);
        if (!some || !k) continue;
        ++nodes;
        CHECK_MESSAGE(static_cast<bool>(k->backward), entry.path().filename().string() << ": " << g.nodes[i].label());
      }
    }
  }
  CHECK(nodes > 1000);
}

}  // namespace tensoropt::test
