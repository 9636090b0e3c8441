#include "planner/search/merge.h"

#include <string>
#include <utility>

#include "graph/units.h"
#include "graph/error.h"
#include "planner/plan.h"
#include "planner/search/mesh_slot.h"

namespace tensoropt::planner {

void merge_meshes(std::vector<MeshSlot>& slots, GpuFrontier& out) {
  // A relaxed mesh's bound measured against every mesh's points (less the workspace floor its
  // known costs were shifted by): where the others' points lie below the bound, the mesh's own
  // gap does not matter. Then what each mesh gave up goes into its stats.
  std::vector<Cost> found;
  for (const MeshSlot& slot : slots)
    if (slot.skipped.empty()) found.insert(found.end(), slot.costs.begin(), slot.costs.end());
  for (MeshSlot& slot : slots) {
    if (!slot.skipped.empty()) continue;
    if (!slot.approximation.bound.empty()) {
      std::vector<Cost> own;
      for (const FrontierPoint& p : slot.result.points) own.push_back(p.cost);
      tighten_within(slot.approximation, own, found, slot.space->workspace_floor());
    }
    slot.stats.approximation = slot.approximation.text;
    slot.stats.within = slot.approximation.within;
    slot.stats.relaxed_hubs = slot.approximation.hubs;
  }
  // Assembled in candidate order, so ties keep the earlier mesh whatever the solve order.
  std::vector<PlanPoint> all;
  for (MeshSlot& slot : slots) {
    if (!slot.skipped.empty()) {
      out.skipped.push_back(slot.skipped);
      continue;
    }
    out.peak_bytes = std::max(out.peak_bytes, slot.result.stats.peak_bytes);
    const int index = static_cast<int>(out.spaces.size());
    for (size_t k = 0; k < slot.result.points.size(); ++k)
      all.push_back({slot.costs[k], index, std::move(slot.result.points[k].assignment)});
    out.spaces.push_back(std::move(slot.space));
    out.meshes.push_back(std::move(slot.stats));
  }
  if (out.spaces.empty()) throw InputError("no mesh for " + count_of(out.gpus, "GPU") + " could be planned: " + out.skipped.front());
  out.points = pareto_merge(std::move(all));
}

}  // namespace tensoropt::planner
