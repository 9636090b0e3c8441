// Elimination order for FT: greedy min-fill, ties broken by min-size, then by lowest node id.
//
// Works on the interaction graph (nodes adjacent when an edge of the Problem joins them). At each
// step it eliminates the remaining node whose elimination adds the fewest new adjacencies among
// its neighbours (fill), then whose neighbours' configuration counts have the smallest product
// (the entries of the factor it builds), then the lowest id; its neighbours become a clique. On a
// chain or a tree it always eliminates a leaf, so FT does O(n K^2) factor work there.
// Deterministic. Thread-safety: pure function. Errors: none beyond std::bad_alloc.
#pragma once

#include <vector>

#include "planner/problem.h"

namespace tensoropt::planner {

struct EliminationOrder {
  std::vector<int> order;                // every node once, in elimination order
  std::vector<std::vector<int>> scopes;  // [step] sorted neighbours of order[step] when eliminated
  int width = 0;   // max scope size (induced width of the order)
  int depth = 0;   // height of the elimination tree: the most eliminations along one derivation
};

[[nodiscard]] EliminationOrder greedy_elimination_order(const Problem& problem);

}  // namespace tensoropt::planner
