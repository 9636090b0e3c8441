// FT against brute force on random small graphs, against random strategies on bigger ones, the
// epsilon guarantee, determinism, structure (chains stay narrow), validation and size refusals.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "planner/ft/brute_force.h"
#include "planner/ft/ft.h"
#include "tests/planner/ft/random_problems.h"

namespace tensoropt::planner {
using namespace test;

TEST_CASE("ft: equals brute force point for point on 200 random small graphs") {
  Rng rng(20240603);
  int problems = 0;
  int multi_point = 0;
  for (int round = 0; round < 40; ++round) {
    for (int s = 0; s < static_cast<int>(Shape::kCount); ++s) {
      const Shape shape = static_cast<Shape>(s);
      const int n = rng.in(2, 8);
      const int edge_scale = round % 4 == 3 ? 10 : 1;  // every fourth round edges dominate
      const Problem p = random_problem(shape, n, /*max_k=*/4, /*range=*/9, edge_scale, rng);
      CAPTURE(shape_name(shape));
      CAPTURE(n);
      CAPTURE(round);
      const FtResult ft = solve_ft(p);
      const FtResult bf = solve_brute_force(p);
      CHECK(render(ft) == render(bf));
      CHECK(ft.points.size() == bf.points.size());
      CHECK(sorted_and_non_dominated(ft));
      CHECK(assignments_that_evaluate_to_their_cost(p, ft) == static_cast<int>(ft.points.size()));
      CHECK(assignments_that_evaluate_to_their_cost(p, bf) == static_cast<int>(bf.points.size()));
      int uncovered = 0;  // an oracle that shares no code with the frontier algebra
      for (Cost c : all_strategy_costs(p)) uncovered += !weakly_covered(ft, c);
      CHECK(uncovered == 0);
      ++problems;
      multi_point += ft.points.size() > 2;
    }
  }
  CHECK(problems == 200);
  CHECK(multi_point > 100);  // the comparison is not between trivial one-point frontiers
}

namespace {

// Appends to node v a copy of its configuration `source`, every node and edge cost raised by
// `extra` (0: an exact duplicate) or by a random non-negative amount: a configuration that the
// source covers, which FT's configuration pruning should leave out.
void add_covered_config(Problem& p, int v, int source, bool duplicate, Rng& rng) {
  const auto raise = [&](Cost c) {
    if (duplicate) return c;
    return Cost{c.time + rng.in(0, 2), c.memory + rng.in(0, 2)};
  };
  const size_t uv = static_cast<size_t>(v);
  const Cost node = p.node_cost[uv][static_cast<size_t>(source)];
  for (Problem::Edge& e : p.edges) {
    const size_t ku = static_cast<size_t>(p.num_configs(e.u));
    const size_t kv = static_cast<size_t>(p.num_configs(e.v));
    std::vector<Cost> cost;
    if (e.v == v) {
      for (size_t a = 0; a < ku; ++a) {
        for (size_t b = 0; b < kv; ++b) cost.push_back(e.cost[a * kv + b]);
        cost.push_back(raise(e.cost[a * kv + static_cast<size_t>(source)]));
      }
    } else if (e.u == v) {
      cost = e.cost;
      for (size_t b = 0; b < kv; ++b) cost.push_back(raise(e.cost[static_cast<size_t>(source) * kv + b]));
    } else {
      continue;
    }
    e.cost = std::move(cost);
  }
  p.node_cost[uv].push_back(raise(node));
}

}  // namespace

TEST_CASE("ft: covered and duplicate configurations change nothing, duplicates are never chosen") {
  Rng rng(8128);
  int duplicates_seen = 0;
  for (int round = 0; round < 60; ++round) {
    const Shape shape = static_cast<Shape>(round % static_cast<int>(Shape::kCount));
    const int n = rng.in(2, 6);
    Problem p = random_problem(shape, n, /*max_k=*/3, /*range=*/9, /*edge_scale=*/1, rng);
    std::vector<std::pair<int, int>> duplicates;  // (node, configuration) exact copies
    for (int v = 0; v < n; ++v) {
      for (int extra = rng.below(3); extra > 0; --extra) {
        const bool duplicate = rng.below(2) == 0;
        add_covered_config(p, v, rng.below(p.num_configs(v)), duplicate, rng);
        if (duplicate) duplicates.emplace_back(v, p.num_configs(v) - 1);
      }
    }
    CAPTURE(shape_name(shape));
    CAPTURE(round);
    const FtResult ft = solve_ft(p);
    const FtResult bf = solve_brute_force(p);
    CHECK(render(ft) == render(bf));
    CHECK(assignments_that_evaluate_to_their_cost(p, ft) == static_cast<int>(ft.points.size()));
    int uses_duplicate = 0;
    for (const FrontierPoint& point : ft.points) {
      for (auto [v, k] : duplicates) uses_duplicate += point.assignment[static_cast<size_t>(v)] == k;
    }
    CHECK(uses_duplicate == 0);  // of equal costs the lower configuration wins
    duplicates_seen += static_cast<int>(duplicates.size());
  }
  CHECK(duplicates_seen > 30);
}

TEST_CASE("ft: no random strategy beats the frontier on 30-node chains and DAGs") {
  Rng rng(77);
  for (int i = 0; i < 10; ++i) {
    const Shape shape = i % 2 == 0 ? Shape::kChain : (i % 4 == 1 ? Shape::kSkips : Shape::kMultiConsumer);
    const Problem p = random_problem(shape, /*n=*/30, /*max_k=*/5, /*range=*/50, /*edge_scale=*/1, rng);
    CAPTURE(shape_name(shape));
    const FtResult ft = solve_ft(p);
    REQUIRE(!ft.points.empty());
    CHECK(sorted_and_non_dominated(ft));
    CHECK(assignments_that_evaluate_to_their_cost(p, ft) == static_cast<int>(ft.points.size()));
    int uncovered = 0;
    for (int draw = 0; draw < 1000; ++draw) {
      uncovered += !weakly_covered(ft, evaluate(p, random_assignment(p, rng)));
    }
    CHECK(uncovered == 0);
  }
}

TEST_CASE("ft: epsilon frontier covers the exact one within (1+epsilon) and is no larger") {
  Rng rng(4242);
  int smaller = 0;
  for (double epsilon : {0.01, 0.1, 0.5}) {
    for (int i = 0; i < 12; ++i) {
      const Shape shape = static_cast<Shape>(i % static_cast<int>(Shape::kCount));
      const int n = shape == Shape::kRandomDag ? 8 : 14;
      const Problem p = random_problem(shape, n, /*max_k=*/4, /*range=*/1000, /*edge_scale=*/1, rng);
      CAPTURE(shape_name(shape));
      CAPTURE(epsilon);
      const FtResult exact = solve_ft(p);
      FtOptions options;
      options.epsilon = epsilon;
      const FtResult approx = solve_ft(p, options);
      CHECK(approx.points.size() <= exact.points.size());
      smaller += approx.points.size() < exact.points.size();
      CHECK(sorted_and_non_dominated(approx));
      CHECK(assignments_that_evaluate_to_their_cost(p, approx) == static_cast<int>(approx.points.size()));
      int uncovered = 0;
      for (const FrontierPoint& e : exact.points) uncovered += !weakly_covered(approx, e.cost, 1 + epsilon);
      CHECK(uncovered == 0);
      CHECK(approx.stats.delta > 0);
      CHECK(std::pow(1 + approx.stats.delta, approx.stats.depth) <= 1 + epsilon + 1e-12);
    }
  }
  CHECK(smaller > 10);  // pruning really happened
}

TEST_CASE("ft: solving twice gives identical points and assignments") {
  Rng rng(9);
  for (int s = 0; s < static_cast<int>(Shape::kCount); ++s) {
    const Problem p = random_problem(static_cast<Shape>(s), 16, 4, 30, 1, rng);
    const std::string once = render(solve_ft(p), /*with_assignments=*/true);
    CHECK(once == render(solve_ft(p), /*with_assignments=*/true));
    FtOptions options;
    options.epsilon = 0.1;
    CHECK(render(solve_ft(p, options), true) == render(solve_ft(p, options), true));
  }
}

TEST_CASE("ft: the result does not depend on the number of threads") {
  // A ring: one node stays in every factor's scope, factors of K^2 entries with frontiers that
  // grow around the ring, big enough for the entries to be built on several threads.
  Rng rng(31337);
  const int n = 12;
  const int k = 8;
  Problem ring;
  ring.node_cost.resize(n);
  for (auto& costs : ring.node_cost) {
    for (int c = 0; c < k; ++c) costs.push_back(draw_cost(rng, 400));
  }
  for (int v = 0; v < n; ++v) {
    Problem::Edge e{v, (v + 1) % n, {}};
    for (int c = 0; c < k * k; ++c) e.cost.push_back(draw_cost(rng, 400));
    ring.edges.push_back(std::move(e));
  }
  FtOptions one;
  one.threads = 1;
  FtOptions four;
  four.threads = 4;
  const FtResult serial = solve_ft(ring, one);
  const FtResult parallel = solve_ft(ring, four);
  CHECK(serial.stats.parallel_steps == 0);
  CHECK(parallel.stats.parallel_steps > 0);
  CHECK(render(serial, true) == render(parallel, true));
  CHECK(serial.stats.provenance_records == parallel.stats.provenance_records);
  CHECK(serial.stats.peak_bytes == parallel.stats.peak_bytes);  // so max_bytes refuses alike
  CHECK(assignments_that_evaluate_to_their_cost(ring, parallel) == static_cast<int>(parallel.points.size()));
}

TEST_CASE("ft: steps that repeat an earlier one's content are replayed, with the same result") {
  // Without reuse every step is computed; with it, the same frontier and the same strategies,
  // whatever else prunes the entries (known costs depend on the step, epsilon does not).
  const auto both = [](const Problem& p, FtOptions options) {
    options.reuse = false;
    const FtResult computed = solve_ft(p, options);
    options.reuse = true;
    const FtResult replayed = solve_ft(p, options);
    CHECK(computed.stats.replayed_steps == 0);
    CHECK(replayed.stats.replayed_steps > 0);
    CHECK(render(replayed, true) == render(computed, true));
    CHECK(assignments_that_evaluate_to_their_cost(p, replayed) == static_cast<int>(replayed.points.size()));
    return replayed;
  };
  Rng rng(4242);
  for (int round = 0; round < 12; ++round) {
    // 10 nodes, brute force is cheap. The tie makes a cycle, so the inner nodes of each layer go
    // before the layers are joined (on an open chain the order sweeps from one end, and no step
    // repeats: the swept factor grows).
    const Problem small = repeated_layers(3, 2 + round % 2, 9, /*tie=*/true, rng);
    CAPTURE(round);
    const FtResult bf = solve_brute_force(small);
    const FtResult ft = both(small, {});
    CHECK(render(ft) == render(bf));
    FtOptions known;
    for (size_t i = 0; i < bf.points.size(); i += 2) known.known.push_back(bf.points[i].cost);
    const FtResult pruned = both(small, known);
    CHECK(render(pruned) == render(bf));  // known costs are frontier points: nothing strictly beats one
    FtOptions thinned;
    thinned.epsilon = 0.2;
    both(small, thinned);
  }
  // Deeper and wider, on several threads: the layers after the first two are replayed.
  const Problem deep = repeated_layers(10, 3, 200, true, rng);
  FtOptions four;
  four.threads = 4;
  const FtResult r = both(deep, four);
  CHECK(r.stats.replayed_steps >= 2 * 8);  // two inner nodes a layer, after the first two layers
}

TEST_CASE("ft: compacting the provenance between steps changes no point and no strategy") {
  // compact_records = 1: the arena is compacted whenever it has doubled, from the first steps on.
  Rng rng(5151);
  int compacted_smaller = 0;
  for (int round = 0; round < 30; ++round) {
    const Shape shape = round % 2 == 0 ? Shape::kChain : (round % 4 == 1 ? Shape::kSkips : Shape::kMultiConsumer);
    const Problem p = random_problem(shape, rng.in(10, 40), /*max_k=*/5, /*range=*/50, 1, rng);
    CAPTURE(round);
    FtOptions kept;
    kept.compact_records = int64_t{1} << 40;
    FtOptions compacted;
    compacted.compact_records = 1;
    compacted.threads = 1 + round % 3;
    const FtResult a = solve_ft(p, kept);
    const FtResult b = solve_ft(p, compacted);
    CHECK(render(b, true) == render(a, true));
    CHECK(assignments_that_evaluate_to_their_cost(p, b) == static_cast<int>(b.points.size()));
    CHECK(b.stats.provenance_records == a.stats.provenance_records);  // records made
    CHECK(b.stats.peak_bytes <= a.stats.peak_bytes);
    compacted_smaller += b.stats.peak_bytes < a.stats.peak_bytes;
  }
  // Repeated layers: replayed steps read handles of compacted factors.
  const Problem deep = repeated_layers(10, 3, 200, true, rng);
  FtOptions kept, compacted;
  kept.compact_records = int64_t{1} << 40;
  compacted.compact_records = 1;
  const FtResult a = solve_ft(deep, kept);
  const FtResult b = solve_ft(deep, compacted);
  CHECK(b.stats.replayed_steps > 0);
  CHECK(render(b, true) == render(a, true));
  CHECK(b.stats.peak_bytes <= a.stats.peak_bytes);
  CHECK(compacted_smaller > 0);
}

TEST_CASE("ft: chains and trees build factors of one node, and degenerate problems") {
  Rng rng(5);
  const Problem chain = random_problem(Shape::kChain, 40, 6, 20, 1, rng);
  const FtResult r = solve_ft(chain);
  CHECK(r.stats.width == 1);
  CHECK(r.stats.largest_factor_entries <= 6 * 6);  // the edge factors
  CHECK(r.stats.entry_evaluations <= 40 * 6 * 6);   // O(n K^2)
  CHECK(r.stats.peak_bytes > 0);

  const FtResult empty = solve_ft(Problem{});
  REQUIRE(empty.points.size() == 1);
  CHECK(empty.points[0].cost == Cost{0, 0});
  CHECK(empty.points[0].assignment.empty());

  // Two disconnected nodes: the frontier is the sum of the two node frontiers.
  Problem two;
  two.node_cost = {{{1, 4}, {3, 1}}, {{0, 2}, {2, 0}}};
  CHECK(render(solve_ft(two)) == "(1,6) (3,3) (5,1) ");
  CHECK(render(solve_ft(two)) == render(solve_brute_force(two)));
}

TEST_CASE("ft: a hand-worked two-node example with a dominating edge") {
  // Node 0: fast/big (1,9) or slow/small (9,1); node 1 the same; moving between unlike
  // configurations costs (5,5) on the edge.
  Problem p;
  p.node_cost = {{{1, 9}, {9, 1}}, {{1, 9}, {9, 1}}};
  p.edges = {{0, 1, {{0, 0}, {5, 5}, {5, 5}, {0, 0}}}};
  const FtResult r = solve_ft(p);
  // Strategies: (0,0) -> (2,18); (1,1) -> (18,2); mixed -> (15,15), not dominated.
  CHECK(render(r, true) == "(2,18)[0,0,] (15,15)[1,0,] (18,2)[1,1,] ");
}

TEST_CASE("ft: invalid problems and options are refused with the culprit named") {
  const auto message_of = [](const Problem& p) {
    try {
      (void)solve_ft(p);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  Problem ok;
  ok.node_cost = {{{1, 1}, {2, 0}}, {{1, 1}}};
  ok.edges = {{0, 1, {{0, 0}, {1, 1}}}};
  CHECK(solve_ft(ok).points.size() == 1);

  Problem p = ok;
  p.node_cost[1].clear();
  CHECK(message_of(p).find("node 1 has no configuration") != std::string::npos);
  p = ok;
  p.edges[0].v = 2;
  CHECK(message_of(p).find("edge 0 (0 -> 2) names a node outside") != std::string::npos);
  p = ok;
  p.edges[0].v = 0;
  CHECK(message_of(p).find("self-loop") != std::string::npos);
  p = ok;
  p.edges[0].cost.pop_back();
  CHECK(message_of(p).find("expected K_u * K_v = 2") != std::string::npos);
  p = ok;
  p.node_cost[0][1].memory = -1;
  CHECK(message_of(p).find("node 0 configuration 1") != std::string::npos);
  p = ok;
  p.edges[0].cost[1].time = NAN;
  CHECK(message_of(p).find("edge 0 (0 -> 1) entry 1") != std::string::npos);
  p = ok;
  p.node_cost[1][0].time = INFINITY;
  CHECK(message_of(p).find("finite") != std::string::npos);
  CHECK_THROWS_AS((void)solve_brute_force(p), std::invalid_argument);

  FtOptions bad;
  bad.epsilon = -0.5;
  CHECK_THROWS_AS((void)solve_ft(ok, bad), std::invalid_argument);
  bad.epsilon = NAN;
  CHECK_THROWS_AS((void)solve_ft(ok, bad), std::invalid_argument);

  CHECK(evaluate(ok, {1, 0}) == Cost{4, 2});
  CHECK_THROWS_AS((void)evaluate(ok, {1}), std::invalid_argument);
  CHECK_THROWS_AS((void)evaluate(ok, {2, 0}), std::invalid_argument);
  CHECK_THROWS_AS((void)evaluate(ok, {0, -1}), std::invalid_argument);
}

TEST_CASE("ft: a factor above max_factor_points is refused, naming its size") {
  Rng rng(3);
  // A complete graph on 10 nodes with 4 configurations: the last factors span 9 nodes.
  Problem dense = random_problem(Shape::kChain, 10, 1, 9, 1, rng);
  dense.edges.clear();
  for (auto& costs : dense.node_cost) costs.assign(4, Cost{1, 1});
  for (int u = 0; u < 10; ++u) {
    for (int v = u + 1; v < 10; ++v) dense.edges.push_back({u, v, std::vector<Cost>(16, Cost{1, 2})});
  }
  FtOptions options;
  options.max_factor_points = 10'000;
  std::string message;
  try {
    (void)solve_ft(dense, options);
  } catch (const std::length_error& e) {
    message = e.what();
  }
  CHECK(message.find("entries") != std::string::npos);
  CHECK(message.find("262144") != std::string::npos);  // 4^9 entries over 9 nodes
  CHECK(message.find("max_factor_points = 10000") != std::string::npos);
  // Refusal also when every factor's entries fit but one factor's points do not.
  const Problem dag = random_problem(Shape::kRandomDag, 8, 4, 1000, 1, rng);
  const FtStats stats = solve_ft(dag).stats;
  REQUIRE(stats.largest_factor_points - 1 >= stats.largest_factor_entries);
  options.max_factor_points = stats.largest_factor_points - 1;
  message.clear();
  try {
    (void)solve_ft(dag, options);
  } catch (const std::length_error& e) {
    message = e.what();
  }
  CHECK(message.find("holding at least") != std::string::npos);
  options.max_factor_points = stats.largest_factor_points;
  CHECK(solve_ft(dag, options).points.size() == solve_brute_force(dag).points.size());

  Problem wide;  // 4^12 strategies: beyond brute force, trivial for FT
  wide.node_cost.assign(12, {{1, 4}, {2, 3}, {3, 2}, {4, 1}});
  CHECK_THROWS_AS((void)solve_brute_force(wide), std::length_error);
  CHECK(solve_ft(wide).points.size() == 37);  // times 12..48, memory 60 - time
}

}  // namespace tensoropt::planner

namespace tensoropt::planner {

// Prints planning times; asserts nothing about time. Run with:
//   ./build/tests/tensoropt_tests -tc='ft: timing*' --no-skip
TEST_CASE("ft: timing of a 200-node chain (K=8) and a 100-node DAG (K=6, degree ~2.5)" *
          doctest::skip()) {
  const auto report = [](const char* name, const Problem& p, double epsilon) {
    FtOptions options;
    options.epsilon = epsilon;
    options.progress = [](const FtProgress& progress) {
      if (progress.seconds > 60) {
        throw std::runtime_error("gave up after 60 s at elimination " +
                                 std::to_string(progress.eliminated) + "/" +
                                 std::to_string(progress.total));
      }
    };
    try {
      const FtResult r = solve_ft(p, options);
      std::printf("%-22s eps=%-5g points=%-6zu width=%d depth=%-3d largest factor %lld entries / "
                  "%lld points, peak %.1f MiB, %.3f s\n",
                  name, epsilon, r.points.size(), r.stats.width, r.stats.depth,
                  static_cast<long long>(r.stats.largest_factor_entries),
                  static_cast<long long>(r.stats.largest_factor_points),
                  static_cast<double>(r.stats.peak_bytes) / (1 << 20), r.stats.seconds);
    } catch (const std::exception& e) {  // the deadline above, or a factor too large
      std::printf("%-22s eps=%-5g %s\n", name, epsilon, e.what());
    }
    std::fflush(stdout);
  };
  const auto independent = [](Rng& rng, int range) {
    return Cost{static_cast<double>(rng.in(0, range)), static_cast<double>(rng.in(0, range))};
  };
  for (int mode = 0; mode < 2; ++mode) {
    Rng rng(2024);
    const int range = mode == 0 ? 100 : 10;
    const auto draw = [&] { return mode == 0 ? independent(rng, range) : draw_cost(rng, range); };
    Problem chain8;
    chain8.node_cost.resize(200);
    for (auto& c : chain8.node_cost) {
      for (int i = 0; i < 8; ++i) c.push_back(draw());
    }
    for (int j = 1; j < 200; ++j) {
      Problem::Edge e{j - 1, j, {}};
      for (int i = 0; i < 64; ++i) e.cost.push_back(draw());
      chain8.edges.push_back(std::move(e));
    }
    // 100 nodes: each takes one input from the 8 nodes before it and, one time in four, a second
    // from anywhere earlier: ~124 edges, average degree ~2.5.
    Problem dag;
    dag.node_cost.resize(100);
    for (auto& c : dag.node_cost) {
      for (int i = 0; i < 6; ++i) c.push_back(draw());
    }
    for (int j = 1; j < 100; ++j) {
      std::vector<int> from{j - 1 - rng.below(std::min(j, 8))};
      if (j >= 2 && rng.below(4) == 0) {
        const int other = rng.below(j);
        if (other != from[0]) from.push_back(other);
      }
      for (int i : from) {
        Problem::Edge e{i, j, {}};
        for (int c = 0; c < 36; ++c) e.cost.push_back(draw());
        dag.edges.push_back(std::move(e));
      }
    }
    std::printf("costs: integers 0..%d, time and memory %s\n", range,
                mode == 0 ? "independent" : "anti-correlated (time + memory ~ constant)");
    for (double eps : {0.0, 0.01}) {
      report("chain n=200 K=8", chain8, eps);
      report("random DAG n=100 K=6", dag, eps);
    }
  }
}

}  // namespace tensoropt::planner
