// Conditioning on fixed nodes (condition.h) against exhaustive enumeration and plain FT, on
// Problems where a hub (a weight every layer reads) makes the elimination order wide.
#include <doctest/doctest.h>

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <vector>

#include "planner/ft/condition.h"
#include "planner/ft/elimination_order.h"
#include "planner/ft/ft.h"
#include "tests/planner/ft/random_problems.h"

namespace tensoropt::planner {
using namespace test;
namespace {

const ScopeFits kAnyScope = [](const Problem&, const std::vector<int>&) { return false; };

OrderFits width_at_most(int w) {
  return [w](const Problem&, const EliminationOrder& order) { return order.width <= w; };
}

}  // namespace

TEST_CASE("condition: conditioning on the hubs gives the exact frontier, as brute force and FT") {
  Rng rng(401);
  int conditioned = 0, hubs_only = 0;
  for (int round = 0; round < 24; ++round) {
    const int hubs = 1 + round % 2;
    const Problem p = with_hubs(9, hubs, 2, 3, rng);
    CAPTURE(round);
    const std::optional<std::vector<int>> nodes = conditioning_nodes(p, width_at_most(1), kAnyScope, 64);
    REQUIRE(nodes.has_value());
    // A chain with its hubs fixed has width 1: the hubs are what is fixed, mostly (a chain
    // node of few configurations between two hub edges may serve as well).
    conditioned += nodes->empty() ? 0 : 1;
    hubs_only += !nodes->empty() && std::all_of(nodes->begin(), nodes->end(), [](int v) { return v >= 9; });
    const FtResult r = solve_ft_conditioned(p, *nodes);
    CHECK(costs(r) == brute_frontier(p));  // integer costs: every sum exact
    CHECK(costs(r) == costs(solve_ft(p)));
    CHECK(sorted_and_non_dominated(r));
    CHECK(assignments_that_evaluate_to_their_cost(p, r) == static_cast<int>(r.points.size()));
    CHECK(r.stats.branches + r.stats.branches_left_out >= 1);
    // Deterministic.
    CHECK(render(solve_ft_conditioned(p, *nodes), true) == render(r, true));
  }
  CHECK(conditioned >= 18);  // random nodes of one configuration may leave a chain narrow already
  CHECK(hubs_only >= 16);
}

TEST_CASE("condition: known costs leave branches out and keep the frontier FT keeps with them") {
  Rng rng(402);
  int left_out = 0;
  for (int round = 0; round < 12; ++round) {
    Problem p = with_hubs(10, 2, 2, 3, rng);
    // One hub's second configuration much dearer: its branches are beaten by the first's.
    p.node_cost[10][1] = {p.node_cost[10][1].time + 1000, p.node_cost[10][1].memory + 1000};
    const FtResult exact = solve_ft(p);
    FtOptions options;
    for (Cost c : costs(exact)) options.known.push_back({c.time * 1.02, c.memory * 1.02});
    const std::vector<int> nodes = {10, 11};
    const FtResult r = solve_ft_conditioned(p, nodes, options);
    CHECK(costs(r) == costs(solve_ft(p, options)));
    CHECK(assignments_that_evaluate_to_their_cost(p, r) == static_cast<int>(r.points.size()));
    const FtResult alone = solve_ft_conditioned(p, nodes);
    CHECK(costs(alone) == costs(exact));
    left_out += alone.stats.branches_left_out;
    CHECK(alone.stats.branches + alone.stats.branches_left_out == 4);
  }
  CHECK(left_out >= 12);  // the dear hub configuration's branches were proven beaten
}

TEST_CASE("condition: with epsilon the branches' union covers the exact frontier within (1+epsilon)") {
  Rng rng(403);
  for (int round = 0; round < 6; ++round) {
    const Problem p = with_hubs(12, 2, 3, 3, rng);
    const FtResult exact = solve_ft(p);
    FtOptions options;
    options.epsilon = 0.05;
    const FtResult r = solve_ft_conditioned(p, {12, 13}, options);
    CHECK(r.points.size() <= exact.points.size());
    for (const FrontierPoint& e : exact.points) CHECK(weakly_covered(r, e.cost, 1.05));
  }
}

TEST_CASE("condition: no nodes when the Problem fits, none past the branch limit, and bad nodes refused") {
  Rng rng(404);
  const Problem chain = random_problem(Shape::kChain, 8, 3, 20, 1, rng);
  const std::optional<std::vector<int>> none = conditioning_nodes(chain, width_at_most(1), kAnyScope, 64);
  REQUIRE(none.has_value());
  CHECK(none->empty());
  CHECK(costs(solve_ft_conditioned(chain, {})) == costs(solve_ft(chain)));
  const Problem p = with_hubs(9, 2, 2, 3, rng);
  CHECK(conditioning_nodes(p, width_at_most(1), kAnyScope, 1) == std::nullopt);  // 2 x 2 branches needed
  CHECK(conditioning_nodes(p, width_at_most(1), kAnyScope, 4).has_value());
  CHECK_THROWS_AS((void)solve_ft_conditioned(p, {99}), std::invalid_argument);
}

}  // namespace tensoropt::planner
