// The planner's relaxation (planner/search/restricted.h "Slow regions", planner/ft/relax.h) on a
// model whose encoder output every decoder layer reads: with a work budget the exact search
// passes, the meshes with that hub are relaxed; every point is a real strategy costed as the
// space costs it, and the exact frontier lies within the stated epsilon of the relaxed one.
#include <doctest/doctest.h>

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "graph/import.h"
#include "planner/plan.h"
#include "planner/ft/elimination_order.h"
#include "planner/ft/relax.h"
#include "planner/search/restricted.h"
#include "tests/onnx_builder.h"
#include "tests/planner/ft/random_problems.h"

namespace tensoropt::planner {

namespace {

// x -> encoder (MatMul, Relu, MatMul) -> e; a decoder chain of `layers` layers, each adding a
// projection of e (through 8 or 4096 hidden units, so that readers want e laid out differently)
// to its own MatMul: e is read by every layer, a hub.
Graph encoder_decoder(int layers) {
  tensoropt::test::ModelBuilder b;
  b.input("x", {-1, 16, 64}).input("y", {-1, 16, 64});
  b.floats("we0", {64, 64}, 0.01f).floats("we1", {64, 64}, 0.01f);
  b.node("MatMul", {"x", "we0"}, {"e0"}).node("Relu", {"e0"}, {"e1"}).node("MatMul", {"e1", "we1"}, {"e"});
  std::string h = "y";
  for (int i = 0; i < layers; ++i) {
    const std::string n = std::to_string(i);
    const int64_t wide = i % 2 ? 4096 : 8;
    b.floats("w" + n, {64, 64}, 0.01f).floats("k" + n, {64, wide}, 0.01f).floats("j" + n, {wide, 64}, 0.01f);
    b.node("MatMul", {h, "w" + n}, {"m" + n}).node("MatMul", {"e", "k" + n}, {"p" + n}).node("MatMul", {"p" + n, "j" + n}, {"c" + n});
    b.node("Add", {"m" + n, "c" + n}, {"a" + n}).node("Relu", {"a" + n}, {"r" + n});
    h = "r" + n;
  }
  b.output(h);
  return import_onnx_bytes(b.bytes(), "encoder_decoder.onnx", {.batch = 32});
}

}  // namespace

TEST_CASE("plan: a mesh past its work budget is relaxed, and the exact frontier lies within its stated epsilon") {
  const Graph g = encoder_decoder(8);
  const Cluster cluster = load_cluster("h100-sxm");
  AnalyticCompute compute(cluster, Precision::Fp32);
  PlanOptions exact;
  exact.max_exact_points = 0;
  const GpuFrontier truth = plan_frontier(g, cluster, 8, compute, exact);
  PlanOptions budget;
  budget.max_exact_points = 1;
  const GpuFrontier f = plan_frontier(g, cluster, 8, compute, budget);
  REQUIRE(f.meshes.size() == truth.meshes.size());
  double within = 0;
  int relaxed = 0;
  for (size_t m = 0; m < f.meshes.size(); ++m) {
    CAPTURE(f.meshes[m].mesh);
    CHECK(truth.meshes[m].relaxed_hubs == 0);
    CHECK(truth.meshes[m].approximation.empty());
    CHECK(f.meshes[m].within >= 0);
    CHECK(f.meshes[m].approximation.empty() == (f.meshes[m].within == 0));
    within = std::max(within, f.meshes[m].within);
    relaxed += f.meshes[m].relaxed_hubs > 0;
  }
  CHECK(relaxed >= 2);  // the 2-axis meshes, where e has layouts enough to make the hub costly
  // The whole frontier's bound is the largest mesh's; the exact plan's is 0.
  CHECK(frontier_within(f) == within);
  CHECK(within > 0);
  CHECK(frontier_within(truth) == 0);
  GpuFrontier unbounded;
  unbounded.meshes = f.meshes;
  CHECK(frontier_within(unbounded) == within);
  unbounded.meshes.front().within = -1;  // a uniform restriction's
  CHECK(frontier_within(unbounded) == -1);
  unbounded.meshes = truth.meshes;
  unbounded.skipped = {"[8 intra]: elimination width"};
  CHECK(frontier_within(unbounded) == -1);
  // Each relaxed mesh has its hull strategies among its points: the fastest is exact.
  CHECK(f.points.front().cost.time == truth.points.front().cost.time);
  for (const PlanPoint& p : f.points) CHECK(f.spaces[static_cast<size_t>(p.mesh)]->cost(p.assignment) == p.cost);
  // The guarantee is for the memory FT sums; the workspace added afterwards is the same function
  // of a strategy in both runs, and here small beside it.
  for (const PlanPoint& t : truth.points) {
    bool covered = false;
    for (const PlanPoint& p : f.points)
      covered = covered || (p.cost.time <= t.cost.time * (1 + within) * (1 + 1e-9) && p.cost.memory <= t.cost.memory * (1 + within) * (1 + 1e-9));
    CHECK(covered);
  }
}

TEST_CASE("solve_exact_or_relaxed: exact within the budget where the hubs have few layouts, relaxed at once where many") {
  test::Rng rng(29);
  // Records the work budget of every exact solve it is asked for.
  std::vector<int64_t> budgets;
  const auto solver = [&budgets](const Problem& p) {
    return [&budgets, &p](const FtOptions& o) {
      budgets.push_back(o.max_points_built);
      return solve_ft(p, o);
    };
  };
  const auto covers = [](const FtResult& r, const FtResult& truth, double within) {
    for (const FrontierPoint& t : truth.points) {
      bool covered = false;
      for (const FrontierPoint& q : r.points)
        covered = covered || (q.cost.time <= t.cost.time * (1 + within) * (1 + 1e-12) && q.cost.memory <= t.cost.memory * (1 + within) * (1 + 1e-12));
      if (!covered) return false;
    }
    return true;
  };
  FtOptions budget;
  budget.max_points_built = int64_t{1} << 40;
  SUBCASE("three hubs of five layouts each: 125 assignments, relaxed without an exact attempt") {
    const Problem p = test::with_hubs(24, 3, 1, 4, rng, 5);
    const EliminationOrder order = greedy_elimination_order(p);
    const FtResult truth = solve_ft(p);
    Approximation a;
    const FtResult r = solve_exact_or_relaxed(p, order, budget, solver(p), a);
    CHECK(budgets.empty());
    CHECK(a.hubs >= 1);
    CHECK(a.within >= 0);
    CHECK(a.text.find("would hold 125 layouts of them side by side") != std::string::npos);  // not exact here
    CHECK(a.text.empty() == (a.within == 0));
    for (const FrontierPoint& q : r.points) CHECK(evaluate(p, q.assignment) == q.cost);
    CHECK(covers(r, truth, a.within));
    SUBCASE("--exact: one exact solve, no budget") {
      budgets.clear();
      Approximation e;
      FtOptions none;
      none.max_points_built = 0;
      const FtResult x = solve_exact_or_relaxed(p, order, none, solver(p), e);
      CHECK(budgets == std::vector<int64_t>{0});
      CHECK(e.text.empty());
      CHECK(test::render(x) == test::render(truth));
    }
  }
  SUBCASE("two hubs of two layouts in scopes of more than 256 entries: exact within the budget, relaxed past it") {
    const Problem p = test::with_hubs(30, 2, 2, 80, rng);
    const EliminationOrder order = greedy_elimination_order(p);
    const FtResult truth = solve_ft(p);
    Approximation a;
    CHECK(test::render(solve_exact_or_relaxed(p, order, budget, solver(p), a)) == test::render(truth));
    CHECK(budgets == std::vector<int64_t>{budget.max_points_built});
    CHECK(a.text.empty());
    budgets.clear();
    FtOptions one;
    one.max_points_built = 1;
    const FtResult r = solve_exact_or_relaxed(p, order, one, solver(p), a);
    CHECK(budgets == std::vector<int64_t>{1});  // the attempt; the relaxation then solves the split Problem
    CHECK(a.hubs >= 1);
    CHECK(covers(r, truth, a.within));
  }
  SUBCASE("no hub: exact, no budget") {
    const Problem p = test::random_problem(test::Shape::kChain, 30, 3, 20, 1, rng);
    Approximation a;
    const FtResult r = solve_exact_or_relaxed(p, greedy_elimination_order(p), budget, solver(p), a);
    CHECK(budgets == std::vector<int64_t>{0});
    CHECK(test::render(r) == test::render(solve_ft(p)));
  }
}

TEST_CASE("tighten_within: a relaxed mesh's bound measured against every mesh's points") {
  Approximation a;
  a.bound = {{1, 10}, {2, 5}};
  a.slack = 0;
  a.hubs = 2;
  a.why = "why";
  const std::vector<Cost> own = {{1.1, 10}, {2, 6}};  // (2, 6) is 20% above (2, 5)
  a.within = 0.2;
  a.relaxed = relaxation_text(0.2, 2, "why");
  a.text = "prefix; " + a.relaxed;
  SUBCASE("another mesh's point, less the floor, covers the worst bound point") {
    tighten_within(a, own, {{2, 5.5}}, 0.5);
    CHECK(a.within == doctest::Approx(0.1));  // now (1, 10) by (1.1, 10)
    CHECK(a.text == "prefix; " + relaxation_text(0.1, 2, "why"));
    CHECK(a.relaxed == relaxation_text(0.1, 2, "why"));
  }
  SUBCASE("without the floor the same point covers nothing better") {
    tighten_within(a, own, {{2, 5.5}}, 0);
    CHECK(a.within == doctest::Approx(0.1));  // (2, 5) within 10% by (2, 5.5)
    tighten_within(a, own, {{2, 5.5}}, 0);    // again: no change
    CHECK(a.within == doctest::Approx(0.1));
  }
  SUBCASE("points below the whole bound: exact, the words cleared") {
    tighten_within(a, own, {{1, 9}, {2, 4}}, 0);
    CHECK(a.within == 0);
    CHECK(a.text.empty());
  }
  SUBCASE("never loosened; the slack stays in") {
    tighten_within(a, {{3, 20}}, {}, 0);
    CHECK(a.within == 0.2);
    a.slack = 0.01;
    tighten_within(a, own, {{1, 10}, {2, 5}}, 0);
    CHECK(a.within == doctest::Approx(0.01));
  }
  SUBCASE("no bound, no change") {
    Approximation none;
    none.within = -1;
    none.text = "restricted";
    tighten_within(none, own, {{0, 0}}, 0);
    CHECK(none.within == -1);
    CHECK(none.text == "restricted");
  }
}

TEST_CASE("wide regions: an approximation keeps at most its share of points, every one left out within 0.1% of a kept one") {
  // DenseNet-121 (every layer's output read by every later layer of its block): the uniform
  // restrictions and the relaxation's branches build frontiers of thousands of points microseconds
  // apart (280,000 on 64 GPUs). Thinned, each is within kBoundEpsilon of what it was, and the
  // stated epsilon holds for the points kept.
  const Cluster cluster = load_cluster("h100-sxm");
  AnalyticCompute compute(cluster, Precision::Fp32);
  const Graph g = import_onnx_file(std::string(TENSOROPT_SOURCE_DIR) + "/tests/fixtures/models/densenet121.onnx", {.batch = 8});
  const DeviceMesh mesh = candidate_meshes(cluster, 8, 2).front();
  CAPTURE(mesh.str());
  const StrategySpace space(g, mesh, compute, SpaceOptions{});
  FtOptions whole;
  whole.thin_above = std::numeric_limits<size_t>::max();  // nothing thinned
  Approximation all_points;
  const FtResult full = solve_with_fallback(space, {}, whole, all_points);
  FtOptions some;
  some.thin_above = full.points.size() / 8;
  REQUIRE(some.thin_above > 16);
  Approximation thinned_points;
  const FtResult thinned = solve_with_fallback(space, {}, some, thinned_points);
  CHECK(thinned.points.size() < full.points.size());
  REQUIRE_FALSE(thinned_points.bound.empty());
  CHECK(thinned_points.bound == all_points.bound);  // the same relaxation: thinning changes the points only
  for (const FrontierPoint& p : full.points) {
    const bool near = std::any_of(thinned.points.begin(), thinned.points.end(), [&](const FrontierPoint& q) {
      return q.cost.time <= p.cost.time * (1 + kBoundEpsilon) * (1 + 1e-12) && q.cost.memory <= p.cost.memory * (1 + kBoundEpsilon) * (1 + 1e-12);
    });
    CHECK(near);
  }
  // The stated epsilon covers the bound with the points kept.
  std::vector<Cost> kept;
  for (const FrontierPoint& q : thinned.points) kept.push_back(q.cost);
  CHECK((1 + thinned_points.slack) * (1 + bound_gap(thinned_points.bound, kept).epsilon) - 1 <= thinned_points.within * (1 + 1e-12));
  for (const FrontierPoint& q : thinned.points) CHECK(evaluate(space.problem(), q.assignment) == q.cost);
}

}  // namespace tensoropt::planner
