// The live scheduler's loop (`tensoropt schedule`, docs/cli.md): a workload's jobs run as real
// `tensoropt run --elastic` processes on this machine, a GPU of the cluster being one CPU worker
// process, under a policy of policy.h, the same object `simulate` drives.
//
// The loop follows the engine (engine.h) in wall-clock time: a job arrives at its submit time
// (seconds after the loop starts), and at every arrival, completion and time the policy asked for,
// the policy gives every active job its GPUs from the jobs' views: the samples each has trained
// (its rank 0's status.json, at most 0.2 s old), the GPU-seconds it has held, the GPUs it holds.
// Each change is carried out as a user would:
//   - a first start: `argv` plus `--gpus k --control DIR/job-I` (stdout and stderr appended to
//     DIR/job-I.log); the process dies with this one;
//   - an elastic policy's new count for a running job: `tensoropt resize`'s request (control.h),
//     repeated until the job's launcher has opened its control directory;
//   - 0 GPUs for a running job, or a non-elastic policy's new count: SIGTERM to its launcher, and
//     its last checkpoint (run --elastic writes one automatically) copied to DIR/job-I.resume/;
//     when it runs again, it starts with `--resume` from that copy, redoing the steps since it (all
//     of them when it had written none).
// A job is finished when its launcher exits 0, having trained its --steps.
//
// The result is the engine's: per job its start (the first start), finish, resizes (completed
// resizes, as the job's status lists them, and restarts), paused_s (the resizes' pauses as the
// job measured them) and GPU-seconds held.
//
// Errors: InternalError, after stopping every job, for a job that exits other than 0 (naming it
// and its log) and for a policy's bad decision (as the engine's). Not thread-safe; it forks.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "launcher/cluster/engine.h"

namespace tensoropt::cluster {

struct LiveJob {
  Job job;                        // what the policy sees: submit time, work, speeds, costs
  std::vector<std::string> argv;  // `tensoropt run MODEL ... --elastic --steps S`, argv[0] the binary's path
  int64_t batch = 0;              // samples a step trains
};

struct LiveOptions {
  std::string dir;       // the jobs' control directories, logs and checkpoints
  double poll_s = 0.05;  // how often processes and statuses are looked at
};

// Runs `jobs` to their end on a cluster of `gpus`, printing one line per change to `log`.
Result run_live(const std::vector<LiveJob>& jobs, int gpus, Policy& policy, const LiveOptions& o, std::ostream& log);

}  // namespace tensoropt::cluster
