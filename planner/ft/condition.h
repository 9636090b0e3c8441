// Conditioning: the exact frontier of a Problem too wide for one elimination, as the union of
// narrow Problems, one per configuration of a few fixed nodes (docs/search.md "Wide regions").
//
// Why. A tensor or weight read far apart joins what lies between: a weight that an eval-mode
// export merged across layers (equal initial values), a tied embedding, a mask computed once and
// read by every layer. Eliminating around it builds factors over every node it joins, which can
// pass any budget (MobileNet-v3's merged squeeze-excitation biases join two blocks whose tensors
// have 15 to 22 layouts each: a factor of 148,500 entries). Fixing such a node to one
// configuration folds its edges into its neighbours' costs (fold_independent_edges, problem.h),
// and the rest is narrow again. Every strategy fixes the node somehow, so the union over its
// configurations of the narrowed Problems' frontiers, pruned, is the exact frontier: cutset
// conditioning, with FT inside.
//
// conditioning_nodes(problem, fits, max_branches): nodes chosen greedily until the Problem with
// each of them narrowed to one configuration and folded passes `fits` (how it is eliminated
// depends only on which nodes are fixed, not on which configuration). Each round takes, among
// the nodes in the scopes that fail `scope_fits`, the one in most such scopes per doubling of
// the branches (the count over log2 of its configuration count: fixing it multiplies the solves
// by that count), then the lowest id. Returns nullopt when the product of the chosen nodes' configuration counts (the
// number of branches) would pass max_branches, or when no node is left to fix; an empty vector
// when the Problem already fits.
//
// solve_ft_conditioned(problem, nodes, options): solve_ft's contract (ft.h) for the whole
// Problem, by one solve_ft per assignment of `nodes` (a branch), each handed options.known plus
// every point found before it; a branch whose every strategy those costs beat
// (every_strategy_beaten, branch.h) is left out unsolved. Branches go in this order: those
// holding the fastest or the smallest strategy (weighted_minima, ft_bounds.h), then the others
// by their fastest strategy, ties in assignment order (the last node fastest). The result is the
// Pareto set of all the branches' points, of equal costs the earliest solved one's: exact with
// epsilon 0 (every exact frontier point lies in the branch of its assignment and is dominated by
// no other branch's point), and with epsilon > 0 the guarantee holds as for solve_ft_branched.
// FtStats: sums over the solves, maxima where they are maxima; branches, branches_left_out.
// Thread-safety: as solve_ft. Errors: as solve_ft; std::invalid_argument for a node out of range.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "planner/ft/elimination_order.h"
#include "planner/ft/ft.h"
#include "planner/ft/problem.h"

namespace tensoropt::planner {

using OrderFits = std::function<bool(const Problem&, const EliminationOrder&)>;
using ScopeFits = std::function<bool(const Problem&, const std::vector<int>& scope)>;

[[nodiscard]] std::optional<std::vector<int>> conditioning_nodes(const Problem& problem, const OrderFits& fits,
                                                                 const ScopeFits& scope_fits, double max_branches);

[[nodiscard]] FtResult solve_ft_conditioned(const Problem& problem, const std::vector<int>& nodes,
                                            const FtOptions& options = {});

}  // namespace tensoropt::planner
