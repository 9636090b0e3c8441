#include "launcher/train/prediction.h"

#include "graph/error.h"
#include "planner/compute_model.h"
#include "planner/sharding.h"

namespace tensoropt {

PointPrediction predict_point(const Graph& g, const planner::Cluster& cluster, const std::vector<int>& mesh_shape,
                              const planner::SpaceOptions& options, const planner::StoredStrategy* stored) {
  const planner::AnalyticCompute compute(cluster, options.training.precision);
  const planner::StrategySpace space(g, planner::DeviceMesh::with_shape(cluster, mesh_shape), compute, options);
  const std::vector<int> assignment = stored ? planner::resolve_strategy(*stored, space) : std::vector<int>(space.variables().size(), 0);
  PointPrediction p{space.mesh(), space.cost(assignment), space.breakdown_at_peak(assignment), planner::sharding_plan(space, assignment)};
  if (stored && stored->sharding &&
      planner::resolve_sharding(*stored->sharding, g, stored->indices, stored->where) != p.sharding) {
    throw InputError(stored->where + ": the plan's sharding data disagrees with its configuration names (an edited plan file?)");
  }
  return p;
}

planner::Optimizer planned_optimizer(const runtime::OptimizerSettings& o) {
  if (o.kind != runtime::OptimizerKind::Sgd) return planner::Optimizer::Adam;
  return o.momentum != 0 ? planner::Optimizer::Momentum : planner::Optimizer::Sgd;
}

}  // namespace tensoropt
