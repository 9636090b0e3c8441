#include "planner/search/hull.h"

#include <cmath>

#include "planner/ft/ft_bounds.h"

namespace tensoropt::planner {

namespace {

// The weights of the fastest and of the smallest strategy.
const std::vector<Cost> kHullEnds = {{1, 1e-18}, {1e-18, 1}};

}  // namespace

std::vector<std::vector<int>> hull_end_strategies(const Problem& problem, const EliminationOrder& order) {
  return weighted_optima(problem, order, kHullEnds);
}

Hull hull_ends(const Problem& problem, const std::vector<std::vector<int>>& ends) {
  Hull hull;
  const Cost fastest = evaluate(problem, ends[0]);
  const Cost smallest = evaluate(problem, ends[1]);
  hull.costs = {fastest, smallest};
  hull.strategies = {ends[0], ends[1]};
  if (fastest.memory <= smallest.memory) return hull;
  const double slope = (smallest.time - fastest.time) / (fastest.memory - smallest.memory);
  if (slope > 0 && std::isfinite(slope)) hull.slope = slope;
  return hull;
}

void hull_fill(const Problem& problem, const EliminationOrder& order, Hull& hull) {
  if (hull.slope <= 0) return;
  std::vector<Cost> weights;
  for (double f : {1.0 / 64, 1.0 / 16, 1.0 / 4, 1.0, 4.0, 16.0, 64.0}) weights.push_back({1, hull.slope * f});
  for (std::vector<int>& a : weighted_optima(problem, order, weights)) {
    hull.costs.push_back(evaluate(problem, a));
    hull.strategies.push_back(std::move(a));
  }
}

}  // namespace tensoropt::planner
