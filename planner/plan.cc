#include "planner/plan.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "graph/units.h"
#include "graph/error.h"
#include "planner/ft/thread_pool.h"
#include "planner/search/merge.h"
#include "planner/search/mesh_slot.h"

namespace tensoropt::planner {

int dominating_point(const GpuFrontier& frontier, Cost cost) {
  for (size_t k = 0; k < frontier.points.size(); ++k)
    if (weakly_dominates(frontier.points[k].cost, cost)) return static_cast<int>(k);
  return -1;
}

double frontier_within(const GpuFrontier& frontier) {
  if (!frontier.skipped.empty()) return -1;
  double within = 0;
  for (const MeshStats& m : frontier.meshes) {
    if (m.within < 0) return -1;
    within = std::max(within, m.within);
  }
  return within;
}

std::vector<DeviceMesh> candidate_meshes(const Cluster& cluster, int gpus, int max_mesh_axes) {
  if (max_mesh_axes < 1 || max_mesh_axes > 3) throw InputError("--mesh-axes must be 1, 2 or 3");
  return DeviceMesh::for_cluster(cluster, gpus).factorizations(max_mesh_axes);
}

GpuFrontier plan_frontier(const Graph& graph, const Cluster& cluster, int gpus, const ComputeModel& compute,
                          const PlanOptions& options) {
  using clock = std::chrono::steady_clock;
  auto start = clock::now();
  auto seconds = [&] { return std::chrono::duration<double>(clock::now() - start).count(); };
  GpuFrontier out;
  out.gpus = gpus;
  const std::vector<DeviceMesh> meshes = candidate_meshes(cluster, gpus, options.max_mesh_axes);
  std::vector<MeshSlot> slots(meshes.size());
  if (options.progress) options.progress(count_of(gpus, "GPU") + ": building " + count_of(static_cast<int64_t>(meshes.size()), "strategy space"));
  // Independent per mesh: built on up to as many threads as the machine has.
  parallel_for(meshes.size(), [&](size_t i) { build_mesh(slots[i], graph, meshes[i], compute, options.space); });
  solve_in_waves(slots, gpus, options);
  merge_meshes(slots, out);
  out.seconds = seconds();
  return out;
}

}  // namespace tensoropt::planner
