// The strategies people compare a frontier against (`plan --baselines`), each found as the fastest
// point of FT over a restriction of the strategy space, so each is the best strategy of its kind
// under the same cost model, and the frontier always has a point at least as good.
//
//   data parallel   the default mesh (DeviceMesh::for_cluster: [N], or [nodes, g] across nodes);
//                   every op splits its batch dim over every axis (ops without one replicate); every
//                   parameter stored whole on every device (DDP's strategy: never all-gathered at
//                   a use); no recompute; no ZeRO. Layouts of inputs and forks are left to FT
//                   (they only decide where copies live).
//   ZeRO-2          as data parallel, every parameter at ZeRO level 2 where the space offers it.
//   Megatron TP     tensor parallelism inside a node, data parallelism across nodes: the mesh
//                   [N/g, g] (g = GPUs per node; [N] when N <= g). On the inner axis every op that
//                   reads a parameter splits one of the parameter's dims (column, row, heads,
//                   channels) when it has such a configuration, other ops do not split their batch;
//                   on the outer axis ops split the batch. No recompute, no ZeRO.
// A baseline whose restriction leaves some variable without a configuration is not reported. In
// densely connected regions the wide-region restriction of planner/search/restricted.h applies
// here too.
// Thread-safety: pure functions of their arguments.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "planner/plan.h"

namespace tensoropt::planner {

struct Baseline {
  std::string name;
  Cost cost;
  std::unique_ptr<StrategySpace> space;  // the mesh it runs on
  std::vector<int> assignment;
  // Where the baseline is not quite what its name says, one line why ("" when it is): ops whose
  // batch the space cannot split (the batch an inner factor of an axis a Reshape merged, as in
  // a sequence-first attention's [T*B, C] projection) run whole in "data parallel".
  std::string caveat;
};

std::vector<Baseline> find_baselines(const Graph& graph, const Cluster& cluster, int gpus, const ComputeModel& compute,
                                     const PlanOptions& options);

// A fastest strategy of the restriction (solve_with_fallback, time only; search/restricted.h);
// nullopt when there is none. Among strategies of equal time FT's order decides, not memory.
std::optional<std::vector<int>> fastest_restricted(const StrategySpace& space,
                                                   const std::vector<std::vector<int>>& allowed);

// Whether dim d of op variable v carries the batch.
bool is_batch(const Variable& v, int d);
// The data-parallel rule: every mesh axis splits the op's batch dim when it has one; otherwise the
// op replicates.
bool data_parallel(const Variable& v, const OpConfig& c);

}  // namespace tensoropt::planner
