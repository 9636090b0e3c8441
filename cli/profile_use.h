// How plan and evaluate price a cluster with --profile (docs/profile.md "Where measurements
// apply"): the database's measurements for `gpus` devices where it applies to the cluster (a CPU
// profile: CPU workers on this machine's CPU, each of its workers with the threads `run` would give
// it; a GPU profile: a cluster of the same GPU model), the analytic model elsewhere; one warning
// line on `err` when it does not apply. InputError: an unreadable or corrupt database.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>

#include "planner/parallel/cluster.h"
#include "planner/training.h"
#include "profiler/profiled_compute.h"

namespace tensoropt::cli {

profiler::ProfileCosts cli_costs(const std::optional<std::string>& profile, const planner::Cluster& cluster, planner::Precision precision,
                                 int gpus);

}  // namespace tensoropt::cli
