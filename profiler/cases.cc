#include "profiler/cases.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>

#include "planner/parallel/collectives.h"
#include "planner/plan.h"
#include "profiler/signature.h"

namespace tensoropt::profiler {

namespace {

// The analytic model, remembering every op shard it prices.
class RecordingCompute final : public planner::ComputeModel {
 public:
  RecordingCompute(const planner::Cluster& c, planner::Precision p) : analytic_(c, p), precision_(p) {}
  std::string name() const override { return "recording"; }
  planner::OpTime op_time(const planner::ShardWork& w) const override {
    std::string sig = shard_signature(w, precision_);
    std::lock_guard<std::mutex> lock(mu_);
    if (seen_.emplace(sig, cases_.ops.size()).second) {
      cases_.ops.push_back(w);
      cases_.signatures.push_back(std::move(sig));
    }
    return analytic_.op_time(w);
  }
  double optimizer_time(double elements, const planner::Training& t) const override { return analytic_.optimizer_time(elements, t); }
  ProfileCases take() { return std::move(cases_); }

 private:
  planner::AnalyticCompute analytic_;
  planner::Precision precision_;
  mutable std::mutex mu_;
  mutable std::map<std::string, size_t> seen_;
  mutable ProfileCases cases_;
};

}  // namespace

ProfileCases profile_cases(const Graph& g, planner::Cluster cluster, int gpus, const planner::SpaceOptions& options, int mesh_axes) {
  cluster.gpus_per_node = std::max(cluster.gpus_per_node, gpus);
  auto asked = std::make_shared<planner::MeasuredCollectives>();
  cluster.intra_node.measured = asked;
  RecordingCompute recorder(cluster, options.training.precision);
  for (const planner::DeviceMesh& mesh : planner::candidate_meshes(cluster, gpus, mesh_axes))
    planner::StrategySpace space(g, mesh, recorder, options);
  ProfileCases cases = recorder.take();
  for (const auto& [key, bytes] : asked->asked()) cases.collectives.push_back(CollectiveCase{key.first, key.second, bytes});
  return cases;
}

}  // namespace tensoropt::profiler
