// Strategy summaries name every kind of split a point uses, and a data-parallel baseline says
// where it cannot be what its name says.
#include <doctest/doctest.h>

#include "graph/import.h"
#include "planner/baselines.h"
#include "planner/strategy_summary.h"
#include "tests/onnx_builder.h"

namespace tensoropt::planner {
namespace {

std::string fixture(const std::string& name) { return std::string(TENSOROPT_SOURCE_DIR) + "/" + name; }

const Baseline& named(const std::vector<Baseline>& all, const std::string& name) {
  for (const Baseline& b : all)
    if (b.name == name) return b;
  FAIL("no baseline " << name);
  throw;
}

}  // namespace

TEST_CASE("strategy summary: a data-parallel point that splits one convolution over channels says TP too") {
  Graph g = import_onnx_file(fixture("models/resnet18.onnx"), {.batch = 8});
  const Cluster c = load_cluster("h100-sxm");
  AnalyticCompute compute(c, Precision::Fp32);
  const std::vector<Baseline> all = find_baselines(g, c, 2, compute, PlanOptions{});
  const Baseline& dp = named(all, "data parallel");
  CHECK(summarize_strategy(*dp.space, dp.assignment) == "DP2");
  // The same point with the largest convolution split over its output channels instead.
  std::vector<int> assignment = dp.assignment;
  const auto& vars = dp.space->variables();
  int conv = -1;
  double most = 0;
  for (size_t i = 0; i < vars.size(); ++i) {
    if (vars[i].kind != VarKind::Op || g.nodes[static_cast<size_t>(vars[i].node)].op_type != "Conv") continue;
    const double flops = dp.space->node_costs()[static_cast<size_t>(vars[i].node)].fwd_flops;
    if (flops > most) most = flops, conv = static_cast<int>(i);
  }
  REQUIRE(conv >= 0);
  const Variable& v = vars[static_cast<size_t>(conv)];
  int tp = -1;
  for (size_t k = 0; k < v.configs.size() && tp < 0; ++k) {
    const OpConfig& oc = v.op_configs[static_cast<size_t>(v.configs[k].op_config)];
    if (!v.configs[k].recompute && oc.axis_dim[0] >= 0 && !is_batch(v, oc.axis_dim[0])) tp = static_cast<int>(k);
  }
  REQUIRE(tp >= 0);
  assignment[static_cast<size_t>(conv)] = tp;
  const std::string s = summarize_strategy(*dp.space, assignment);
  CAPTURE(s);
  CHECK(s.rfind("DP2 (TP ", 0) == 0);
  CHECK(s.find("%)") != std::string::npos);
}

TEST_CASE("baselines: data parallel names the ops whose batch the space cannot split, and only those") {
  const Cluster c = load_cluster("h100-sxm");
  AnalyticCompute compute(c, Precision::Fp32);
  // A product over T*B rows whose result is not shaped back to [T, B, N] (so graph/unmerge_batch.h
  // leaves it): the batch is an inner factor of its rows, which no layout splits as the batch.
  test::ModelBuilder b;
  b.input("x", {-1, 3, 4}).floats("w", {5, 4}).ints("flat", {3 * 8, 4})
      .node("Transpose", {"x"}, {"seq"}).attr("perm", std::vector<int64_t>{1, 0, 2})
      .node("Reshape", {"seq", "flat"}, {"rows"})
      .node("Gemm", {"rows", "w"}, {"proj"}, "out_proj").attr("transB", 1)
      .output("proj");
  Graph rows = import_onnx_bytes(b.bytes(), "rows.onnx", {.batch = 8});
  const std::vector<Baseline> rb = find_baselines(rows, c, 2, compute, PlanOptions{});
  const std::string caveat = named(rb, "data parallel").caveat;
  CAPTURE(caveat);
  CHECK(caveat.find("1 op with no batch axis the planner can split ('out_proj'") == 0);
  CHECK(caveat.find("real DDP splits") != std::string::npos);
  CHECK(named(rb, "ZeRO-2").caveat == caveat);
  // torchvision's ViT runs attention sequence-first; its output projection, unmerged on import,
  // splits the batch like every other op. So does a GPT of batch-first ops.
  for (const char* model : {"tests/fixtures/user_exports/vit_small_train_inline_b4.onnx", "tests/fixtures/models/gpt_gelu_tanh.onnx"}) {
    CAPTURE(model);
    Graph g = import_onnx_file(fixture(model), {.batch = 8});
    CHECK(named(find_baselines(g, c, 2, compute, PlanOptions{}), "data parallel").caveat.empty());
  }
}

}  // namespace tensoropt::planner
