// `tensoropt simulate WORKLOAD --gpus G --policy P[,P...]`: a workload of training jobs on a cluster
// of G GPUs under each policy (launcher/cluster/), with every job's speed at every GPU count from
// tensoropt's own plans, and its completion times, makespan, utilisation and resizes per policy
// (docs/cli.md "simulate").
//
// Job speeds: each application of the workload is planned once, its mapped model at its mapped
// batch, on the cluster (`plan`'s default, or --cluster), at the counts 1..min(G, 16) and every
// multiple of 8 up to G (and G); a job's speed on k GPUs is the samples per second of the plan's
// chosen point for the largest planned count <= k (a job holding more GPUs than it uses gains
// nothing from them), 0 where no point fits the memory budget. Costs of changing a job's size:
// a resize (elastic policies) pauses it for 5 ms, our measured floor, plus its state (weights and
// Adam's two slots, float32) over one inter-node link; a stop-resume (a preemption, or any change
// under a non-elastic policy) for 0.15 s, our measured start, plus writing and reading that state
// at 1 GB/s. With --resizes restart an elastic policy's every change is a stop-resume too: the
// world without in-place resizing, for comparison. --profile DB: the plans price what the
// database measured (plan --profile).
//
// Errors: InputError, one line, before any planning: a bad workload or mapping (file and line),
// an unknown application or policy, --gpus < 1; after planning, a job whose application fits no
// count (naming its line). Not thread-safe.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>

namespace tensoropt::cli {

struct SimulateArgs {
  std::string workload;
  int gpus = 0;
  std::string policies;                 // comma-separated policy names
  std::string cluster = "h100-sxm";
  std::optional<std::string> mapping;   // default: models/pollux.json beside the binary's tree
  std::optional<std::string> json;      // file, or "-" for stdout
  std::optional<std::string> plot;      // an SVG of the completion times' distribution per policy (cdf_svg.h)
  std::optional<std::string> profile;   // a profile database the plans take measured costs from
  std::string resizes = "elastic";      // how elastic policies change a running job: "elastic" or "restart"
};
int run_simulate(const SimulateArgs& args, std::ostream& out, std::ostream& err);

}  // namespace tensoropt::cli
