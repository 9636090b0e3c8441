#include "planner/plan.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "graph/error.h"

namespace tensoropt::planner {

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
  std::vector<PlanPoint> all;
  for (const DeviceMesh& mesh : candidate_meshes(cluster, gpus, options.max_mesh_axes)) {
    std::string label = std::to_string(gpus) + " GPUs, mesh " + mesh.str();
    if (options.progress) options.progress(label + ": building the strategy space");
    auto space = std::make_unique<StrategySpace>(graph, mesh, compute, options.space);
    MeshStats ms;
    ms.mesh = mesh.str();
    ms.variables = static_cast<int>(space->variables().size());
    for (const Variable& v : space->variables()) ms.configurations += static_cast<int64_t>(v.configs.size());
    FtOptions ft;
    ft.epsilon = options.epsilon;
    ft.max_factor_points = options.max_factor_points;
    double last = -1;
    if (options.progress) {
      ft.progress = [&](const FtProgress& p) {
        if (p.seconds - last < 0.5 && p.eliminated != p.total) return;
        last = p.seconds;
        options.progress(label + ": " + std::to_string(p.eliminated) + "/" + std::to_string(p.total) + " variables, " +
                         std::to_string(p.factor_bytes >> 20) + " MiB");
      };
    }
    FtResult r;
    try {
      r = solve_ft(space->problem(), ft);
    } catch (const std::length_error& e) {
      out.skipped.push_back(mesh.str() + ": " + e.what());
      continue;
    }
    ms.frontier_points = static_cast<int>(r.points.size());
    ms.ft = r.stats;
    out.peak_bytes = std::max(out.peak_bytes, r.stats.peak_bytes);
    int index = static_cast<int>(out.spaces.size());
    for (FrontierPoint& p : r.points) all.push_back({space->cost(p.assignment), index, std::move(p.assignment)});
    out.spaces.push_back(std::move(space));
    out.meshes.push_back(std::move(ms));
  }
  if (out.spaces.empty()) throw InputError("no mesh for " + std::to_string(gpus) + " GPUs could be planned: " + out.skipped.front());
  std::stable_sort(all.begin(), all.end(), [](const PlanPoint& a, const PlanPoint& b) {
    return a.cost.time != b.cost.time ? a.cost.time < b.cost.time : a.cost.memory < b.cost.memory;
  });
  for (PlanPoint& p : all)
    if (out.points.empty() || p.cost.memory < out.points.back().cost.memory) out.points.push_back(std::move(p));
  out.seconds = seconds();
  return out;
}

}  // namespace tensoropt::planner
