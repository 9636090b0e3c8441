// Tests of FT's elimination order (planner/ft/elimination_order.h): it is a valid elimination of the
// interaction graph, keeps chains and trees at width 1, keeps a node with few configurations in
// the scopes around a cycle, and folds a chain of residual blocks into segments rather than into
// one frontier that grows along the whole chain.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <stdexcept>

#include "planner/ft/elimination_order.h"
#include "tests/planner/ft/random_problems.h"

namespace tensoropt::planner {
namespace {

// Eliminates the interaction graph in `order` independently of the code under test and checks
// every step's scope, the width and the depth.
void check_valid(const Problem& p, const EliminationOrder& o) {
  const size_t n = static_cast<size_t>(p.num_nodes());
  REQUIRE(o.order.size() == n);
  REQUIRE(o.scopes.size() == n);
  std::vector<std::set<int>> adj(n);
  for (const Problem::Edge& e : p.edges) {
    adj[static_cast<size_t>(e.u)].insert(e.v);
    adj[static_cast<size_t>(e.v)].insert(e.u);
  }
  std::vector<bool> seen(n, false);
  std::vector<int> height(n, 0);
  int width = 0, depth = 0;
  for (size_t s = 0; s < n; ++s) {
    const int x = o.order[s];
    REQUIRE(x >= 0);
    REQUIRE(static_cast<size_t>(x) < n);
    REQUIRE_FALSE(seen[static_cast<size_t>(x)]);
    seen[static_cast<size_t>(x)] = true;
    const std::vector<int> nb(adj[static_cast<size_t>(x)].begin(), adj[static_cast<size_t>(x)].end());
    CHECK(o.scopes[s] == nb);
    width = std::max(width, static_cast<int>(nb.size()));
    const int h = ++height[static_cast<size_t>(x)];
    depth = std::max(depth, h);
    for (int a : nb) {
      height[static_cast<size_t>(a)] = std::max(height[static_cast<size_t>(a)], h);
      adj[static_cast<size_t>(a)].erase(x);
      for (int b : nb)
        if (a != b) adj[static_cast<size_t>(a)].insert(b);
    }
    adj[static_cast<size_t>(x)].clear();
  }
  CHECK(o.width == width);
  CHECK(o.depth == depth);
}

Problem uniform(int n, int k, const std::vector<std::pair<int, int>>& edges) {
  Problem p;
  p.node_cost.assign(static_cast<size_t>(n), std::vector<Cost>(static_cast<size_t>(k), Cost{1, 1}));
  for (auto [u, v] : edges) p.edges.push_back({u, v, std::vector<Cost>(static_cast<size_t>(k * k), Cost{1, 1})});
  return p;
}

// The nodes folded into each factor FT builds, summed over the steps: what a frontier that grows
// with every folded trade-off costs to build (the order's own work model, recomputed here from
// the order alone: the factor built at a step is consumed by the first later step whose node is
// in its scope).
int64_t folded_work(const Problem& p, const EliminationOrder& o) {
  const size_t n = static_cast<size_t>(p.num_nodes());
  struct Built {
    std::vector<int> scope;
    int64_t nodes;
    bool live;
  };
  std::vector<Built> built;
  int64_t work = 0;
  for (size_t s = 0; s < n; ++s) {
    const int x = o.order[s];
    int64_t nodes = 1;
    for (Built& b : built) {
      if (b.live && std::find(b.scope.begin(), b.scope.end(), x) != b.scope.end()) {
        nodes += b.nodes;
        b.live = false;
      }
    }
    built.push_back({o.scopes[s], nodes, true});
    work += nodes;
  }
  return work;
}

TEST_CASE("elimination order: a valid elimination of random graphs of every shape") {
  test::Rng rng(20261122);
  for (int shape = 0; shape < static_cast<int>(test::Shape::kCount); ++shape) {
    for (int trial = 0; trial < 8; ++trial) {
      const int n = rng.in(2, 24);
      const Problem p = test::random_problem(static_cast<test::Shape>(shape), n, 4, 10, 1, rng);
      CAPTURE(test::shape_name(static_cast<test::Shape>(shape)));
      CAPTURE(n);
      const EliminationOrder o = greedy_elimination_order(p);
      check_valid(p, o);
      CHECK(greedy_elimination_order(p).order == o.order);  // deterministic
    }
  }
}

TEST_CASE("elimination order: elimination_order_of recomputes the greedy order's scopes, width and depth") {
  test::Rng rng(7);
  for (int shape = 0; shape < static_cast<int>(test::Shape::kCount); ++shape) {
    const Problem p = test::random_problem(static_cast<test::Shape>(shape), rng.in(2, 20), 4, 10, 1, rng);
    const EliminationOrder greedy = greedy_elimination_order(p);
    const EliminationOrder again = elimination_order_of(p, greedy.order);
    CHECK(again.order == greedy.order);
    CHECK(again.scopes == greedy.scopes);
    CHECK(again.width == greedy.width);
    CHECK(again.depth == greedy.depth);
    std::vector<int> reversed(greedy.order.rbegin(), greedy.order.rend());
    check_valid(p, elimination_order_of(p, reversed));
    std::vector<int> repeated = greedy.order;
    repeated.back() = repeated.front();
    CHECK_THROWS_AS((void)elimination_order_of(p, repeated), std::invalid_argument);
    repeated.pop_back();
    CHECK_THROWS_AS((void)elimination_order_of(p, repeated), std::invalid_argument);
  }
}

TEST_CASE("elimination order: chains and trees are eliminated leaf first, width 1") {
  std::vector<std::pair<int, int>> chain, tree;
  for (int i = 1; i < 40; ++i) chain.emplace_back(i - 1, i);
  for (int i = 1; i < 40; ++i) tree.emplace_back((i - 1) / 3, i);
  for (const auto& edges : {chain, tree}) {
    const Problem p = uniform(40, 4, edges);
    const EliminationOrder o = greedy_elimination_order(p);
    check_valid(p, o);
    CHECK(o.width == 1);
  }
}

TEST_CASE("elimination order: around a cycle the node with fewest configurations stays in scope") {
  // A ring of 30 nodes (an embedding and an output layer sharing a weight): node 17 has 2
  // configurations, the others 8. Every factor built before the last two steps holds node 17.
  Problem p;
  const int n = 30;
  for (int v = 0; v < n; ++v) p.node_cost.push_back(std::vector<Cost>(v == 17 ? 2 : 8, Cost{1, 1}));
  for (int v = 0; v < n; ++v) {
    const int w = (v + 1) % n;
    p.edges.push_back({v, w, std::vector<Cost>(p.node_cost[static_cast<size_t>(v)].size() * p.node_cost[static_cast<size_t>(w)].size(), Cost{1, 1})});
  }
  const EliminationOrder o = greedy_elimination_order(p);
  check_valid(p, o);
  CHECK(o.width == 2);
  for (size_t s = 0; s + 2 < o.order.size(); ++s) {
    CAPTURE(s);
    CHECK(std::find(o.scopes[s].begin(), o.scopes[s].end(), 17) != o.scopes[s].end());
  }
}

TEST_CASE("elimination order: a chain of residual blocks is folded in segments, not one growing frontier") {
  // 64 blocks x -> a -> b -> x' with the skip x -> x' (a transformer's residual stream), K = 4.
  // Folding block after block into one factor costs about n^2 / 2 in folded_work (every step
  // rebuilds the growing frontier); joining segments costs far less.
  const int blocks = 64;
  std::vector<std::pair<int, int>> edges;
  for (int i = 0; i < blocks; ++i) {
    const int x = 3 * i;
    edges.insert(edges.end(), {{x, x + 1}, {x + 1, x + 2}, {x + 2, x + 3}, {x, x + 3}});
  }
  const int n = 3 * blocks + 1;
  const Problem p = uniform(n, 4, edges);
  const EliminationOrder o = greedy_elimination_order(p);
  check_valid(p, o);
  CHECK(o.width == 2);
  const int64_t work = folded_work(p, o);
  MESSAGE("folded work " << work << " for " << n << " nodes (n^2/2 = " << n * n / 2 << ")");
  CHECK(work < int64_t{n} * n / 4);  // the previous order (ratio only): 18,721; this one: 6,434
}

}  // namespace
}  // namespace tensoropt::planner
