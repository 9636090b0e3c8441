// Re-costing a mesh's FT points with the workspace, the term FT does not sum (planner/plan.h
// "Points").
#include <limits>
#include <utility>
#include <vector>

#include "planner/search/mesh_slot.h"

namespace tensoropt::planner {

bool recost(MeshSlot& slot, double floor) {
  const StrategySpace& space = *slot.space;
  slot.stats.frontier_points = static_cast<int>(slot.result.points.size());
  // Each point's full cost: FT's costs are evaluate()'s sums, so this is space.cost() without
  // summing again. Points go by time ascending; one whose sum plus the workspace floor already
  // reaches the least full memory of the faster points is dominated whatever its workspace, so
  // its step peak is not computed and it is dropped, as is one that its full cost shows
  // dominated: neither could be on the merged frontier. (Along one FT frontier the summed memory
  // falls point by point, so this rarely skips a peak: on GPT-2 XL at 64 GPUs none; the merge
  // then thins the meshes.) The peaks are found incrementally (WorkspaceScan).
  std::vector<FrontierPoint> kept;
  double least = std::numeric_limits<double>::infinity();
  StrategySpace::WorkspaceScan scan(space);
  for (FrontierPoint& p : slot.result.points) {
    if (p.cost.memory + floor >= least) continue;
    const double bound = space.peak_bound(p.assignment);
    const double workspace = scan.workspace(p.assignment);
    if (space.peak_bound_carried() && workspace != bound) return false;
    const double full = p.cost.memory - bound + workspace;
    if (full >= least) continue;
    least = full;
    slot.costs.push_back({p.cost.time, full});
    kept.push_back(std::move(p));
  }
  slot.result.points = std::move(kept);
  return true;
}

}  // namespace tensoropt::planner
