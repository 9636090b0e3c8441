// Elimination order for FT: greedy min-fill, ties broken by an estimate of the step's work, then
// by min-size, then by lowest node id.
//
// Works on the interaction graph (nodes adjacent when an edge of the Problem joins them). At each
// step it eliminates the remaining node whose elimination adds the fewest new adjacencies among
// its neighbours (fill); among those, the one of least estimated work (below); then the one whose
// neighbours' configuration counts have the smallest product (the entries of the factor it
// builds); then the lowest id. Its neighbours become a clique.
// Estimated work, in logs: entries / own configuration count x sqrt(1 + F) x (1 + S), where F
// is the number of nodes already folded into the factors the step consumes and S the count of
// the second largest of them. Why: a factor entry's frontier grows with the trade-offs folded
// into it (each op's recompute, each parameter's ZeRO choice), so F stands for the size of what
// is built; adding a small frontier to a big one costs about the points built, but summing two
// big ones costs far more per point (frontier.h union_of_sums), hence S. The ratio of entries to
// own configurations prefers to eliminate nodes with many configurations and to keep those with
// few in later scopes: around a cycle (a model whose embedding and output layers share a
// weight) one node stays in every factor's scope, and this makes it one with few
// configurations. With F, a chain of layers is folded into segments that are then joined, rather
// than each layer being added in turn to one frontier that grows all along (GPT-2 XL on 8 GPUs,
// measured before the ZeRO cost correction: 3.0 M factor points built instead of 14.2 M). On a chain or a tree it
// always eliminates a leaf first (fill 0), so FT does O(n K^2) factor work there.
// Deterministic. Thread-safety: pure function. Errors: none beyond std::bad_alloc.
#pragma once

#include <vector>

#include "planner/ft/problem.h"

namespace tensoropt::planner {

struct EliminationOrder {
  std::vector<int> order;                // every node once, in elimination order
  std::vector<std::vector<int>> scopes;  // [step] sorted neighbours of order[step] when eliminated
  int width = 0;   // max scope size (induced width of the order)
  int depth = 0;   // height of the elimination tree: the most eliminations along one derivation
};

[[nodiscard]] EliminationOrder greedy_elimination_order(const Problem& problem);

// The scopes, width and depth of eliminating `problem` in `order`, as greedy_elimination_order
// reports them for its own order. Throws std::invalid_argument unless `order` is a permutation of
// the problem's nodes.
[[nodiscard]] EliminationOrder elimination_order_of(const Problem& problem, const std::vector<int>& order);

}  // namespace tensoropt::planner
