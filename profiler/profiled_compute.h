// Costs from a profile database (docs/profile.md "How costs use it"): ProfiledCompute prices an op
// shard from its measured forward and backward where the database has its signature, and the
// optimizer step from the measured line; every other term is the analytic model's
// (planner/compute_model.h). The collectives come with the cluster: profile_costs attaches the
// measured points to the cluster's link levels (planner::MeasuredCollectives).
//
// Where it applies: profile_mismatch says why a database does not describe the device a plan or
// a run is for (another device, library or tensoropt version; a CPU profile for GPUs), and the
// caller warns in one line and prices analytically.
// Thread-safety: op_time and optimizer_time may be called from many threads (the planner's).
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>

#include "planner/compute_model.h"
#include "planner/parallel/collectives.h"
#include "profiler/database.h"

namespace tensoropt::profiler {

// What priced the terms asked for so far: distinct op shards, optimizer settings and collectives
// (kind and group size per link level) that had a measurement, and those that did not.
struct TermCounts {
  int measured = 0, modelled = 0;
};

class ProfiledCompute final : public planner::ComputeModel {
 public:
  // `workers`, `threads`: the conditions priced (entries timed under others do not apply; 0: any,
  // as on a GPU, where neither changes a kernel's time). `source`: the database's path.
  ProfiledCompute(const ProfileDb& db, std::string source, const planner::Cluster& cluster, planner::Precision precision,
                  int workers, int threads);
  std::string name() const override { return "profile " + source_; }
  planner::OpTime op_time(const planner::ShardWork& work) const override;
  double optimizer_time(double elements, const planner::Training& training) const override;
  TermCounts counts() const;  // op shards and optimizer settings

 private:
  std::string source_;
  planner::AnalyticCompute analytic_;
  planner::Precision precision_;
  std::unordered_map<std::string, planner::OpTime> ops_;
  double per_call_ = 0;  // the executor's time around each kernel call (ExecutorEntry)
  std::map<std::string, Points> optimizer_;  // "kind dtype" -> (weight bytes, seconds), non-decreasing
  mutable std::mutex mu_;
  mutable std::set<std::string> measured_, modelled_;
};

// A cluster and a compute model priced from a profile, or analytically with the reason.
struct ProfileCosts {
  planner::Cluster cluster;                          // with the measured collectives attached
  std::shared_ptr<planner::ComputeModel> compute;    // ProfiledCompute, or AnalyticCompute
  std::shared_ptr<ProfiledCompute> profiled;         // null when analytic
  std::string source = "analytic";                   // "profile FILE" or "analytic"
  std::string warning;                               // why a given profile was not used
  TermCounts counts() const;                         // over everything priced so far
  // "measured 812 terms, modelled 14 (profile FILE)", for the output beside a priced cost.
  std::string counts_text() const;
};

// Why `db` does not apply: to `here` (the device a run trains on, or this machine's CPU for a CPU
// profile; nullptr: unknown) or to `cluster` (a CPU profile for GPUs, another GPU model).
// nullopt: it applies.
std::optional<std::string> profile_mismatch(const DeviceId& db, const DeviceId* here, const planner::Cluster& cluster);

// `cluster` and a compute model for `precision` at `workers` x `threads`: analytic without
// `path`; else from the database (InputError: an unreadable or corrupt one), or analytic with a
// warning when profile_mismatch says it does not apply.
ProfileCosts profile_costs(const std::optional<std::string>& path, const planner::Cluster& cluster, planner::Precision precision,
                           int workers, int threads, const DeviceId* here);

}  // namespace tensoropt::profiler
