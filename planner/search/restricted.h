// FT over a restriction of a strategy space (some variables limited to some of their
// configurations), and the fallback when FT refuses a space as too wide. The planner solves every
// mesh with these (planner/plan.h), the baselines their restrictions (planner/baselines.h).
//
// Wide regions. Densely connected graphs (DenseNet's concatenations: every layer's output read by
// every later layer of its block) have elimination width ~20, beyond any exact factor. When the
// elimination order is wider than 8 or promises a factor of more than 65,536 entries, or FT
// refuses, the space is first conditioned on a few variables (planner/ft/condition.h: at most 64
// assignments, each solved by FT; exact, MeshStats::approximation stays empty). When that would
// take more, the variables with more than 6 neighbours (then also their neighbours, then
// theirs) are restricted to uniform strategies, solved once with every such op data parallel and
// every such tensor batch-split, once with all of them replicated, and the union kept (more than
// approximate_points() of it thinned, relax.h). The mesh's MeshStats::approximation says so, and
// the plan prints it: that frontier is not exact.
//
// Slow regions. A space FT takes, but whose factors would hold more than kMaxBranches layouts of
// its hubs side by side, or whose exact search passes its work budget (FtOptions::max_points_built:
// a few hubs that many layers read keep thousands of frontiers alive side by side,
// planner/ft/relax.h), is relaxed instead (solve_exact_or_relaxed): its hubs split until no scope of
// the split Problem has more than kSlowScopeEntries entries, the split Problem solved, its points
// repaired into real strategies, and the mesh marked approximate within the epsilon proven
// between the two. A space too wide for FT and for conditioning is restricted as above, then
// relaxed the same way (any variable split until no scope has more than kWideScopeEntries
// entries) with the restriction's points among the
// repaired ones: the mesh is then marked approximate within the proven epsilon. Where relaxing
// fails, a slow space is solved exactly however long it takes, a wide one keeps the restriction.
// Errors: FtMemoryLimit propagates (restricting wide regions is for wide orders, not for big
// frontiers); std::length_error when even the restricted space is refused.
// Thread-safety: pure functions of their arguments.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "planner/ft/elimination_order.h"
#include "planner/ft/ft.h"
#include "planner/space/space.h"

namespace tensoropt::planner {

// What a solve gave up to finish: nothing (text empty, within 0), or what it restricted or
// relaxed, in words, and the proven bound (MeshStats::within; negative when none is known).
struct Approximation {
  std::string text;
  double within = 0;
  int hubs = 0;  // variables a relaxation split (MeshStats::relaxed_hubs)
  // A relaxation's proven lower bound (RelaxedResult::bound, in the Problem's costs) and its
  // slack, so that `within` can be measured again against what other meshes found
  // (tighten_within); `relaxed` is the part of `text` that states it.
  std::vector<Cost> bound;
  double slack = 0;
  std::string why;  // why the mesh was relaxed
  std::string relaxed;
};

// The words of a relaxation's approximation: within `within`, `hubs` tensors split, and why.
std::string relaxation_text(double within, int hubs, const std::string& why);

// `approximation`'s bound measured again, with `found` (full costs of real strategies, another
// mesh's or this one's) counted at their memory less `floor` (the mesh's workspace floor, below
// every strategy's workspace) beside `own` (the mesh's reported points, in the Problem's costs):
// every strategy s of the mesh lies above a bound point b, and a point u of `found` within
// (1+e) of b shifted by the floor is within (1+e) of s's full cost. `within` and the words
// become the smaller epsilon; one that comes out 0 clears them (the mesh adds nothing the
// others miss). Nothing changes without a bound.
void tighten_within(Approximation& approximation, const std::vector<Cost>& own, const std::vector<Cost>& found, double floor);

// Whether FT may be tried exactly on `p`, eliminated in `order`: no factor above
// kMaxExactFactorEntries entries and an order no wider than kMaxExactWidth, unless no factor
// exceeds 64 entries.
bool tractable(const Problem& p, const EliminationOrder& order);

// FT over a restriction of a space: allowed[v] lists the configurations variable v may take (all
// when empty). The points carry full assignments of the space, with the Problem costs FT
// solved: with `time_only`, one objective (time, memory breaking near-ties at 1e-15 s per byte),
// so the one point is a fastest strategy (min-plus).
FtResult solve_restricted(const StrategySpace& space, const std::vector<std::vector<int>>& allowed,
                          const FtOptions& options, bool time_only = false);

// solve_restricted, with the fallbacks above when FT refuses or passes options.max_points_built;
// `approximation` is set to what was given up, left alone when the result is exact.
FtResult solve_with_fallback(const StrategySpace& space, const std::vector<std::vector<int>>& allowed,
                             const FtOptions& options, Approximation& approximation, bool time_only = false);

// A tractable `problem`, eliminated in `order`, solved by `solve` (FT, with or without
// branching) exactly, or relaxed where that is slow. Hubs are nodes of two or more
// configurations with more neighbours than a layer's own tensors have; by the most assignments
// of hubs one scope of `order` above kSlowScopeEntries holds: none, and it is solved exactly
// with no work budget (passing it would change nothing); at most kMaxBranches, and it is solved
// exactly within options.max_points_built, relaxed past it; more, and it is relaxed at once
// (each entry of such a scope holds a frontier per assignment of its hubs, built side by side:
// T5's exact search takes minutes). Where the relaxation fails,
// exact with no budget. options.max_points_built 0 (plan --exact): exact.
// `seeds`: strategies known already (the hull's), among the relaxation's repaired points.
FtResult solve_exact_or_relaxed(const Problem& problem, const EliminationOrder& order, FtOptions options,
                                const std::function<FtResult(const FtOptions&)>& solve, Approximation& approximation,
                                std::vector<FrontierPoint> seeds = {});

// The relaxation of a Problem too wide for FT: nodes split until no scope has more than
// kWideScopeEntries entries, `seeds` among the repaired points. nullopt when no split of at most
// kMaxHubs nodes makes it fit, or FT refuses or passes its budget on the split Problem
// (FtMemoryLimit propagates). A relaxation whose epsilon comes out 0 is the exact frontier, and
// leaves `approximation` alone.
std::optional<FtResult> solve_relaxation(const Problem& problem, const FtOptions& options, Approximation& approximation,
                                         std::vector<FrontierPoint> seeds = {});

}  // namespace tensoropt::planner
