// FT with branching on the carried node, and whole-Problem dominance proofs (docs/design.md "FT (frontier tracking)").
//
// Why. Around a cycle one node stays in the scope of every factor from both ends of the cycle to
// where they meet (ft.h, elimination_order.h): GPT-2's tied embedding, whose Transpose is in
// scope from the first layer and from the LM head to the middle of the model. Every factor there
// holds one frontier per configuration of that node, built side by side, so known costs found
// late cannot leave any of them out. Branching solves the most promising configurations of the
// carried node first; the others then know that frontier, and one whose every strategy a known
// cost beats is not solved at all. On GPT-2 XL at batch 4 on 8 GPUs the first configuration
// holds the whole frontier and the other three are left out: FT 3.3 s to 1.4 s a mesh.
//
// every_strategy_beaten(problem, order, known, epsilon): true only when every strategy of the
// Problem is beaten by a known cost as FT's known-cost test counts it (ft.h "Known
// strategies"; here with the memory margin always, which is stricter). How: a strategy no known
// cost beats lies strictly below-left of one "notch" of the known staircase (the corner between
// two consecutive known costs, or beyond either end). Each weighted minimum W(w) = min over
// strategies of w.time * time + w.memory * memory (weighted_minima, exact up to rounding) bounds
// every strategy from below, so a notch n with w.n <= W(w) (less a relative 1e-9 for rounding)
// holds no strategy. The weights are chosen in rounds: the ends alone (time alone, memory
// alone), then seven slopes spread around the staircase's, then the staircase's local slope at
// each notch still open (at most 16 a round, 5 rounds); false as soon as an end stays open, when
// a round of local slopes closes under a tenth of the open notches (they lie in the staircase's
// non-convex bays), or after the last round. Work: a few min-plus eliminations of up to 16
// weights each, holding only live tables (weighted_minima): milliseconds to tens of
// milliseconds on a transformer.
//
// solve_ft_branched(problem, options): solve_ft's contract (ft.h). Exact (epsilon 0), the same
// points and costs; among strategies of equal cost it may return another one. With epsilon > 0
// the solves thin separately, so the points may differ from solve_ft's, but the epsilon
// guarantee holds (a point left out on account of a found point u has (1+epsilon) u below it, and
// u is in the result). The carried node x is
// the one in the scope of the most factors of two or more nodes, when that is at least
// kMinCarried of them. Its configurations that hold the fastest or the smallest strategy (found
// by node_minima, ft_bounds.h) lead; the others could be beaten by them. Only when the leaders are
// at most a third of x's configurations does it branch: the Problem narrowed to the leaders is
// solved first (solve_ft, with options.known), then each other configuration alone is left out
// when every_strategy_beaten by options.known and the leaders' points, and those that are not
// are solved together, knowing all of those. Otherwise (no carried node, or many leaders, where
// the first solve would be most of the work) it is solve_ft on the whole Problem, or nothing when
// every_strategy_beaten by options.known. The result is the Pareto set of the solves' points,
// among equal costs the lowest configuration of x first: every exact frontier point that no
// known cost beats lies in some solve and is not left out by another solve's point (which would
// dominate it strictly). FtStats: sums over the solves, maxima where they are maxima;
// stats.branches counts the solves, stats.branches_left_out the configurations of x (or the
// whole Problem, as 1) that were left out unsolved.
//
// Thread-safety: as solve_ft. Errors: as solve_ft (validate() and validate_options() first).
#pragma once

#include <vector>

#include "planner/ft/elimination_order.h"
#include "planner/ft/ft.h"
#include "planner/ft/problem.h"

namespace tensoropt::planner {

inline constexpr int kMinCarried = 8;

[[nodiscard]] bool every_strategy_beaten(const Problem& problem, const EliminationOrder& order,
                                         const std::vector<Cost>& known, double epsilon);

// every_strategy_beaten for each configuration k in `configs` of `node` (the Problem narrowed to
// node = k), by the same proof with one elimination a round for all of them (node_minima).
[[nodiscard]] std::vector<bool> configurations_beaten(const Problem& problem, const EliminationOrder& order, int node,
                                                      const std::vector<int>& configs, const std::vector<Cost>& known,
                                                      double epsilon);

// The node in the scope of the most factors of two or more nodes, when that is at least
// kMinCarried of them; else -1.
[[nodiscard]] int carried_node(const EliminationOrder& order);

[[nodiscard]] FtResult solve_ft_branched(const Problem& problem, const FtOptions& options = {});

}  // namespace tensoropt::planner
