// What `tensoropt profile` times for a model on N devices (docs/profile.md "What is timed"): the
// op shards and collectives the strategy spaces of every candidate mesh ask the cost model about.
// The spaces are built with a compute model that records each ShardWork it is asked to price and
// link levels that record each collective (kind, group size, largest size), so the profile holds
// exactly what the planner will look up.
// Errors: InputError from the strategy space (a model it cannot handle). Thread-safe result.
#pragma once

#include <string>
#include <tuple>
#include <vector>

#include "graph/ir.h"
#include "planner/compute_model.h"
#include "planner/parallel/cluster.h"
#include "planner/parallel/redistribute.h"
#include "planner/space/space.h"

namespace tensoropt::profiler {

struct CollectiveCase {
  planner::StepKind kind;
  int group = 2;
  double largest_bytes = 0;
};

struct ProfileCases {
  std::vector<planner::ShardWork> ops;    // distinct signatures, in the order first asked
  std::vector<std::string> signatures;    // signatures[i] is ops[i]'s
  std::vector<CollectiveCase> collectives;  // inside a node (a profile is made on one machine)
};

// `cluster`'s nodes are taken to hold all `gpus` devices (they are this machine's workers).
// ShardWork points into `g`, which must outlive the result.
ProfileCases profile_cases(const Graph& g, planner::Cluster cluster, int gpus, const planner::SpaceOptions& options, int mesh_axes);

}  // namespace tensoropt::profiler
