// Merging frontiers: the points of several solves (the two uniform restrictions of a wide region,
// planner/search/restricted.h; every mesh of a GPU count, planner/plan.h) into one Pareto set, time
// strictly ascending, memory strictly descending; ties keep the earlier point. Deterministic.
// Thread-safety: pure functions of their arguments.
#pragma once

#include <algorithm>
#include <utility>
#include <vector>

namespace tensoropt::planner {

struct GpuFrontier;  // planner/plan.h
struct MeshSlot;     // planner/search/mesh_slot.h

// The Pareto set of points from several solves: sorted by (time, memory), stable, so among equal
// costs the earlier one stays; then every point not below the last kept memory dropped.
template <typename Point>
std::vector<Point> pareto_merge(std::vector<Point> all) {
  std::stable_sort(all.begin(), all.end(), [](const Point& a, const Point& b) {
    return a.cost.time != b.cost.time ? a.cost.time < b.cost.time : a.cost.memory < b.cost.memory;
  });
  std::vector<Point> kept;
  for (Point& p : all)
    if (kept.empty() || p.cost.memory < kept.back().cost.memory) kept.push_back(std::move(p));
  return kept;
}

// Every solved mesh's space, stats and points moved into `out` (the meshes in candidate order, so
// ties keep the earlier mesh whatever the solve order), skipped ones named in out.skipped, and the
// points merged. Errors: InputError when every mesh was skipped.
void merge_meshes(std::vector<MeshSlot>& slots, GpuFrontier& out);

}  // namespace tensoropt::planner
