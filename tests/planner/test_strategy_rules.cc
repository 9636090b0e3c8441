// Rules to configurations (planner/strategy_rules.h) on a 2 x 2 mesh, where one spec per mesh axis
// matters: per-axis lists, first match wins, "follow" for parameters and tensors, and the checks
// that keep a rule from being silently ignored. GPT fixture at batch 4.
#include <doctest/doctest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "graph/error.h"
#include "graph/import.h"
#include "planner/compute_model.h"
#include "planner/parallel/cluster.h"
#include "planner/strategy_rules.h"

namespace tensoropt::planner {
namespace {

struct Gpt {
  Graph graph;
  Cluster cluster = load_cluster("h100-sxm");
  AnalyticCompute compute{cluster, Precision::Fp32};
  StrategySpace space;
  static Graph imported() {
    ImportOptions io;
    io.batch = 4;
    return import_onnx_file(std::string(TENSOROPT_SOURCE_DIR) + "/tests/fixtures/runtime/gpt.onnx", io);
  }
  static SpaceOptions options() {
    SpaceOptions so;
    so.recompute_all = true;
    return so;
  }
  Gpt() : graph(imported()), space(graph, DeviceMesh::with_shape(cluster, {2, 2}), compute, options()) {}

  std::vector<int> resolve(const std::string& rules) const {
    return resolve_rules(parse_strategy_rules(nlohmann::ordered_json::parse(rules), "r.json"), space);
  }
  std::string config(const std::vector<int>& a, const std::string& var) const {
    const int v = space.find_variable(var);
    REQUIRE(v >= 0);
    return space.variables()[static_cast<size_t>(v)].configs[static_cast<size_t>(a[static_cast<size_t>(v)])].name;
  }
};

}  // namespace

TEST_CASE("strategy rules: one spec per mesh axis, first match wins, parameters and tensors follow their ops") {
  const Gpt g;
  const std::vector<int> a = g.resolve(R"({"rules": [
      {"match": "/blocks.0/MatMul", "split": ["batch", {"axis": 1}], "recompute": true},
      {"op": "MatMul", "match": "/blocks.?/MatMul*", "split": ["replicate", {"dim": "b1"}]},
      {"reads": "blocks.0.fc.weight", "split": ["batch", {"weight_axis": 0}]},
      {"kind": "param", "match": "blocks.1.fc.weight", "split": [{"axis": 1}, "replicate"], "zero": 2}],
    "default": "batch"})");
  REQUIRE(a.size() == g.space.variables().size());
  CHECK(g.config(a, "op:/blocks.0/MatMul") == "b0:S0 b1:S1 recompute");
  CHECK(g.config(a, "op:/blocks.1/MatMul") == "b1:S1");  // the first rule is not /blocks.1/...
  CHECK(g.config(a, "op:/blocks.0/MatMul_1") == "b1:S1");
  // [128,32] -> [32,128]: a Transpose's dims are its output's, so weight axis 0 is output axis 1, d1.
  CHECK(g.config(a, "op:/blocks.0/fc/Transpose") == "d1:S1");
  CHECK(g.config(a, "op:/blocks.0/ln1/LayerNormalization") == "d0:S01");  // "batch" on both axes
  // A parameter follows its first reader; a rule gives one its own layout and ZeRO-2.
  CHECK(g.config(a, "param:blocks.0.fc.weight") == "[R,S(0)]");
  CHECK(g.config(a, "param:blocks.1.fc.weight") == "[S(1),R] zero-2");
  // A tensor read twice follows its producer's output layout.
  for (size_t v = 0; v < a.size(); ++v) {
    const Variable& var = g.space.variables()[v];
    if (var.kind != VarKind::Tensor) continue;
    const int producer = g.graph.tensors[static_cast<size_t>(var.tensor)].producer;
    const Variable& op = g.space.variables()[static_cast<size_t>(producer)];
    const OpConfig& oc = op.op_configs[static_cast<size_t>(op.configs[static_cast<size_t>(a[static_cast<size_t>(producer)])].op_config)];
    const auto& outs = g.graph.nodes[static_cast<size_t>(producer)].outputs;
    const size_t slot = static_cast<size_t>(std::find(outs.begin(), outs.end(), var.tensor) - outs.begin());
    CAPTURE(var.name);
    CHECK(var.configs[static_cast<size_t>(a[v])].layout == oc.outputs[slot]);
  }
}

TEST_CASE("strategy rules: a split list of the wrong length, follow on an op, a weight_axis on an op without weights are refused") {
  const Gpt g;
  CHECK_THROWS_WITH_AS(g.resolve(R"({"default": ["batch", "batch", "batch"]})"), doctest::Contains("mesh [2 intra, 2 intra] has 2 axes"), InputError);
  CHECK_THROWS_WITH_AS(g.resolve(R"({"rules": [{"split": "follow"}], "default": "batch"})"), doctest::Contains("not ops"), InputError);
  CHECK_THROWS_WITH_AS(g.resolve(R"({"rules": [{"match": "/blocks.0/MatMul", "split": {"weight_axis": 0}}], "default": "batch"})"),
                       doctest::Contains("node '/blocks.0/MatMul' (MatMul) reads no parameter"), InputError);
  CHECK_THROWS_WITH_AS(g.resolve(R"({"rules": [{"kind": "param", "match": "wte.weight", "split": {"axis": 2}}], "default": "batch"})"),
                       doctest::Contains("parameter 'wte.weight' has no axis 2"), InputError);
}

}  // namespace tensoropt::planner
