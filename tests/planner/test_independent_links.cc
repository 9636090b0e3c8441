// The Problem FT solves on each mesh (MeshSlot::problem): the space's, with the links one side
// does not see folded into the other side's costs. A small weight that every layer reads (stored
// whole: only its ZeRO choice is a choice, which its readers never see) then joins no layers: the
// search is as narrow as without the sharing, and FT's frontier is the one it finds on the space
// as built (the same summed costs; which of several strategies of equal sums it keeps may differ,
// so the planner folds only where the fold narrows the order: planner/search/mesh_slot.h).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "graph/import.h"
#include "planner/ft/elimination_order.h"
#include "planner/ft/ft.h"
#include "planner/plan.h"
#include "tests/onnx_builder.h"

namespace tensoropt::planner {

namespace {

// Every point of `a` weakly dominated by one of `b`, up to rounding (relative 1e-12).
bool covered(const std::vector<FrontierPoint>& a, const std::vector<FrontierPoint>& b) {
  for (const FrontierPoint& p : a) {
    bool found = false;
    for (const FrontierPoint& q : b)
      found = found || (q.cost.time <= p.cost.time * (1 + 1e-12) && q.cost.memory <= p.cost.memory * (1 + 1e-12));
    if (!found) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("plan: a small weight every layer reads does not widen the search, and FT's frontier is unchanged") {
  // Six layers of MatMul, + one shared bias, Relu.
  test::ModelBuilder b;
  b.input("x", {-1, 64}).floats("bias", {64}, 0.0f);
  std::string h = "x";
  for (int i = 0; i < 6; ++i) {
    const std::string n = std::to_string(i);
    b.floats("w" + n, {64, 64}, 0.01f);
    b.node("MatMul", {h, "w" + n}, {"m" + n}).node("Add", {"m" + n, "bias"}, {"a" + n}).node("Relu", {"a" + n}, {"r" + n});
    h = "r" + n;
  }
  b.output(h);
  const Graph g = import_onnx_bytes(b.bytes(), "shared_bias.onnx", {.batch = 16});
  const Cluster cluster = load_cluster("h100-sxm");
  AnalyticCompute compute(cluster, Precision::Fp32);
  PlanOptions o;
  o.space.param_persistence = 100000;  // plan's default: the bias is stored whole
  const GpuFrontier f = plan_frontier(g, cluster, 4, compute, o);
  REQUIRE(f.meshes.size() == f.spaces.size());
  int narrower = 0;
  for (size_t m = 0; m < f.spaces.size(); ++m) {
    CAPTURE(f.meshes[m].mesh);
    CHECK(f.meshes[m].approximation.empty());
    StrategySpace plain(g, f.spaces[m]->mesh(), compute, o.space);
    const int plain_width = greedy_elimination_order(plain.problem()).width;
    CHECK(f.meshes[m].ft.width <= 2);
    narrower += f.meshes[m].ft.width < plain_width;
    // FT's frontier (the summed costs it is exact for) is the same on the folded Problem.
    const FtResult as_built = solve_ft(plain.problem());
    const FtResult folded = solve_ft(fold_independent_edges(plain.problem()));
    CHECK(covered(as_built.points, folded.points));
    CHECK(covered(folded.points, as_built.points));
  }
  CHECK(narrower > 0);  // the bias's ZeRO choice joined the layers where there is one
}


TEST_CASE("fold_independent_edges: FT finds the same frontier on real models' spaces, folded or not") {
  const Cluster cluster = load_cluster("h100-sxm");
  AnalyticCompute compute(cluster, Precision::Fp32);
  SpaceOptions so;
  so.param_persistence = 100000;
  int folded = 0;
  for (const char* model : {"models/gpt2_small.onnx", "tests/fixtures/models/llama_tiny.onnx", "tests/fixtures/models/resnet18_eval.onnx"}) {
    const Graph g = import_onnx_file(std::string(TENSOROPT_SOURCE_DIR) + "/" + model, {.batch = 8});
    for (const DeviceMesh& mesh : candidate_meshes(cluster, 4, 2)) {
      CAPTURE(model);
      CAPTURE(mesh.str());
      const StrategySpace space(g, mesh, compute, so);
      const Problem f = fold_independent_edges(space.problem());
      folded += f.edges.size() < space.problem().edges.size();
      const EliminationOrder order = greedy_elimination_order(space.problem());
      if (!(order.width <= 3)) continue;  // the wide-region fallback's case, tested apart
      const FtResult plain = solve_ft(space.problem());
      const FtResult fast = solve_ft(f);
      CHECK(covered(plain.points, fast.points));
      CHECK(covered(fast.points, plain.points));
      CHECK(fast.stats.width <= plain.stats.width);
    }
  }
  CHECK(folded > 0);
}

}  // namespace tensoropt::planner
