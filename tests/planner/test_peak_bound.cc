// The step's peak carried by FT (StrategySpace::carry_peak_bound): a lower bound of every
// strategy's workspace that leaves cost() unchanged and is given back exactly; and the planner's
// frontier with it, which dominates the summed-memory frontier point for point and, where every
// point's peak is in the bound, is exact for the full memory (random strategies never beat it).
#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include "graph/import.h"
#include "planner/ft/ft.h"
#include "planner/plan.h"
#include "planner/search/mesh_slot.h"

namespace tensoropt::planner {
namespace {

const Cluster kH100 = load_cluster("h100-sxm");

std::string fixture(const std::string& name) { return std::string(TENSOROPT_SOURCE_DIR) + "/" + name; }

// Strategies near and far from the frontier: every FT point, then random walks from the fastest
// (one to four variables redrawn a step, now and then all of them).
std::vector<std::vector<int>> strategies_of(const StrategySpace& s, const FtResult& ft, uint64_t seed, int steps) {
  std::vector<std::vector<int>> out;
  for (const FrontierPoint& p : ft.points) out.push_back(p.assignment);
  std::mt19937_64 rng(seed);
  std::vector<int> a = ft.points.front().assignment;
  for (int step = 0; step < steps; ++step) {
    const int changes = step % 50 == 49 ? static_cast<int>(a.size()) : 1 + step % 4;
    for (int c = 0; c < changes; ++c) {
      const size_t v = std::uniform_int_distribution<size_t>(0, a.size() - 1)(rng);
      a[v] = std::uniform_int_distribution<int>(0, static_cast<int>(s.variables()[v].configs.size()) - 1)(rng);
    }
    out.push_back(a);
  }
  return out;
}

}  // namespace

TEST_CASE("peak bound: below every workspace, in the Problem's memory, cost() unchanged, given back exactly") {
  int carried = 0, tight = 0, checked = 0;
  for (const char* model : {"models/gpt2_small.onnx", "tests/fixtures/models/gpt_gelu_tanh.onnx",
                            "tests/fixtures/models/resnet18_eval.onnx"}) {
    CAPTURE(model);
    Graph g = import_onnx_file(fixture(model), {.batch = 8});
    AnalyticCompute compute(kH100, Precision::Fp32);
    for (std::vector<int> shape : {std::vector<int>{4}, std::vector<int>{2, 2}}) {
      CAPTURE(shape.size());
      StrategySpace s(g, DeviceMesh::with_shape(kH100, shape), compute, PlanOptions{}.space);
      const FtResult ft = solve_ft(s.problem());
      const std::vector<std::vector<int>> all = strategies_of(s, ft, static_cast<uint64_t>(checked) + 1, 100);
      std::vector<Cost> full, summed;
      std::vector<double> workspace;
      for (const auto& a : all) {
        full.push_back(s.cost(a));
        summed.push_back(evaluate(s.problem(), a));
        workspace.push_back(full.back().memory - summed.back().memory);
        CHECK(s.peak_bound(a) == 0);
      }
      const double floor = s.workspace_floor();
      const std::vector<int>& fastest = ft.points.front().assignment;
      if (!s.carry_peak_bound(fastest)) {
        // Not carried: nothing changed.
        CHECK(!s.peak_bound_carried());
        for (size_t k = 0; k < all.size(); ++k) CHECK(evaluate(s.problem(), all[k]) == summed[k]);
        continue;
      }
      ++carried;
      CHECK(s.peak_bound_carried());
      CHECK(s.workspace_floor() == 0);
      // It is carried only when it is the reference's whole workspace.
      CHECK(s.peak_bound(fastest) == s.workspace(fastest));
      for (size_t k = 0; k < all.size(); ++k) {
        const double bound = s.peak_bound(all[k]);
        CHECK(bound > 0);
        CHECK(bound <= workspace[k]);
        tight += bound == workspace[k];
        const Cost with = evaluate(s.problem(), all[k]);
        CHECK(with.time == summed[k].time);
        CHECK(with.memory == summed[k].memory + bound);
        CHECK(s.cost(all[k]) == full[k]);
        ++checked;
      }
      s.drop_peak_bound();
      CHECK(!s.peak_bound_carried());
      CHECK(s.workspace_floor() == floor);
      for (size_t k = 0; k < all.size(); ++k) {
        CHECK(evaluate(s.problem(), all[k]) == summed[k]);
        CHECK(s.peak_bound(all[k]) == 0);
      }
    }
  }
  // GPT-2's tied LM head holds the peak of its fastest strategy on both meshes, and the bound is
  // the whole workspace of many strategies, not only of the reference.
  CHECK(carried >= 2);
  CHECK(checked > 600);
  CHECK(tight > checked / 4);
}

TEST_CASE("peak bound: the frontier dominates the summed one, and where every peak is carried no strategy beats it") {
  int exact_meshes = 0, lower = 0;
  for (const char* model : {"models/gpt2_small.onnx", "tests/fixtures/models/llama_tiny.onnx",
                            "tests/fixtures/models/resnet18_eval.onnx"}) {
    CAPTURE(model);
    Graph g = import_onnx_file(fixture(model), {.batch = 8});
    AnalyticCompute compute(kH100, Precision::Fp32);
    PlanOptions o;
    const GpuFrontier f = plan_frontier(g, kH100, 4, compute, o);
    REQUIRE(f.meshes.size() == f.spaces.size());
    // The summed-memory frontier: FT on each mesh's plain Problem, every point re-costed, merged.
    std::vector<Cost> summed;
    double least_summed = 1e300, least = 1e300;
    for (const PlanPoint& p : f.points) least = std::min(least, p.cost.memory);
    for (size_t m = 0; m < f.spaces.size(); ++m) {
      // A mesh solved by the wide-region fallback says it is approximate (llama_tiny's [2, 2]):
      // its exact points need not be on the frontier.
      if (!f.meshes[m].approximation.empty()) continue;
      StrategySpace plain(g, f.spaces[m]->mesh(), compute, o.space);
      for (const FrontierPoint& p : solve_ft(plain.problem()).points) {
        summed.push_back(plain.cost(p.assignment));
        least_summed = std::min(least_summed, summed.back().memory);
      }
    }
    for (const Cost& c : summed) {
      bool dominated = false;
      for (const PlanPoint& p : f.points) dominated = dominated || weakly_dominates(p.cost, c);
      CHECK(dominated);
    }
    lower += least < least_summed;
    // A mesh marked peak_exact: random strategies near its frontier never beat the merged frontier.
    for (size_t m = 0; m < f.spaces.size(); ++m) {
      if (!f.meshes[m].peak_exact) continue;
      ++exact_meshes;
      const StrategySpace& s = *f.spaces[m];
      std::vector<int> start;
      for (const PlanPoint& p : f.points)
        if (p.mesh == static_cast<int>(m)) start = p.assignment;
      if (start.empty()) continue;
      FtResult seeds;
      seeds.points.push_back({{}, start});
      for (const std::vector<int>& a : strategies_of(s, seeds, m + 11, 300)) {
        const Cost c = s.cost(a);
        bool dominated = false;
        for (const PlanPoint& p : f.points) dominated = dominated || weakly_dominates(p.cost, c);
        CHECK(dominated);
      }
    }
  }
  CHECK(exact_meshes >= 2);
  // GPT-2 (tied LM head): the summed frontier's FT stores the LM head's transposed weight split to save
  // summed memory, and its gathered copy comes back in the peak; carried, FT finds smaller points.
  CHECK(lower >= 1);
}

TEST_CASE("peak bound: kept only where the hull's middle has its peak there too, dropped only where FT's points would not") {
  // build_mesh carries the bound on the fastest strategy's peak, then keeps it only if the optimum
  // of time + slope * memory has its whole workspace in it. Where it is dropped, FT on the carried
  // Problem returns points whose workspace is not in the bound (solve_mesh would have solved the
  // mesh again without it); where it is kept, the middle optimum's workspace is in the bound.
  const Cluster cluster = kH100;
  AnalyticCompute compute(cluster, Precision::Fp32);
  PlanOptions o;
  int kept = 0, dropped = 0;
  for (const char* model : {"models/gpt2_small.onnx", "tests/fixtures/models/llama_tiny.onnx",
                            "tests/fixtures/models/resnet18_eval.onnx"}) {
    for (int64_t batch : {2, 8}) {
      const Graph g = import_onnx_file(fixture(model), {.batch = batch});
      for (const DeviceMesh& mesh : candidate_meshes(cluster, 4, 2)) {
        CAPTURE(model);
        CAPTURE(batch);
        CAPTURE(mesh.str());
        MeshSlot slot;
        build_mesh(slot, g, mesh, compute, o.space);
        if (!slot.exact) continue;
        if (slot.space->peak_bound_carried()) {
          ++kept;
          const std::vector<int> middle = weighted_optima(*slot.problem, *slot.order, {{1, slot.hull.slope}}).front();
          CHECK(slot.space->peak_bound(middle) == slot.space->workspace(middle));
          continue;
        }
        // Not carried: either the fastest strategy's peak is elsewhere, or the rule dropped it.
        StrategySpace carried(g, mesh, compute, o.space);
        const EliminationOrder order = greedy_elimination_order(carried.problem());
        if (!carried.carry_peak_bound(hull_end_strategies(carried.problem(), order).front())) continue;
        ++dropped;
        bool elsewhere = false;
        for (const FrontierPoint& p : solve_ft(carried.problem()).points)
          elsewhere = elsewhere || carried.peak_bound(p.assignment) != carried.workspace(p.assignment);
        CHECK(elsewhere);
      }
    }
  }
  MESSAGE("meshes with the bound kept: " << kept << ", dropped by the middle optimum: " << dropped);
  CHECK(kept >= 1);
  CHECK(dropped >= 1);  // GPT-2 small at batch 2 on 4 GPUs
}

}  // namespace tensoropt::planner
