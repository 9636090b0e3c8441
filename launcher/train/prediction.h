// What the planner predicts for the point a run trains, on the machine it trains on: its cost
// (time per step, peak memory per device and the breakdown at the peak, docs/cost-model.md) and
// the sharding the workers run (planner/parallel/sharding_plan.h). The sharding is the plan file's
// own data where the file carries it, checked against the point's configuration names; the cost is
// the planner's cost model for this run's cluster, threads and optimizer, which may differ from
// the plan's (a plan made for GPUs, run on CPU workers), priced from --profile where the profile
// applies to the device the run trains on (profiler/profiled_compute.h), analytically elsewhere.
// Errors: InputError naming the plan point when its names are not in the model's strategy space
// or its sharding data disagrees with them.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "graph/ir.h"
#include "launcher/runtime/optimizer.h"
#include "planner/parallel/cluster.h"
#include "planner/parallel/mesh.h"
#include "planner/parallel/sharding_plan.h"
#include "planner/plan_file.h"
#include "planner/space/space.h"
#include "launcher/runtime/backend.h"
#include "launcher/train/settings.h"
#include "profiler/profiled_compute.h"

namespace tensoropt {

struct PointPrediction {
  planner::DeviceMesh mesh;
  planner::Cost cost;
  planner::Breakdown at_peak;      // StrategySpace::breakdown_at_peak
  planner::ShardingPlan sharding;  // what each worker holds and runs
};

// `stored`: the point (nullptr: one device's only strategy, every op replicated, nothing recomputed).
PointPrediction predict_point(const Graph& g, const profiler::ProfileCosts& costs, const std::vector<int>& mesh_shape,
                              const planner::SpaceOptions& options, const planner::StoredStrategy* stored);

// The costs a run of `workers` processes x `threads` is predicted with: cluster s.cluster (the
// `cpu` preset scaled to the threads), priced from s.profile where it applies to `backend`'s
// device (nullptr: not checked yet; the workers check). InputError: a corrupt profile.
profiler::ProfileCosts run_costs(const TrainSettings& s, planner::Precision precision, int workers, int threads,
                                 const runtime::Backend* backend);
// {"source": "profile FILE" or "analytic", "measured": n, "modelled": m} for --report.
nlohmann::ordered_json report_costs(const profiler::ProfileCosts& costs);
// "costs    measured 812 terms, modelled 14 (profile FILE)\n", or "" for an analytic prediction.
std::string costs_line(const profiler::ProfileCosts& costs);

// The optimizer the planner charges for a run's optimizer settings.
planner::Optimizer planned_optimizer(const runtime::OptimizerSettings& o);

}  // namespace tensoropt
