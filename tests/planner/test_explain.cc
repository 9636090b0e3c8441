// evaluate --by-layer's rows (planner/explain.h): every node in one row, the rows' terms summing to
// the strategy's breakdown, term by term, for random strategies and frontier points alike.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <set>

#include "graph/import.h"
#include "planner/explain.h"
#include "planner/plan.h"

namespace tensoropt::planner {

TEST_CASE("explain: layers are the name up to the layer index, or its first part") {
  CHECK(layer_of("/h.0/attn/MatMul") == "h.0");
  CHECK(layer_of("/encoder/layers.3/self_attn/Gemm") == "encoder/layers.3");
  CHECK(layer_of("/layer1/layer1.0/conv1/Conv") == "layer1/layer1.0");
  CHECK(layer_of("/wte/Gather") == "wte");
  CHECK(layer_of("/Add") == "/Add");
  CHECK(layer_of("fc") == "fc");
}

TEST_CASE("explain: every node is in one row, and the rows sum to the breakdown term by term") {
  const Cluster c = load_cluster("h100-sxm");
  AnalyticCompute compute(c, Precision::Fp32);
  std::mt19937_64 rng(5);
  int checked = 0;
  for (const char* model : {"tests/fixtures/runtime/gpt.onnx", "models/resnet18.onnx", "tests/fixtures/runtime/vit.onnx"}) {
    CAPTURE(model);
    Graph g = import_onnx_file(std::string(TENSOROPT_SOURCE_DIR) + "/" + model, {.batch = 8});
    const GpuFrontier f = plan_frontier(g, c, 4, compute, PlanOptions{});
    REQUIRE(!f.points.empty());
    for (size_t m = 0; m < f.spaces.size(); ++m) {
      const StrategySpace& space = *f.spaces[m];
      std::vector<std::vector<int>> strategies;
      for (const PlanPoint& p : f.points)
        if (p.mesh == static_cast<int>(m)) strategies.push_back(p.assignment);
      for (int r = 0; r < 5; ++r) {
        std::vector<int> a;
        for (const Variable& v : space.variables()) a.push_back(static_cast<int>(rng() % v.configs.size()));
        strategies.push_back(a);
      }
      for (const std::vector<int>& a : strategies) {
        for (bool by_node : {false, true}) {
          const Explanation x = explain(space, a, by_node);
          std::multiset<int> nodes;
          for (const ExplainRow& row : x.rows) nodes.insert(row.nodes.begin(), row.nodes.end());
          REQUIRE(nodes.size() == g.nodes.size());
          REQUIRE(std::set<int>(nodes.begin(), nodes.end()).size() == g.nodes.size());
          if (by_node) CHECK(x.rows.size() == g.nodes.size());
          const Breakdown want = space.breakdown(a);
          for (int t = 0; t < kTerms; ++t) {
            const Term term = static_cast<Term>(t);
            CAPTURE(term_name(term));
            CHECK(std::abs(x.total[term] - want[term]) <= 1e-9 * std::max(1.0, std::abs(want[term])));
          }
          const Cost cost = space.cost(a);
          CHECK(x.total.time() == doctest::Approx(cost.time).epsilon(1e-12));
          CHECK(x.total.memory() == doctest::Approx(cost.memory).epsilon(1e-12));
          ++checked;
        }
      }
    }
  }
  CHECK(checked > 50);
}

}  // namespace tensoropt::planner
