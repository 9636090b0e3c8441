// Branching on the carried node (branch.h) against plain FT, and the whole-Problem dominance
// proof against exhaustive enumeration.
#include <doctest/doctest.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "planner/ft/branch.h"
#include "planner/ft/elimination_order.h"
#include "planner/ft/ft.h"
#include "tests/planner/ft/random_problems.h"

namespace tensoropt::planner {
using namespace test;
namespace {

// FT's known-cost test without its margins (ft.h "Known strategies"): every strategy the proof
// calls beaten must be beaten by this, which is weaker.
bool beaten(const std::vector<Cost>& known, Cost c) {
  return std::any_of(known.begin(), known.end(), [&](Cost u) { return u.time < c.time && u.memory <= c.memory; });
}

std::vector<Cost> scaled(const std::vector<Cost>& cs, double f) {
  std::vector<Cost> out;
  for (Cost c : cs) out.push_back({c.time * f, c.memory * f});
  return out;
}

}  // namespace

TEST_CASE("branch: a Problem proven beaten has every strategy beaten, and its own frontier never proves it") {
  Rng rng(311);
  int proven = 0, problems = 0;
  for (int round = 0; round < 30; ++round) {
    for (int s = 0; s < static_cast<int>(Shape::kCount); ++s) {
      const Problem p = random_problem(static_cast<Shape>(s), rng.in(3, 7), 3, 20, 1, rng);
      const EliminationOrder order = greedy_elimination_order(p);
      const std::vector<Cost> all = all_strategy_costs(p);
      const std::vector<Cost> frontier = costs(solve_ft(p));
      CAPTURE(shape_name(static_cast<Shape>(s)));
      CAPTURE(round);
      // Not one of its own frontier's strategies is beaten by that frontier.
      CHECK_FALSE(every_strategy_beaten(p, order, frontier, 0));
      for (double f : {0.3, 0.6, 0.8, 0.95}) {
        std::vector<Cost> known = scaled(frontier, f);
        known.push_back(evaluate(p, random_assignment(p, rng)));
        if (!every_strategy_beaten(p, order, known, 0)) continue;
        ++proven;
        for (Cost c : all) {
          CAPTURE(f);
          REQUIRE(beaten(known, c));
        }
      }
      // Per configuration of a node: sound for each one it calls beaten.
      const int node = rng.below(p.num_nodes());
      std::vector<int> configs;
      for (int k = 0; k < p.num_configs(node); ++k) configs.push_back(k);
      const std::vector<Cost> known = scaled(frontier, 0.9);
      const std::vector<bool> each = configurations_beaten(p, order, node, configs, known, 0);
      for (int k : configs) {
        if (!each[static_cast<size_t>(k)]) continue;
        ++proven;
        std::vector<std::vector<int>> keep(static_cast<size_t>(p.num_nodes()));
        keep[static_cast<size_t>(node)] = {k};
        for (Cost c : all_strategy_costs(narrow(p, keep).problem)) REQUIRE(beaten(known, c));
      }
      // With epsilon, a known cost counts as (1+epsilon) times itself.
      if (every_strategy_beaten(p, order, scaled(frontier, 0.6), 0.5)) {
        for (Cost c : all) REQUIRE(beaten(scaled(frontier, 0.9), c));
      }
      ++problems;
    }
  }
  CHECK(problems == 150);
  CHECK(proven > 150);  // the proof succeeds often, not only trivially
  // The origin beats every strategy of positive time.
  const Problem p = random_problem(Shape::kChain, 5, 3, 20, 1, rng);
  CHECK(every_strategy_beaten(p, greedy_elimination_order(p), {{0, 0}}, 0));
  CHECK_FALSE(every_strategy_beaten(p, greedy_elimination_order(p), {}, 0));
}

TEST_CASE("branch: solve_ft_branched gives solve_ft's frontier around a cycle, with and without known costs") {
  Rng rng(312);
  int branched = 0, left_out = 0;
  for (int round = 0; round < 12; ++round) {
    const int k = 2 + round % 3;
    Problem p = repeated_layers(24 + round, k, 30, /*tie=*/true, rng);
    const EliminationOrder order = greedy_elimination_order(p);
    const int x = carried_node(order);
    REQUIRE(x >= 0);  // the tie keeps one node in scope along the chain
    if (round % 2 == 1) {
      // One configuration of the carried node much dearer: its branch is beaten by another's.
      for (Cost& c : p.node_cost[static_cast<size_t>(x)]) c = {c.time + 1000, c.memory + 1000};
      p.node_cost[static_cast<size_t>(x)][0] = {0, 0};
    }
    CAPTURE(round);
    const FtResult plain = solve_ft(p);
    const FtResult b = solve_ft_branched(p);
    CHECK(costs(b) == costs(plain));  // integer costs: every sum exact
    CHECK(assignments_that_evaluate_to_their_cost(p, b) == static_cast<int>(b.points.size()));
    CHECK(b.stats.branches >= 1);
    CHECK(b.stats.branches <= 2);
    CHECK(b.stats.branches_left_out <= k - 1);
    branched += b.stats.branches;
    left_out += b.stats.branches_left_out;
    // Known costs from elsewhere: the same points as solve_ft with them.
    FtOptions options;
    options.known = scaled(costs(plain), 1.02);
    options.known.push_back(evaluate(p, random_assignment(p, rng)));
    const FtResult kp = solve_ft(p, options);
    const FtResult kb = solve_ft_branched(p, options);
    CHECK(costs(kb) == costs(kp));
    CHECK(assignments_that_evaluate_to_their_cost(p, kb) == static_cast<int>(kb.points.size()));
    // Deterministic.
    CHECK(render(solve_ft_branched(p), true) == render(b, true));
  }
  CHECK(left_out >= 6);  // the dear branches were proven beaten, not solved
  CHECK(branched >= 12);
}

TEST_CASE("branch: with epsilon the branches' union covers the exact frontier within (1+epsilon)") {
  Rng rng(313);
  for (int round = 0; round < 6; ++round) {
    const Problem p = repeated_layers(20, 3, 40, true, rng);
    const FtResult exact = solve_ft(p);
    FtOptions options;
    options.epsilon = 0.05;
    const FtResult b = solve_ft_branched(p, options);
    CHECK(b.points.size() <= exact.points.size());
    for (const FrontierPoint& e : exact.points) CHECK(weakly_covered(b, e.cost, 1.05));
  }
}

TEST_CASE("branch: without a carried node it is solve_ft, or nothing when known costs beat everything") {
  Rng rng(314);
  const Problem p = random_problem(Shape::kSkips, 12, 3, 20, 1, rng);
  CHECK(carried_node(greedy_elimination_order(p)) == -1);
  const FtResult plain = solve_ft(p);
  const FtResult b = solve_ft_branched(p);
  CHECK(render(b, true) == render(plain, true));
  CHECK(b.stats.branches == 1);
  FtOptions options;
  options.known = {{0, 0}};
  const FtResult none = solve_ft_branched(p, options);
  CHECK(none.points.empty());
  CHECK(none.stats.branches_left_out == 1);
}

TEST_CASE("branch: bad options are refused as solve_ft refuses them, before any proof") {
  Rng rng(316);
  const Problem p = repeated_layers(24, 3, 30, true, rng);
  FtOptions negative;
  negative.known = {{-1, 5}};
  CHECK_THROWS_WITH_AS((void)solve_ft_branched(p, negative), "FT: a known cost is negative or not finite", std::invalid_argument);
  FtOptions eps;
  eps.epsilon = -1;
  eps.known = {{1, 1}};
  CHECK_THROWS_WITH_AS((void)solve_ft_branched(p, eps), doctest::Contains("FT: epsilon must be finite and >= 0"), std::invalid_argument);
  CHECK_THROWS_WITH_AS((void)solve_ft(p, negative), "FT: a known cost is negative or not finite", std::invalid_argument);
}

TEST_CASE("narrow: keeps the named configurations and their edge rows, refuses bad indices") {
  Problem p;
  p.node_cost = {{{1, 1}, {2, 2}, {3, 3}}, {{10, 0}, {20, 0}}};
  p.edges = {{0, 1, {{0, 1}, {0, 2}, {0, 3}, {0, 4}, {0, 5}, {0, 6}}}};
  const Narrowed n = narrow(p, {{2, 0}});
  CHECK(n.problem.num_configs(0) == 2);
  CHECK(n.problem.num_configs(1) == 2);
  CHECK(n.keep[0] == std::vector<int>{2, 0});
  CHECK(n.keep[1] == std::vector<int>{0, 1});
  CHECK(n.problem.node_cost[0][0] == Cost{3, 3});
  CHECK(n.problem.edges[0].cost == std::vector<Cost>{{0, 5}, {0, 6}, {0, 1}, {0, 2}});
  CHECK(evaluate(n.problem, {0, 1}) == evaluate(p, {2, 1}));
  CHECK_THROWS_WITH_AS(narrow(p, {{3}}), doctest::Contains("node 0 keeps configuration 3, outside 0..2"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(narrow(p, {{}, {1, 1}}), doctest::Contains("node 1 keeps configuration 1 twice"), std::invalid_argument);
}

TEST_CASE("fold_independent_edges: every strategy costs what it cost, and fixed nodes join nothing") {
  Rng rng(11);
  for (int trial = 0; trial < 200; ++trial) {
    CAPTURE(trial);
    const Problem p = random_problem(static_cast<Shape>(trial % static_cast<int>(Shape::kCount)), rng.in(2, 7), 3, 20, 1, rng);
    const Problem f = fold_independent_edges(p);
    REQUIRE(f.num_nodes() == p.num_nodes());
    for (const Problem::Edge& e : f.edges) CHECK((f.num_configs(e.u) > 1 && f.num_configs(e.v) > 1));
    for (int k = 0; k < 20; ++k) {
      const std::vector<int> a = random_assignment(p, rng);
      CHECK(evaluate(f, a) == evaluate(p, a));
    }
  }
  // By hand: node 1 has one configuration; its edges land on nodes 0 and 2.
  Problem p;
  p.node_cost = {{{1, 0}, {2, 0}}, {{5, 5}}, {{0, 1}, {0, 2}}};
  p.edges = {{0, 1, {{10, 0}, {20, 0}}}, {1, 2, {{0, 10}, {0, 20}}}};
  const Problem f = fold_independent_edges(p);
  CHECK(f.edges.empty());
  CHECK(f.node_cost[0] == std::vector<Cost>{{11, 0}, {22, 0}});
  CHECK(f.node_cost[2] == std::vector<Cost>{{0, 11}, {0, 22}});
}

TEST_CASE("fold_independent_edges: an edge whose costs one node's choice leaves equal joins nothing") {
  // Node 1 (a hub of three configurations, a small weight's ZeRO choices) reads the same costs
  // into node 0 and node 2 whatever it chooses; the edge 0-3 depends on both and stays.
  Problem p;
  p.node_cost = {{{1, 0}, {2, 0}}, {{0, 3}, {0, 2}, {0, 1}}, {{0, 1}, {0, 2}}, {{4, 4}, {5, 5}}};
  p.edges = {{1, 0, {{10, 0}, {20, 0}, {10, 0}, {20, 0}, {10, 0}, {20, 0}}},
             {2, 1, {{7, 0}, {7, 0}, {7, 0}, {9, 1}, {9, 1}, {9, 1}}},
             {0, 3, {{1, 0}, {2, 0}, {3, 0}, {4, 0}}},
             {0, 2, {{6, 6}, {6, 6}, {6, 6}, {6, 6}}}};
  const Problem f = fold_independent_edges(p);
  REQUIRE(f.edges.size() == 1);
  CHECK((f.edges[0].u == 0 && f.edges[0].v == 3));
  CHECK(f.node_cost[0] == std::vector<Cost>{{11, 0}, {22, 0}});
  CHECK(f.node_cost[2] == std::vector<Cost>{{13, 7}, {15, 9}});  // + the 2-1 edge's rows, + the constant 0-2 edge
  CHECK(f.node_cost[1] == p.node_cost[1]);
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 3; ++b)
      for (int c = 0; c < 2; ++c)
        for (int d = 0; d < 2; ++d) CHECK(evaluate(f, {a, b, c, d}) == evaluate(p, {a, b, c, d}));
}

}  // namespace tensoropt::planner
