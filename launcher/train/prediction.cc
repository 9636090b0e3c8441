#include "launcher/train/prediction.h"

#include "graph/error.h"
#include "planner/compute_model.h"
#include "planner/sharding.h"
#include "launcher/train/report.h"
#include "profiler/device_id.h"

namespace tensoropt {

PointPrediction predict_point(const Graph& g, const profiler::ProfileCosts& costs, const std::vector<int>& mesh_shape,
                              const planner::SpaceOptions& options, const planner::StoredStrategy* stored) {
  const planner::StrategySpace space(g, planner::DeviceMesh::with_shape(costs.cluster, mesh_shape), *costs.compute, options);
  const std::vector<int> assignment = stored ? planner::resolve_strategy(*stored, space) : std::vector<int>(space.variables().size(), 0);
  PointPrediction p{space.mesh(), space.cost(assignment), space.breakdown_at_peak(assignment), planner::sharding_plan(space, assignment)};
  if (stored && stored->sharding &&
      planner::resolve_sharding(*stored->sharding, g, stored->indices, stored->where) != p.sharding) {
    throw InputError(stored->where + ": the plan's sharding data disagrees with its configuration names (an edited plan file?)");
  }
  return p;
}

profiler::ProfileCosts run_costs(const TrainSettings& s, planner::Precision precision, int workers, int threads,
                                 const runtime::Backend* backend) {
  const bool gpu = backend ? backend->name() != "cpu" : s.device != "cpu";
  std::optional<profiler::DeviceId> here;
  if (backend) here = profiler::device_id(*backend);
  return profiler::profile_costs(s.profile, worker_cluster(s.cluster, threads), precision, gpu ? 0 : workers, gpu ? 0 : threads,
                                 here ? &*here : nullptr);
}

std::string costs_line(const profiler::ProfileCosts& c) { return c.profiled ? "costs    " + c.counts_text() + "\n" : ""; }

nlohmann::ordered_json report_costs(const profiler::ProfileCosts& c) {
  const profiler::TermCounts n = c.counts();
  return {{"source", c.source}, {"measured", n.measured}, {"modelled", n.modelled}};
}

planner::Optimizer planned_optimizer(const runtime::OptimizerSettings& o) {
  if (o.kind != runtime::OptimizerKind::Sgd) return planner::Optimizer::Adam;
  return o.momentum != 0 ? planner::Optimizer::Momentum : planner::Optimizer::Sgd;
}

}  // namespace tensoropt
