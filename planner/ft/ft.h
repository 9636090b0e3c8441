// FT (frontier tracking): the exact Pareto frontier of a Problem's strategy costs, by variable
// elimination with frontier-valued factors (docs/design.md "FT (frontier tracking)").
//
// A factor maps each assignment of its scope (a few nodes) to a Frontier. The initial factors are
// one per node and one per edge. Eliminating node x takes every factor whose scope holds x, for
// each configuration of x Minkowski-sums their frontiers, takes the Pareto union over x's
// configurations, and leaves one factor over x's neighbours. Nodes go in the order of
// greedy_elimination_order (planner/ft/elimination_order.h), or options.order's. Each point's handle points into a
// provenance arena (planner/ft/provenance.h) that rebuilds its full assignment at the end.
// Work is about (number of entries of each built factor) x K_x x (frontier sum cost): O(n K^2)
// factor work on a chain or a tree; exponential in the order's width on dense graphs, where
// max_factor_points refuses instead of exhausting memory.
//
// How an entry is built (the same sums as the definition, so the same frontier): per
// configuration k of x the consumed cells are added left to right, the factors with fewest points
// first, then in creation order (which fixes the rounding). The sum of all but the last cell (the
// prefix) depends only on k and the scope nodes those cells hold, so it is built once per
// distinct value and shared by the entries; the last cell, usually the big factor carried along
// the graph, is only visited lazily.
// Configurations whose prefix and last cell another configuration covers (frontier.h coverage())
// are left out: their sums are dominated, and the rule that of equal costs the lowest k wins is
// kept (left out by a higher k only when strictly covered). The remaining last additions and
// the union over k are one lazy merge (frontier.h union_of_sums) that skips sums that cannot
// survive. Factors store their entries' points in one flat array. The entries of big factors are
// built on options.threads threads; their provenance records are made afterwards in entry order,
// so the result does not depend on the number of threads.
//
// Repeated steps. A model's repeated layers make elimination steps that consume factors of the
// same content: the same configuration counts and places in the scope, and bit for bit the same
// costs. Such a step computes the same folds and keeps the same sums, only their provenance
// differs. The second step with a given content (its hash seen before, the factors together at
// most 2^15 points) records its work as positions into its factors; every later step whose content
// equals a record's, compared whole, replays it: the recorded sums read against its own factors'
// handles, then pruned by known costs as its own (those depend on the step). The result is the
// one computing every step gives (options.reuse = false), provenance records aside. Records count
// in the working set (so with max_bytes a solve may stop where computing every step would not).
//
// Epsilon. With epsilon = 0 (default) the result is the exact frontier. With epsilon > 0 every
// built factor entry is epsilon_prune'd with delta = (1+epsilon)^(1/L) - 1, L = the depth of the
// elimination tree (EliminationOrder::depth). Why that suffices: by induction over the order, for
// every point p of an exact factor entry built at elimination-tree height h, the pruned entry holds
// q with q <= (1+delta)^h p in both coordinates. p is a sum of points p_j of the consumed exact
// entries (height < h), each approximated by q_j <= (1+delta)^(h-1) p_j; because costs are
// non-negative, sum q_j <= (1+delta)^(h-1) p; exact dominance pruning only replaces a point by
// one no worse; the one epsilon_prune of this entry adds one factor (1+delta). The final sum of
// the (scope-free) factors of disconnected components is pruned exactly. Hence for every exact
// frontier point p some returned q has q.time <= (1+epsilon) p.time and q.memory <=
// (1+epsilon) p.memory. Every returned point is an actual strategy, costed by evaluate().
//
// Known strategies. With options.known non-empty, every built entry leaves out the points whose
// every completion is beaten by a known cost u: with lb = the point plus the entry's outside
// bounds (planner/ft/ft_bounds.h: the least time and the least memory of everything not yet folded
// in), left out when (1+epsilon) u.time <= (1 - 1e-9) lb.time and (1+epsilon) u.memory <= lb.memory
// (when every memory cost is a whole number, so sums are exact; else also with the 1e-9 margin).
// Every completion c of such a point then has (1+epsilon) u strictly faster than c and no larger,
// whatever order c's sum is rounded in. Exact, the entry's merge (union_of_sums) already skips
// the sums surely left out (KnownCosts::ceiling, a margin wider than any rounding), so dominated
// meshes and the slow ends of frontiers cost little; the exact test then decides the rest. Exact (epsilon = 0): the result holds every exact frontier
// point that no known cost beats that way, and only exact frontier points; the points left out
// are strictly dominated by a known strategy, so the frontier of the union with the Problems the
// known costs came from is unchanged. With epsilon: for every strategy c of the union, its
// merged frontier has a point within (1+epsilon) c (by induction on c's time: a point left out
// on account of u has every completion above (1+epsilon) u, and u is faster).
//
// Result: points sorted by time strictly ascending, memory strictly descending, each with the
// assignment that achieves it and the cost evaluate() gives that assignment. Deterministic: the
// same Problem and options give the identical result.
// Thread-safety: solve_ft touches only its arguments; concurrent calls are safe if the progress
// callbacks are. It may start up to options.threads threads of its own, joined before it
// returns. Errors: std::invalid_argument for an invalid Problem (see validate) or options;
// std::length_error, naming the factor, when a factor would exceed max_factor_points; FtMemoryLimit
// (a std::length_error) when factors and provenance together would pass max_bytes; FtWorkLimit (a
// std::length_error) when the points built pass max_points_built.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <vector>

#include "planner/ft/elimination_order.h"
#include "planner/ft/frontier.h"
#include "planner/ft/ft_bounds.h"
#include "planner/ft/problem.h"

namespace tensoropt::planner {

struct FtProgress {
  int eliminated = 0;        // nodes eliminated so far
  int total = 0;             // nodes in the problem
  int64_t factor_bytes = 0;  // bytes now held by factors and provenance
  double seconds = 0;        // since solve_ft started
};

struct FtOptions {
  double epsilon = 0;  // 0: exact; > 0: the guarantee in this header's contract
  // Called after every elimination (on the calling thread); the caller decides when to print.
  // An exception it throws aborts the solve and propagates out of solve_ft (a deadline, say).
  std::function<void(const FtProgress&)> progress;
  // Refuse a factor holding more frontier points than this (24 bytes each, plus entry overhead).
  int64_t max_factor_points = int64_t{1} << 25;
  // Refuse when the working set (FtProgress::factor_bytes) passes this; 0: no limit.
  int64_t max_bytes = 0;
  // Refuse (FtWorkLimit) once the points of the factors built so far, summed over the
  // eliminations (FtStats::points_built), pass this: a budget of work that does not depend on
  // the machine or its load; 0: no limit. Checked after each elimination.
  int64_t max_points_built = 0;
  // Threads that build the entries of big factors and rebuild a big result's strategies; 0: one
  // per hardware thread. The result does not depend on it.
  int threads = 0;
  // Costs of strategies known to exist (evaluate()d costs of this Problem's strategies, or of
  // other Problems' whose frontiers are merged with this one, in the same cost space). See
  // "Known strategies" above. Empty: nothing is left out on their account.
  std::vector<Cost> known;
  // The elimination order, and with known costs its outside bounds, when the caller has them
  // (plan computes both while it builds the strategy spaces, in parallel). Null: FT computes
  // greedy_elimination_order(problem) and outside_bounds(problem, order) itself. FT recomputes the
  // order's scopes, width and depth from its sequence of nodes (elimination_order_of) and throws
  // std::invalid_argument when that is not a permutation of the nodes, when the scopes differ, or
  // when the bounds' shape does not fit the order. REQUIRES: bounds == outside_bounds(problem,
  // *order) (their values are not checked).
  std::shared_ptr<const EliminationOrder> order;
  std::shared_ptr<const OutsideBounds> bounds;
  // Replay steps whose content repeats an earlier step's (see "Repeated steps" above). The result
  // does not depend on it, except that records count in max_bytes; false is for tests and
  // measurements.
  bool reuse = true;
  // Between steps, once the provenance arena holds this many records and twice as many as after
  // its last compaction, the records no factor's point reaches are dropped (provenance.h
  // compact()). The result does not depend on it; peak_bytes does. Small values are for tests.
  int64_t compact_records = int64_t{1} << 20;
  // A final frontier of more than thin_above points (0: never) is thinned before its strategies
  // are rebuilt: in time order, a point within (1 + thin_epsilon) of the last one kept in memory
  // (and so in both coordinates) is left out, so every frontier point is within that factor of a
  // kept one (up to the rounding between the elimination's sums and evaluate()'s).
  // FtStats::thinned says it happened. For a caller that needs a bound, not every point
  // (relax.h): rebuilding tens of thousands of strategies is then most of the time and memory.
  size_t thin_above = 0;
  double thin_epsilon = 0;
};

struct FrontierPoint {
  Cost cost;
  std::vector<int> assignment;  // [node] configuration
};

struct FtStats {
  int width = 0;                     // induced width of the elimination order
  int depth = 0;                     // elimination-tree depth (L in the epsilon contract)
  double delta = 0;                  // per-step epsilon_prune factor used
  int64_t largest_factor_entries = 0;  // over all factors, the initial edge factors included
  int64_t entry_evaluations = 0;  // sum over eliminations of built entries x K_x: factor work
  int64_t largest_factor_points = 0;
  int64_t points_built = 0;          // points of every factor built by an elimination, summed
  int64_t peak_bytes = 0;  // factors (entries, points, a few reused buffers) plus provenance records
  int64_t provenance_records = 0;  // records made, those compacted away included
  int parallel_steps = 0;            // eliminations whose entries were built on several threads
  int replayed_steps = 0;            // eliminations that replayed an earlier one's (options.reuse)
  int branches = 0;                  // solve_ft_branched (branch.h): FT solves
  int branches_left_out = 0;         // and what it left out unsolved, every strategy beaten
  bool thinned = false;              // FtOptions::thin_above passed: the result was thinned
  double seconds = 0;
};

// Adds a solve's stats to a total over several solves (branch.h, condition.h): sums of work, the
// maxima of sizes. Leaves seconds, branches and branches_left_out to the caller.
void accumulate(FtStats& total, const FtStats& s);

struct FtResult {
  std::vector<FrontierPoint> points;  // time strictly ascending, memory strictly descending
  FtStats stats;
};

struct FtMemoryLimit : std::length_error {
  using std::length_error::length_error;
};

// max_points_built passed: the solve would take more work than its budget.
struct FtWorkLimit : std::length_error {
  using std::length_error::length_error;
};

[[nodiscard]] FtResult solve_ft(const Problem& problem, const FtOptions& options = {});

// For solvers made of several solve_ft calls: the max_points_built to hand the next one when
// `spent` points were built before it, so that all together stay within options.max_points_built
// (0: no budget; at least 1 otherwise, so a spent budget refuses at the first point built).
[[nodiscard]] int64_t points_left(const FtOptions& options, int64_t spent);

// The option checks solve_ft makes (epsilon finite and >= 0, max_bytes >= 0, max_factor_points
// >= 1, threads >= 0, every known cost finite and >= 0): std::invalid_argument naming the option.
void validate_options(const FtOptions& options);

}  // namespace tensoropt::planner
