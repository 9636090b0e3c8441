// Elimination order for FT: greedy min-fill, ties broken by the smallest ratio of the factor's
// entries to the node's configurations, then by min-size, then by lowest node id.
//
// Works on the interaction graph (nodes adjacent when an edge of the Problem joins them). At each
// step it eliminates the remaining node whose elimination adds the fewest new adjacencies among
// its neighbours (fill), then the one for which the product of its neighbours' configuration
// counts (the entries of the factor it builds) divided by its own count is smallest, then the
// smallest product, then the lowest id; its neighbours become a clique. The ratio prefers to
// eliminate nodes with many configurations and to keep those with few in later scopes: around a
// cycle (a model whose embedding and output layers share a weight) one node stays in every
// factor's scope, and this makes it one with few configurations. On a chain or a tree it always
// eliminates a leaf, so FT does O(n K^2) factor work there.
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
