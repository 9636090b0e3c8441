// The frontier for one GPU count: every candidate mesh's strategy space solved by FT, merged into
// one Pareto frontier (docs/design.md "FT (frontier tracking)"), plus the baselines a user compares against.
//
// Meshes. For N GPUs the candidates are DeviceMesh::for_cluster(cluster, N).factorizations(
// max_mesh_axes): [N] and every ordered split into up to max_mesh_axes axes of size >= 2 (8 GPUs,
// 2 axes: [8], [2,4], [4,2]), each axis on the link level it falls on. A configuration that
// splits one dim over several axes covers the coarser meshes' strategies, so the union over meshes
// is the frontier of the whole space.
// Solving. Every mesh's space is built (in parallel) with its fastest and smallest strategy
// (planner/ft/ft_bounds.h weighted_optima). The first wave, solved side by side, is the mesh with the
// fastest strategy and those within 1% as fast (up to one per hardware thread), each knowing a few
// more of its convex-hull strategies; the others follow, one per hardware thread at a time, each
// knowing the first wave's frontier points (full costs less its workspace floor), so FT leaves out
// what those strictly dominate (ft.h "Known strategies"): the merged frontier is the one the
// meshes' complete frontiers give, whatever the number of threads (which mesh is approximated or
// skipped under max_planner_bytes may depend on it: the first wave's size does).
// Points. Each FT point is costed as StrategySpace::cost would (FT's sum of the Problem's costs plus
// the workspace term); the union over meshes is pruned to the Pareto set (time strictly ascending,
// memory strictly descending; ties keep the earlier mesh, then FT's order). Deterministic.
// Wide regions: a mesh FT refuses as too wide is solved with its densely connected regions
// restricted to uniform strategies (planner/search/restricted.h), and MeshStats::approximation
// says so.
// Errors: InputError for bad options; a mesh that cannot be solved even so is skipped and named
// in GpuFrontier::skipped, never silently.
// Code (planner/search/): build_mesh.cc a mesh's space and hull (hull.h), waves.cc the solve order,
// solve_mesh.cc and recost.cc one mesh's solve and its points' full costs, merge.h the union.
// Thread-safety: plan_frontier touches only its arguments.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "planner/parallel/cluster.h"
#include "planner/compute_model.h"
#include "planner/ft/ft.h"
#include "planner/space/space.h"

namespace tensoropt::planner {

// The default work budget of an exact solve with hubs to relax, in frontier points built (a few
// seconds on a 2-core machine; docs/search.md "Relaxation").
inline constexpr int64_t kExactPointsBudget = int64_t{8} << 20;

struct PlanOptions {
  SpaceOptions space;
  double epsilon = 0;
  int max_mesh_axes = 2;
  int64_t max_factor_points = int64_t{1} << 25;
  // FT's working sets together may not pass this: meshes solved side by side an equal share each,
  // a mesh solved alone all of it (FtOptions::max_bytes). An exact solve that would pass its share is
  // redone with epsilon 0.01 and the mesh marked approximate; one that still would is skipped and
  // named. 0: no limit.
  int64_t max_planner_bytes = int64_t{4} << 30;
  // FT's work budget per mesh (FtOptions::max_points_built): a mesh whose exact search would build
  // more frontier points is relaxed instead (planner/search/restricted.h "Slow regions") and marked
  // approximate with its proven epsilon. 0: solve exactly however long it takes (--exact).
  int64_t max_exact_points = kExactPointsBudget;
  // Progress lines ("8 GPUs, mesh [2 intra, 4 intra]: 310/702 variables, 12 MiB, 1.2 s": the mesh's
  // solve so far), two a second for its first ten seconds, then one every five; the caller prints them.
  std::function<void(const std::string&)> progress;
};

struct PlanPoint {
  Cost cost;            // StrategySpace::cost of the assignment
  int mesh = 0;         // index into GpuFrontier::spaces
  std::vector<int> assignment;
};

struct MeshStats {
  std::string mesh;
  // Empty when the frontier of this mesh is exact; otherwise what was restricted to make FT fit
  // (see plan_frontier).
  int variables = 0;
  int64_t configurations = 0;  // sum over variables
  int frontier_points = 0;     // FT's, before the merge
  FtStats ft;
  std::string approximation;
  // Every strategy of the mesh has a reported point within a factor (1 + within) in time and in
  // FT's memory: 0 exact, the --epsilon asked for, 0.01 where the memory limit thinned it, a
  // relaxation's proven epsilon; negative where no bound is known (uniform restrictions).
  double within = 0;
  int relaxed_hubs = 0;  // variables split by the relaxation that solved the mesh; 0: none did
  // FT carried the step's peak at the last op (StrategySpace::carry_peak_bound) and every point
  // it returned had its whole workspace in that bound: the mesh's frontier is exact for the full
  // memory, workspace included, not only for the summed terms (docs/search.md "The peak bound").
  bool peak_exact = false;
};

struct GpuFrontier {
  int gpus = 0;
  std::vector<std::unique_ptr<StrategySpace>> spaces;  // one per candidate mesh
  std::vector<PlanPoint> points;                        // the merged frontier
  std::vector<MeshStats> meshes;
  std::vector<std::string> skipped;  // meshes FT refused, with the reason
  double seconds = 0;                // whole frontier, spaces built and solved
  int64_t peak_bytes = 0;            // largest FT working set of one mesh
};

// The first (fastest) point of the frontier no slower and no larger than `cost`; -1 when none.
int dominating_point(const GpuFrontier& frontier, Cost cost);

// How far the merged frontier may lie from the exact one over every candidate mesh: 0 when each
// was solved exactly, else the largest MeshStats::within (every strategy of every mesh has a
// point within that factor), -1 when no bound is known (a mesh skipped or restricted without one).
double frontier_within(const GpuFrontier& frontier);

std::vector<DeviceMesh> candidate_meshes(const Cluster& cluster, int gpus, int max_mesh_axes);

GpuFrontier plan_frontier(const Graph& graph, const Cluster& cluster, int gpus, const ComputeModel& compute,
                          const PlanOptions& options);

}  // namespace tensoropt::planner
