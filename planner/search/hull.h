// A few strategies of a Problem that are optimal for weighted sums of time and memory (the
// frontier's convex hull, coarsely): FT is told their costs as known strategies (ft.h "Known
// strategies"), so it leaves out what they strictly dominate, and the planner orders the meshes by
// the fastest of them (planner/plan.h "Solving").
// Thread-safety: pure functions of their arguments, but hull_fill, which writes its `hull`.
#pragma once

#include <vector>

#include "planner/ft/elimination_order.h"
#include "planner/ft/problem.h"

namespace tensoropt::planner {

// hull_ends: the fastest and the smallest, and the exchange rate between them (seconds per byte)
// that makes both equally good; hull_fill: the optima for weights spread around that rate.
struct Hull {
  std::vector<Cost> costs;                   // Problem costs
  std::vector<std::vector<int>> strategies;  // [cost] the strategy that has it
  double slope = 0;                          // 0 when the fastest is also the smallest
};

// The fastest and the smallest strategy: weighted_optima (planner/ft/ft_bounds.h) for their weights.
std::vector<std::vector<int>> hull_end_strategies(const Problem& problem, const EliminationOrder& order);

// `ends`: hull_end_strategies(problem, order).
Hull hull_ends(const Problem& problem, const std::vector<std::vector<int>>& ends);

void hull_fill(const Problem& problem, const EliminationOrder& order, Hull& hull);

}  // namespace tensoropt::planner
