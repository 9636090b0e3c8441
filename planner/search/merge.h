// Merging frontiers: the points of several solves (the two uniform restrictions of a wide region,
// planner/search/restricted.h; every mesh of a GPU count, planner/plan.h) into one Pareto set, time
// strictly ascending, memory strictly descending; ties keep the earlier point (pareto_merge,
// planner/ft/frontier.h). Deterministic.
// Thread-safety: pure functions of their arguments.
#pragma once

#include <vector>

#include "planner/ft/frontier.h"  // pareto_merge

namespace tensoropt::planner {

struct GpuFrontier;  // planner/plan.h
struct MeshSlot;     // planner/search/mesh_slot.h

// Every solved mesh's space, stats and points moved into `out` (the meshes in candidate order, so
// ties keep the earlier mesh whatever the solve order), skipped ones named in out.skipped, and the
// points merged. Errors: InputError when every mesh was skipped.
void merge_meshes(std::vector<MeshSlot>& slots, GpuFrontier& out);

}  // namespace tensoropt::planner
