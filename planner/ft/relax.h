// Relaxation: a proven lower bound on a Problem's frontier, and real strategies within a stated
// epsilon of it, for Problems that a few hubs make too wide or too slow to solve exactly
// (docs/search.md "Relaxation").
//
// Why. A tensor read by many distant layers (the encoder output every decoder layer attends to,
// a position bias computed once, a weight an eval-mode export merged across layers) stays in the
// scope of every factor between its readers. Each entry of those factors holds a frontier per
// configuration of the hub, and where the hub's configurations cost nearly the same the
// frontiers do not shrink (T5-style decoders: 3,840 entries of about 800 points each, every
// layer). Fixing the hub (conditioning, condition.h) multiplies the solves by its configurations.
//
// Splitting. split_hubs gives every edge at a hub its own copy of the hub: the first edge keeps
// the hub's node, each further one a new node (ids from problem.num_nodes() on) with the hub's
// configurations and no cost of its own. The copies are leaves, so the split Problem eliminates
// as if the hub were not there. Every strategy s of the Problem is a strategy of the split one
// (each copy taking s's configuration of its hub) of the same cost, so the split Problem's exact
// frontier B (the bound) has, for every strategy s, a point b <= s in both coordinates.
//
// Repair. A point of B whose copies disagree is no strategy. Each is repaired: every other node
// keeps its configuration, and each hub takes a configuration on the Pareto set of its own cost
// plus its edges to the nodes that are not hubs; across hubs those sets are summed and kept
// Pareto (at most kRepairBudget / hubs a point, and at least 4: the ends and evenly spaced ones
// kept, so the work and memory of repair stay linear in the bound's points). The
// repaired strategies are costed by evaluate(); the result's points are their Pareto set, each an
// actual strategy; with `seeds`, those strategies too. Then, while the epsilon below is above
// kBranchGap (at most kConditionedBranches times): the repair nearest the bound point worst
// covered whose hub configurations were not tried gives them (else the configurations most of
// the points use, not tried yet), the Problem with the hubs fixed to them (narrow,
// fold_independent_edges: as narrow as the split Problem) is solved exactly knowing the points so
// far, and its points join the Pareto set (a branch's frontier of more than
// approximate_points(options) points thinned first, as the bound is: the gap is measured on the
// points kept). A branch that leaves the epsilon as it was ends this
// (the gap lies in the bound, which no branch lowers), as does a solve past options'
// max_points_built (counted with the split solve's), the points so far standing.
//
// The guarantee. epsilon is the least e such that every point b of B has a result point u with
// u <= (1+e) b in both coordinates (0/0 counts as 1, x/0 as infinite). Then every strategy s has
// a result point u <= (1+e) b <= (1+e) s. With options.epsilon e0 > 0 the split Problem is solved
// with it, B holds for every point of its exact frontier one within (1+e0), and the stated
// epsilon is (1+e0)(1+e) - 1. A bound of more than kMaxBoundPoints points is first thinned: a
// point within (1 + kBoundEpsilon) of the last one kept is left out (of the repairs and of the
// gap), by FT before it rebuilds the strategies (FtOptions::thin_above) and again where the
// union of a branched solve is still that big, and the stated epsilon is
// (1+e0)(1+kBoundEpsilon)^t(1+e) - 1 for t thinnings (every strategy s has a kept point
// b' <= (1+kBoundEpsilon)^t b <= (1+kBoundEpsilon)^t s). With options.known, FT leaves out of B the points a known cost beats
// (ft.h "Known strategies"); every strategy is then within (1+epsilon) of the union of the result
// and the known costs' strategies, as FT's own guarantee with known costs reads.
//
// relaxation_hubs(problem, fits, max_hubs, min_neighbours): hubs chosen greedily until every
// scope of the split Problem's greedy elimination order passes `fits`: each round, among the
// nodes with at least two configurations and min_neighbours distinct neighbours that lie in the
// scopes that fail (copies counted as their hub), the one in the most such scopes, then the lowest
// id. It stops when the scopes fit (`fits` true), at max_hubs, or when no such node is left.
//
// Thread-safety: pure functions; solve_relaxed as solve_ft. Errors: as solve_ft;
// std::invalid_argument for a hub out of range or repeated.
#pragma once

#include <vector>

#include "planner/ft/condition.h"
#include "planner/ft/ft.h"
#include "planner/ft/problem.h"

namespace tensoropt::planner {

inline constexpr size_t kRepairBudget = 256;
inline constexpr size_t kMaxBoundPoints = 4096;
inline constexpr double kBoundEpsilon = 0.001;
inline constexpr size_t kConditionedBranches = 2;
inline constexpr double kBranchGap = 0.002;

// How many points an approximation keeps of a frontier it builds besides the bound (a uniform
// restriction's, a relaxation's conditioned branch's): options.thin_above where set, else
// kMaxBoundPoints; a bigger one is thinned at kBoundEpsilon (every point left out within that
// factor of a kept one in both coordinates). Its guarantee is measured on the points kept.
[[nodiscard]] inline size_t approximate_points(const FtOptions& options) {
  return options.thin_above > 0 ? options.thin_above : kMaxBoundPoints;
}

struct SplitProblem {
  Problem problem;
  std::vector<int> original;  // [node of `problem`] the node it copies (itself for the first n)
};

[[nodiscard]] SplitProblem split_hubs(const Problem& problem, const std::vector<int>& hubs);

struct HubChoice {
  std::vector<int> hubs;  // in the order chosen
  bool fits = false;      // every scope of the split Problem passes `fits`
};

// [node] whether it may be a hub: at least two configurations and min_neighbours distinct neighbours.
[[nodiscard]] std::vector<char> hub_candidates(const Problem& problem, int min_neighbours);

[[nodiscard]] HubChoice relaxation_hubs(const Problem& problem, const ScopeFits& fits, int max_hubs, int min_neighbours);

struct RelaxedResult {
  FtResult result;          // real strategies of the Problem, Pareto, evaluate()d
  std::vector<Cost> bound;  // B: the split Problem's frontier, thinned when big (above)
  double epsilon = 0;       // the guarantee above, options.epsilon included
  double slack = 0;         // (1+e0)(1+kBoundEpsilon)^t - 1 for t thinnings: epsilon less the gap
};

// `seeds`: strategies of the Problem known already (another method's points; their costs are
// evaluate()d again), joined to the repaired ones before the gap is measured.
[[nodiscard]] RelaxedResult solve_relaxed(const Problem& problem, const std::vector<int>& hubs,
                                          const FtOptions& options = {}, std::vector<FrontierPoint> seeds = {});

// The least e with, for every b in `bound`, some u in `inner` no more than (1+e) b in both
// coordinates (infinite when `inner` is empty and `bound` is not), and the bound point that needs
// it (the first such; 0 when e is 0).
struct BoundGap {
  double epsilon = 0;
  size_t worst = 0;
};
[[nodiscard]] BoundGap bound_gap(const std::vector<Cost>& bound, std::vector<Cost> inner);

}  // namespace tensoropt::planner
