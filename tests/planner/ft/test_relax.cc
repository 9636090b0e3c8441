// Relaxation (relax.h) against exhaustive enumeration: the split Problem's frontier bounds every
// strategy, the repaired points are real strategies, and the stated epsilon covers every strategy;
// and FT's work budget (max_points_built), which sends a slow Problem to it.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <algorithm>
#include <stdexcept>
#include <vector>

#include "planner/ft/branch.h"
#include "planner/ft/brute_force.h"
#include "planner/ft/elimination_order.h"
#include "planner/ft/relax.h"
#include "tests/planner/ft/random_problems.h"

namespace tensoropt::planner {
using namespace test;
namespace {

// The hubs with_hubs appended: the last `hubs` nodes.
std::vector<int> last_nodes(const Problem& p, int hubs) {
  std::vector<int> out;
  for (int h = p.num_nodes() - hubs; h < p.num_nodes(); ++h) out.push_back(h);
  return out;
}

// Some point of `set` no more than `factor` times `c` in both coordinates.
bool covered(const std::vector<Cost>& set, Cost c, double factor) {
  for (Cost u : set)
    if (u.time <= c.time * factor * (1 + 1e-12) && u.memory <= c.memory * factor * (1 + 1e-12)) return true;
  return false;
}

const ScopeFits kPairs = [](const Problem&, const std::vector<int>& scope) { return scope.size() <= 1; };

}  // namespace

TEST_CASE("split_hubs gives each edge at a hub its own copy, and every strategy keeps its cost") {
  Rng rng(11);
  const Problem p = with_hubs(9, 2, 2, 3, rng);
  const std::vector<int> hubs = last_nodes(p, 2);
  const SplitProblem s = split_hubs(p, hubs);
  validate(s.problem);
  int at_hubs = 0;
  for (const Problem::Edge& e : p.edges) at_hubs += (e.u >= 9 || e.v >= 9) ? 1 : 0;
  CHECK(s.problem.num_nodes() == p.num_nodes() + at_hubs - 2);
  std::vector<int> degree(static_cast<size_t>(s.problem.num_nodes()), 0);
  for (const Problem::Edge& e : s.problem.edges) {
    ++degree[static_cast<size_t>(e.u)];
    ++degree[static_cast<size_t>(e.v)];
  }
  for (int v = 0; v < s.problem.num_nodes(); ++v)
    if (s.original[static_cast<size_t>(v)] >= 9) CHECK(degree[static_cast<size_t>(v)] == 1);
  for (int trial = 0; trial < 20; ++trial) {
    const std::vector<int> a = random_assignment(p, rng);
    std::vector<int> copied;
    for (int v = 0; v < s.problem.num_nodes(); ++v) copied.push_back(a[static_cast<size_t>(s.original[static_cast<size_t>(v)])]);
    CHECK(evaluate(s.problem, copied) == evaluate(p, a));
  }
  CHECK_THROWS_AS((void)split_hubs(p, {9, 9}), std::invalid_argument);
  CHECK_THROWS_AS((void)split_hubs(p, {p.num_nodes()}), std::invalid_argument);
}

TEST_CASE("solve_relaxed: the bound is below every strategy, and its stated epsilon covers every strategy") {
  int exact = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    CAPTURE(seed);
    Rng rng(seed);
    const int hubs = 1 + static_cast<int>(seed % 3);
    const Problem p = with_hubs(8, hubs, 2, 3, rng);
    const std::vector<Cost> truth = brute_frontier(p);
    const RelaxedResult r = solve_relaxed(p, last_nodes(p, hubs));
    for (Cost s : truth) CHECK(covered(r.bound, s, 1));  // b <= s
    CHECK(sorted_and_non_dominated(r.result));
    CHECK(assignments_that_evaluate_to_their_cost(p, r.result) == static_cast<int>(r.result.points.size()));
    CHECK(r.epsilon == bound_gap(r.bound, costs(r.result)).epsilon);
    CHECK(r.epsilon >= 0);
    for (Cost s : truth) CHECK(covered(costs(r.result), s, 1 + r.epsilon));
    // Every result point is a strategy, so none lies strictly below the true frontier.
    for (Cost u : costs(r.result)) CHECK(covered(truth, u, 1));
    if (r.epsilon == 0) {
      CHECK(costs(r.result) == truth);
      ++exact;
    }
  }
  CHECK(exact < 40);  // the relaxation is not tight everywhere: the bound is tested, not assumed
}

TEST_CASE("solve_relaxed is exact when no edge at a hub depends on the hub's configuration") {
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    CAPTURE(seed);
    Rng rng(seed);
    Problem p = with_hubs(8, 2, 2, 3, rng);
    for (Problem::Edge& e : p.edges) {
      if (e.v < 8) continue;  // hubs are the edges' v
      const size_t kv = static_cast<size_t>(p.num_configs(e.v));
      for (size_t i = 0; i < e.cost.size(); ++i) e.cost[i] = e.cost[i - i % kv];  // the hub's configuration 0's
    }
    const RelaxedResult r = solve_relaxed(p, last_nodes(p, 2));
    CHECK(r.epsilon == 0);
    CHECK(costs(r.result) == brute_frontier(p));
  }
}

TEST_CASE("solve_relaxed with epsilon and with known costs keeps its guarantee") {
  for (uint64_t seed = 1; seed <= 15; ++seed) {
    CAPTURE(seed);
    Rng rng(seed);
    const Problem p = with_hubs(8, 2, 2, 3, rng);
    const std::vector<Cost> truth = brute_frontier(p);
    FtOptions thin;
    thin.epsilon = 0.05;
    const RelaxedResult r = solve_relaxed(p, last_nodes(p, 2), thin);
    CHECK(r.epsilon >= 0.05);
    for (Cost s : truth) CHECK(covered(costs(r.result), s, 1 + r.epsilon));
    // Known: every other point of the true frontier (costs of real strategies).
    FtOptions known;
    for (size_t i = 0; i < truth.size(); i += 2) known.known.push_back(truth[i]);
    const RelaxedResult k = solve_relaxed(p, last_nodes(p, 2), known);
    std::vector<Cost> both = costs(k.result);
    both.insert(both.end(), known.known.begin(), known.known.end());
    for (Cost s : truth) CHECK(covered(both, s, 1 + k.epsilon));
  }
}

TEST_CASE("solve_relaxed keeps the seeds it is given, or points that dominate them") {
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    CAPTURE(seed);
    Rng rng(seed);
    const Problem p = with_hubs(8, 2, 2, 3, rng);
    FtResult exact = solve_brute_force(p);
    for (FrontierPoint& q : exact.points) q.cost = {};  // costed again by solve_relaxed
    const RelaxedResult r = solve_relaxed(p, last_nodes(p, 2), {}, exact.points);
    for (Cost s : brute_frontier(p)) CHECK(covered(costs(r.result), s, 1));
    CHECK(r.epsilon == bound_gap(r.bound, brute_frontier(p)).epsilon);  // the exact frontier's own gap
    CHECK(assignments_that_evaluate_to_their_cost(p, r.result) == static_cast<int>(r.result.points.size()));
  }
  Rng rng(1);
  const Problem p = with_hubs(8, 2, 2, 3, rng);
  FrontierPoint bad;
  bad.assignment.assign(static_cast<size_t>(p.num_nodes()), 5);
  CHECK_THROWS_AS((void)solve_relaxed(p, last_nodes(p, 2), {}, {bad}), std::invalid_argument);
}

TEST_CASE("relaxation_hubs splits the nodes read across the chain, and only as many as it may") {
  Rng rng(5);
  const Problem p = with_hubs(12, 2, 2, 3, rng);  // each hub joins 6 chain nodes
  const HubChoice both = relaxation_hubs(p, kPairs, 8, 2);
  CHECK(both.fits);
  std::vector<int> sorted = both.hubs;
  std::sort(sorted.begin(), sorted.end());
  CHECK(sorted == last_nodes(p, 2));
  const HubChoice one = relaxation_hubs(p, kPairs, 1, 2);
  CHECK(one.hubs.size() == 1);
  CHECK(!one.fits);
  const HubChoice none = relaxation_hubs(p, kPairs, 8, 7);  // no node has 7 neighbours
  CHECK(none.hubs.empty());
  CHECK(!none.fits);
  const Problem chain = random_problem(Shape::kChain, 10, 3, 20, 1, rng);
  const HubChoice fine = relaxation_hubs(chain, kPairs, 8, 2);
  CHECK(fine.fits);
  CHECK(fine.hubs.empty());
  const ScopeFits nothing = [](const Problem&, const std::vector<int>&) { return false; };
  CHECK(!relaxation_hubs(p, nothing, 100, 2).fits);  // every node with two neighbours split, still failing
}

TEST_CASE("bound_gap by hand") {
  const double inf = std::numeric_limits<double>::infinity();
  CHECK(bound_gap({{1, 1}}, {{2, 1}}).epsilon == 1);
  CHECK(bound_gap({{1, 1}}, {{1, 1}, {2, 0}}).epsilon == 0);
  CHECK(bound_gap({{2, 4}}, {{1, 5}, {3, 1}}).epsilon == doctest::Approx(0.25));
  CHECK(bound_gap({{0, 4}}, {{0, 5}}).epsilon == doctest::Approx(0.25));
  CHECK(bound_gap({{0, 4}}, {{1, 4}}).epsilon == inf);
  CHECK(bound_gap({{1, 1}}, {}).epsilon == inf);
  CHECK(bound_gap({}, {}).epsilon == 0);
}

TEST_CASE("FT's work budget: max_points_built refuses a solve that builds more, in every solver") {
  Rng rng(3);
  const Problem p = random_problem(Shape::kSkips, 30, 4, 50, 1, rng);
  const FtResult whole = solve_ft(p);
  REQUIRE(whole.stats.points_built > 100);
  FtOptions budget;
  budget.max_points_built = whole.stats.points_built;
  CHECK(costs(solve_ft(p, budget)) == costs(whole));
  budget.max_points_built = whole.stats.points_built / 2;
  CHECK_THROWS_AS((void)solve_ft(p, budget), FtWorkLimit);
  CHECK_THROWS_AS((void)solve_ft_branched(p, budget), FtWorkLimit);
  FtOptions negative;
  negative.max_points_built = -1;
  CHECK_THROWS_AS((void)solve_ft(p, negative), std::invalid_argument);
  CHECK(points_left(budget, 0) == budget.max_points_built);
  CHECK(points_left(budget, budget.max_points_built * 3) == 1);
  CHECK(points_left(FtOptions{}, 1000) == 0);
}

}  // namespace tensoropt::planner

namespace tensoropt::planner {
using namespace test;

TEST_CASE("FT thins a final frontier of more than thin_above points before rebuilding its strategies") {
  Rng rng(41);
  const Problem p = random_problem(Shape::kSkips, 30, 4, 50, 1, rng);
  const FtResult exact = solve_ft(p);
  REQUIRE(exact.points.size() > 8);
  CHECK(!exact.stats.thinned);
  FtOptions o;
  o.thin_above = exact.points.size();  // not more: nothing thinned
  o.thin_epsilon = 0.05;
  const FtResult same = solve_ft(p, o);
  CHECK(!same.stats.thinned);
  CHECK(render(same) == render(exact));
  o.thin_above = 8;
  const FtResult thin = solve_ft(p, o);
  CHECK(thin.stats.thinned);
  CHECK(thin.points.size() < exact.points.size());
  CHECK(sorted_and_non_dominated(thin));
  CHECK(assignments_that_evaluate_to_their_cost(p, thin) == static_cast<int>(thin.points.size()));
  for (const FrontierPoint& e : exact.points) CHECK(weakly_covered(thin, e.cost, 1.05 * (1 + 1e-12)));
  for (const FrontierPoint& t : thin.points) {  // a subset of the exact frontier's costs
    bool on = false;
    for (const FrontierPoint& e : exact.points) on = on || e.cost == t.cost;
    CHECK(on);
  }
  o.thin_epsilon = -1;
  CHECK_THROWS_AS((void)solve_ft(p, o), std::invalid_argument);
}

}  // namespace tensoropt::planner
