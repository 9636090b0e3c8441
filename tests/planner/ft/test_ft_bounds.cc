// FT's scalar companions (outside bounds, weighted optima) against exhaustive enumeration, and FT
// with known strategies against the frontier of a union computed without them.
#include <doctest/doctest.h>

#include <algorithm>
#include <limits>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "planner/ft/elimination_order.h"
#include "planner/ft/ft.h"
#include "planner/ft/ft_bounds.h"
#include "tests/planner/ft/random_problems.h"

namespace tensoropt::planner {
using namespace test;
namespace {

// Which of the Problem's costs each step's factor folds in: node v is item v, edge i is item
// nodes + i. Mirrors the elimination's bookkeeping from its definition (ft.h), not its code.
std::vector<std::set<int>> inside_items(const Problem& p, const EliminationOrder& order) {
  struct Held {
    std::set<int> scope, items;
    bool live = true;
  };
  std::vector<Held> held;
  for (int v = 0; v < p.num_nodes(); ++v) held.push_back({{v}, {v}});
  for (size_t i = 0; i < p.edges.size(); ++i)
    held.push_back({{p.edges[i].u, p.edges[i].v}, {p.num_nodes() + static_cast<int>(i)}});
  std::vector<std::set<int>> out;
  for (int x : order.order) {
    Held made;
    for (Held& h : held) {
      if (!h.live || !h.scope.count(x)) continue;
      h.live = false;
      made.scope.insert(h.scope.begin(), h.scope.end());
      made.items.insert(h.items.begin(), h.items.end());
    }
    made.scope.erase(x);
    out.push_back(made.items);
    held.push_back(made);
  }
  return out;
}

// The cost of the items not in `inside` under assignment a.
Cost outside_cost(const Problem& p, const std::set<int>& inside, const std::vector<int>& a) {
  Cost c;
  for (int v = 0; v < p.num_nodes(); ++v)
    if (!inside.count(v)) c = c + p.node_cost[static_cast<size_t>(v)][static_cast<size_t>(a[static_cast<size_t>(v)])];
  for (size_t i = 0; i < p.edges.size(); ++i) {
    if (inside.count(p.num_nodes() + static_cast<int>(i))) continue;
    const Problem::Edge& e = p.edges[i];
    c = c + e.cost[static_cast<size_t>(a[static_cast<size_t>(e.u)] * p.num_configs(e.v) + a[static_cast<size_t>(e.v)])];
  }
  return c;
}

// Every assignment of the problem, in odometer order.
std::vector<std::vector<int>> all_assignments(const Problem& p) {
  std::vector<std::vector<int>> out;
  std::vector<int> a(static_cast<size_t>(p.num_nodes()), 0);
  while (true) {
    out.push_back(a);
    int v = p.num_nodes() - 1;
    while (v >= 0 && ++a[static_cast<size_t>(v)] == p.num_configs(v)) a[static_cast<size_t>(v--)] = 0;
    if (v < 0) return out;
  }
}

// Whether u beats c the way ft.h's "Known strategies" leaves points out (integer costs: strictly
// faster, no larger).
bool beaten(const std::vector<Cost>& known, Cost c, double factor = 1) {
  return std::any_of(known.begin(), known.end(), [&](Cost u) { return factor * u.time < c.time && factor * u.memory <= c.memory; });
}

// The Pareto set of a list of costs, time ascending.
std::vector<Cost> pareto(std::vector<Cost> all) {
  std::sort(all.begin(), all.end(), [](Cost a, Cost b) { return a.time != b.time ? a.time < b.time : a.memory < b.memory; });
  std::vector<Cost> kept;
  for (Cost c : all)
    if (kept.empty() || c.memory < kept.back().memory) kept.push_back(c);
  return kept;
}


// Checks every step's outside bounds against enumeration; returns the entries checked.
int check_outside_bounds(const Problem& p) {
  const EliminationOrder order = greedy_elimination_order(p);
  const OutsideBounds bounds = outside_bounds(p, order);
  const std::vector<std::set<int>> inside = inside_items(p, order);
  const auto assignments = all_assignments(p);
  REQUIRE(bounds.step.size() == order.order.size());
  int checked = 0;
  for (size_t step = 0; step < order.order.size(); ++step) {
    const std::vector<int>& scope = order.scopes[step];
    size_t entries = 1;
    for (int v : scope) entries *= static_cast<size_t>(p.num_configs(v));
    REQUIRE(bounds.step[step].size() == entries);
    constexpr double kInf = std::numeric_limits<double>::infinity();
    std::vector<Cost> least(entries, Cost{kInf, kInf});
    for (const auto& a : assignments) {
      size_t entry = 0;
      for (int v : scope) entry = entry * static_cast<size_t>(p.num_configs(v)) + static_cast<size_t>(a[static_cast<size_t>(v)]);
      const Cost c = outside_cost(p, inside[step], a);
      least[entry] = {std::min(least[entry].time, c.time), std::min(least[entry].memory, c.memory)};
    }
    for (size_t e = 0; e < entries; ++e) {
      CHECK(bounds.step[step][e] == least[e]);
      ++checked;
    }
  }
  return checked;
}

// Checks that weighted_optima's assignments reach the least weighted sum of any strategy.
void check_weighted_optima(const Problem& p) {
  const EliminationOrder order = greedy_elimination_order(p);
  const std::vector<Cost> weights = {{1, 0}, {0, 1}, {1, 1}, {1, 0.25}, {3, 1}};
  const std::vector<std::vector<int>> optima = weighted_optima(p, order, weights);
  REQUIRE(optima.size() == weights.size());
  for (size_t o = 0; o < weights.size(); ++o) {
    const Cost got = evaluate(p, optima[o]);
    double best = std::numeric_limits<double>::infinity();
    for (Cost c : all_strategy_costs(p)) best = std::min(best, weights[o].time * c.time + weights[o].memory * c.memory);
    CHECK(weights[o].time * got.time + weights[o].memory * got.memory == best);
  }
}

}  // namespace

TEST_CASE("ft bounds: outside bounds are the exact least time and memory of what each factor leaves out") {
  Rng rng(77);
  int checked = 0;
  for (int round = 0; round < 12; ++round) {
    for (int s = 0; s < static_cast<int>(Shape::kCount); ++s) {
      const Shape shape = static_cast<Shape>(s);
      const Problem p = random_problem(shape, rng.in(2, 7), /*max_k=*/3, /*range=*/9, 1, rng);
      CAPTURE(shape_name(shape));
      CAPTURE(round);
      checked += check_outside_bounds(p);
    }
    // Repeated layers: their inner steps repeat, and the elimination takes the recorded tables.
    CAPTURE(round);
    checked += check_outside_bounds(repeated_layers(3, 2 + round % 2, 9, /*tie=*/true, rng));
  }
  CHECK(checked > 300);
}

TEST_CASE("ft bounds: weighted optima are exact minima of the weighted sum") {
  Rng rng(78);
  for (int round = 0; round < 8; ++round) {
    for (int s = 0; s < static_cast<int>(Shape::kCount); ++s) check_weighted_optima(random_problem(static_cast<Shape>(s), rng.in(2, 7), 3, 9, 1, rng));
    check_weighted_optima(repeated_layers(3, 2 + round % 2, 9, /*tie=*/true, rng));
  }
  const Problem p = random_problem(Shape::kChain, 3, 2, 9, 1, rng);
  const EliminationOrder order = greedy_elimination_order(p);
  CHECK_THROWS_AS((void)weighted_optima(p, order, {{0, 0}}), std::invalid_argument);
  CHECK_THROWS_AS((void)weighted_optima(p, order, {{1, 1}, {-1, 1}}), std::invalid_argument);
}

TEST_CASE("ft bounds: a partial point above KnownCosts::ceiling is left out by the exact test") {
  // Costs with fractions (so memory sums round) and with whole numbers, points on and near the
  // ceiling's corners, with and without epsilon: above the ceiling must imply beaten.
  Rng rng(80);
  int above = 0, near_miss = 0;
  for (int round = 0; round < 40; ++round) {
    Problem p = random_problem(Shape::kRandomDag, 6, 3, 20, 1, rng);
    const bool fractional = round % 2 == 0;
    if (fractional)
      for (auto& costs : p.node_cost)
        for (Cost& c : costs) c = {c.time * 1.0e-3 + 1.0 / 3, c.memory * 1.1e9 + 0.7};
    const EliminationOrder order = greedy_elimination_order(p);
    std::vector<Cost> known;
    for (int i = 0; i < 5; ++i) known.push_back(evaluate(p, random_assignment(p, rng)));
    const double epsilon = round % 4 < 2 ? 0 : 0.01;
    const KnownCosts k(p, order, known, epsilon);
    const OutsideBounds bounds = outside_bounds(p, order);
    for (size_t step = 0; step < order.order.size(); ++step) {
      for (size_t e = 0; e < bounds.step[step].size(); ++e) {
        const SumCeiling c = k.ceiling(step, e);
        for (Cost u : c.points) {
          const Cost corner{c.time_scale * u.time + c.time_shift, c.memory_scale * u.memory + c.memory_shift};
          for (double dt : {0.0, 1e-15, 1e-9, 1e-3})
            for (double dm : {0.0, 1e-15, 1e-9, 1e-3}) {
              const Cost q{std::max(0.0, corner.time) * (1 + dt) + dt, std::max(0.0, corner.memory) * (1 + dm) + dm};
              if (!(q.time >= corner.time && q.memory >= corner.memory)) continue;
              ++above;
              CHECK(k.beat_every_completion(q, step, e));
            }
          // Just below the corner in time (by more than the margins): not above this step of the
          // ceiling, and the exact test may go either way; it must not be above any other step.
          const Cost below{corner.time - 1e-6 * (std::abs(corner.time) + 1), corner.memory};
          near_miss += !k.beat_every_completion(below, step, e);
        }
      }
    }
  }
  CHECK(above > 1000);
  CHECK(near_miss > 0);  // the corners are where the exact test starts to leave points out
}

TEST_CASE("ft: known strategies leave out only points they strictly dominate, the union's frontier is unchanged") {
  Rng rng(79);
  int problems = 0, pruned = 0;
  for (int round = 0; round < 24; ++round) {
    for (int s = 0; s < static_cast<int>(Shape::kCount); ++s) {
      const Shape shape = static_cast<Shape>(s);
      const int n = rng.in(3, 8);
      // Two spaces of one model (two meshes, say): the second solved knowing the first's frontier
      // and a few of its own strategies.
      const Problem first = random_problem(shape, n, 4, 20, 1, rng);
      const Problem second = random_problem(shape, n, 4, 20, 1, rng);
      CAPTURE(shape_name(shape));
      CAPTURE(round);
      const FtResult a = solve_ft(first);
      const FtResult b = solve_ft(second);
      FtOptions options;
      options.known = costs(a);
      for (int i = 0; i < 3; ++i) options.known.push_back(evaluate(second, random_assignment(second, rng)));
      const FtResult bounded = solve_ft(second, options);
      CHECK(sorted_and_non_dominated(bounded));
      CHECK(assignments_that_evaluate_to_their_cost(second, bounded) == static_cast<int>(bounded.points.size()));
      // Exactly the exact points that no known cost beats.
      std::vector<Cost> expected;
      for (Cost c : costs(b))
        if (!beaten(options.known, c)) expected.push_back(c);
      const std::vector<Cost> got = costs(bounded);
      CHECK(got == expected);
      pruned += got.size() < b.points.size();
      // The union's frontier is the same with and without.
      std::vector<Cost> with = costs(a), without = costs(a);
      with.insert(with.end(), got.begin(), got.end());
      const std::vector<Cost> all_b = costs(b);
      without.insert(without.end(), all_b.begin(), all_b.end());
      CHECK(pareto(with) == pareto(without));
      ++problems;
    }
  }
  CHECK(problems == 120);
  CHECK(pruned > 30);  // the bounds really leave points out
}

TEST_CASE("ft: with known strategies and epsilon, the union is still covered within (1+epsilon)") {
  Rng rng(80);
  int pruned = 0;
  for (double epsilon : {0.05, 0.3}) {
    for (int i = 0; i < 20; ++i) {
      const Shape shape = static_cast<Shape>(i % static_cast<int>(Shape::kCount));
      const int n = shape == Shape::kRandomDag ? 7 : 12;
      const Problem first = random_problem(shape, n, 4, 1000, 1, rng);
      const Problem second = random_problem(shape, n, 4, 1000, 1, rng);
      CAPTURE(epsilon);
      CAPTURE(shape_name(shape));
      FtOptions options;
      options.epsilon = epsilon;
      const FtResult a = solve_ft(first, options);
      options.known = costs(a);
      const FtResult b = solve_ft(second, options);
      FtOptions plain;
      plain.epsilon = epsilon;
      pruned += b.points.size() < solve_ft(second, plain).points.size();
      FtResult merged;
      for (const FtResult* r : {&a, &b})
        for (const FrontierPoint& p : r->points) merged.points.push_back(p);
      std::vector<Cost> front = pareto(costs(merged));
      merged.points.clear();
      for (Cost c : front) merged.points.push_back({c, {}});
      int uncovered = 0;
      for (const FtResult& exact : {solve_ft(first), solve_ft(second)})
        for (const FrontierPoint& p : exact.points) uncovered += !weakly_covered(merged, p.cost, 1 + epsilon);
      CHECK(uncovered == 0);
    }
  }
  CHECK(pruned > 5);
}

TEST_CASE("ft: a working set above max_bytes is refused with FtMemoryLimit") {
  Rng rng(82);
  const Problem p = random_problem(Shape::kSkips, 40, 4, 1000, 1, rng);
  const FtResult free_run = solve_ft(p);
  FtOptions options;
  options.max_bytes = free_run.stats.peak_bytes;
  CHECK(solve_ft(p, options).points.size() == free_run.points.size());  // the peak itself fits
  options.max_bytes = free_run.stats.peak_bytes / 4;
  CHECK_THROWS_AS((void)solve_ft(p, options), FtMemoryLimit);
  options.max_bytes = -1;
  CHECK_THROWS_AS((void)solve_ft(p, options), std::invalid_argument);
}

TEST_CASE("ft: known costs must be finite and non-negative") {
  Rng rng(81);
  const Problem p = random_problem(Shape::kChain, 4, 3, 9, 1, rng);
  FtOptions options;
  options.known = {{-1, 3}};
  CHECK_THROWS_AS((void)solve_ft(p, options), std::invalid_argument);
  options.known = {{1, std::numeric_limits<double>::infinity()}};
  CHECK_THROWS_AS((void)solve_ft(p, options), std::invalid_argument);
}

}  // namespace tensoropt::planner

namespace tensoropt::planner {
namespace {
using namespace test;

TEST_CASE("ft: an elimination order and outside bounds given by the caller give the same result, wrong ones are refused") {
  Rng rng(4242);
  for (int round = 0; round < 10; ++round) {
    for (int s = 0; s < static_cast<int>(Shape::kCount); ++s) {
      const Problem p = random_problem(static_cast<Shape>(s), rng.in(3, 9), 4, 20, 1, rng);
      CAPTURE(shape_name(static_cast<Shape>(s)));
      FtOptions own;
      for (int i = 0; i < 3; ++i) own.known.push_back(evaluate(p, random_assignment(p, rng)));
      FtOptions given = own;
      given.order = std::make_shared<const EliminationOrder>(greedy_elimination_order(p));
      given.bounds = std::make_shared<const OutsideBounds>(outside_bounds(p, *given.order));
      CHECK(render(solve_ft(p, given), true) == render(solve_ft(p, own), true));
    }
  }
  // The depth the epsilon guarantee rests on is recomputed, not taken from the caller.
  {
    const Problem p = random_problem(Shape::kSkips, 9, 4, 20, 1, rng);
    FtOptions own;
    own.epsilon = 0.05;
    EliminationOrder lying = greedy_elimination_order(p);
    lying.depth = 1;
    FtOptions given = own;
    given.order = std::make_shared<const EliminationOrder>(lying);
    const FtResult a = solve_ft(p, own);
    const FtResult b = solve_ft(p, given);
    CHECK(b.stats.depth == a.stats.depth);
    CHECK(render(b, true) == render(a, true));
  }
  // A chain 0-1-2-3: eliminating 1 first has scope {0, 2}, not {0}.
  const Problem chain = random_problem(Shape::kChain, 4, 3, 20, 1, rng);
  EliminationOrder wrong = greedy_elimination_order(chain);
  wrong.order = {1, 0, 2, 3};
  wrong.scopes = {{0}, {2}, {3}, {}};
  FtOptions bad;
  bad.order = std::make_shared<const EliminationOrder>(wrong);
  CHECK_THROWS_AS((void)solve_ft(chain, bad), std::invalid_argument);
  FtOptions short_order;
  EliminationOrder half = greedy_elimination_order(chain);
  half.order.pop_back();
  half.scopes.pop_back();
  short_order.order = std::make_shared<const EliminationOrder>(half);
  CHECK_THROWS_AS((void)solve_ft(chain, short_order), std::invalid_argument);
  // Bounds of another order (one step short) are refused too.
  FtOptions mismatched;
  mismatched.known = {evaluate(chain, random_assignment(chain, rng))};
  mismatched.order = std::make_shared<const EliminationOrder>(greedy_elimination_order(chain));
  OutsideBounds b = outside_bounds(chain, *mismatched.order);
  b.step.pop_back();
  mismatched.bounds = std::make_shared<const OutsideBounds>(b);
  CHECK_THROWS_AS((void)solve_ft(chain, mismatched), std::invalid_argument);
}

}  // namespace
}  // namespace tensoropt::planner
