// One candidate mesh on its way through plan_frontier (planner/plan.h "Solving" and "Points"):
// built with its hull strategies (build_mesh), given its outside bounds (add_bounds), solved in a
// wave (solve_in_waves, solve_mesh), its FT points re-costed with the workspace (recost), then
// merged with the other meshes (planner/search/merge.h).
//
// Ownership: a MeshSlot owns its space until merge_meshes moves it into the GpuFrontier.
// Thread-safety: each function touches only its own slot (solve_in_waves runs them for different
// slots on several threads), and reads `found` and the options; solves share only the lock that
// keeps progress lines whole.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "planner/ft/ft.h"
#include "planner/ft/ft_bounds.h"
#include "planner/plan.h"
#include "planner/search/hull.h"
#include "planner/search/restricted.h"

namespace tensoropt::planner {

// Every mesh's space, and a few strategies of each on its frontier's convex hull.
struct MeshSlot {
  std::unique_ptr<StrategySpace> space;
  // What FT solves: the space's Problem, or, when that narrows the elimination order (`folded`),
  // the space's Problem with the links one side does not see folded (fold_independent_edges,
  // planner/ft/problem.h), made again when the peak bound is carried or dropped. Every strategy
  // costs the same in both. Freed, with `order` and `bounds`, once solve_mesh is done.
  std::shared_ptr<const Problem> problem;
  bool folded = false;
  std::shared_ptr<const EliminationOrder> order;  // of `problem`: for FT and the hull strategies
  std::shared_ptr<const OutsideBounds> bounds;     // outside_bounds() in that order, when exact
  bool exact = false;      // tractable(): hull strategies are only sought where FT is exact
  Hull hull;
  MeshStats stats;
  FtResult result;
  std::vector<Cost> costs;  // [point] space->cost(): the result's costs with the workspace
  std::string skipped;
  // What the solve gave up, with a relaxation's bound: merge_meshes measures the bound again
  // against every mesh's points (tighten_within) and writes the words, `within` and the hubs into
  // stats.
  Approximation approximation;
};

// The slot's space on `mesh`, its elimination order, whether FT is exact on it, and where it is,
// its fastest and smallest strategy (the hull's ends), with the peak bound carried when the fastest
// has its peak at the last op.
void build_mesh(MeshSlot& slot, const Graph& graph, const DeviceMesh& mesh, const ComputeModel& compute,
                const SpaceOptions& options);

// A folded slot.problem made again from the space's (after the peak bound was carried or dropped),
// with the order's scopes for it (the same sequence of variables) and whether FT is still exact.
void refold(MeshSlot& slot);

// A tractable mesh's outside bounds (for FT's known strategies), computed when the schedule
// has a thread free for them.
void add_bounds(MeshSlot& slot);

// What the solves of one GPU count share.
struct SolveContext {
  const PlanOptions& options;
  int gpus = 0;
  std::mutex& progress_lock;  // keeps progress lines whole
};

// Solves the slot's mesh knowing the full costs `found` (other meshes' frontier points), in at
// most max_bytes: slot.result and slot.costs are its re-costed points, slot.stats what it took;
// or slot.skipped says why it could not be solved.
void solve_mesh(MeshSlot& slot, const std::vector<Cost>& found, int64_t max_bytes, const SolveContext& context);

// Each of slot.result's points costed in full, as StrategySpace::cost would, into slot.costs, and
// those that cannot be on the merged frontier dropped; false when the peak bound is carried and a
// point's workspace is not all in it (the frontier may then miss strategies).
bool recost(MeshSlot& slot, double floor);

// Every slot solved: the most promising first, the others knowing their frontiers.
void solve_in_waves(std::vector<MeshSlot>& slots, int gpus, const PlanOptions& options);

}  // namespace tensoropt::planner
