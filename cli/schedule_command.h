// `tensoropt schedule WORKLOAD --gpus G --policy P[,P...]`: the live scheduler (docs/cli.md
// "schedule"). The workload's jobs run as real `tensoropt run --elastic` processes on this
// machine, a GPU being one CPU worker process of one thread, under each policy in turn
// (launcher/cluster/live.h), and each policy's measured completion times are reported beside what
// the simulator (launcher/cluster/engine.h) predicts for the same jobs and policy.
//
// Before any job runs, each application is planned on the `cpu` cluster for 1..G workers (the
// plan its jobs run with, `run --plan`). Before each policy's jobs it is calibrated: run on each
// count k it fits for --calibration-steps steps (--calibration-seconds of steps when those take
// under half of it), exactly as its jobs run, G / k copies side by side so that the machine is as
// busy as a full cluster, and where that is more than one copy, once alone; each measurement
// --calibration-repeats times (the median: a single 2 s measurement on this machine is off by up
// to 20%). A step costs the median interval between steps (its status's measured_step_s: what
// passes between steps counts too), the speed is the global batch over that, the launch is the
// run's wall time less its steps. The simulation runs each job at the speed for the load it sees
// (engine.h "Load"); the policies decide on the busy speeds (the plan's are printed beside them);
// a resize costs its measured floor plus the state over the cpu cluster's link, a restart the
// launch plus the checkpoint's write and read (cluster_jobs.h). A job trains ceil(samples /
// batch) steps of its application's mapping.
//
// Errors: InputError, one line, before anything runs: the workload's and mapping's as `simulate`
// reports them, --gpus < 1, a --dir that cannot be made; after the calibration a job that fits no
// count. InternalError when a job's process fails (naming its log, kept). Not thread-safe.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>

namespace tensoropt::cli {

struct ScheduleArgs {
  std::string workload;
  int gpus = 0;
  std::string policies;                 // comma-separated policy names
  std::optional<std::string> mapping;   // default: models/pollux.json beside the binary's tree
  std::optional<std::string> json;      // file, or "-" for stdout
  std::optional<std::string> dir;       // where the jobs' directories and logs stay (default: removed at the end)
  int calibration_steps = 30;
  double calibration_seconds = 2;       // a calibration run's steps take at least half of this
  int calibration_repeats = 3;          // each measurement's runs; the median counts
};
int run_schedule(const ScheduleArgs& args, std::ostream& out, std::ostream& err);

}  // namespace tensoropt::cli
