// The launcher of an elastic job on this machine: `run --elastic --gpus N [--min-gpus A]
// [--max-gpus B] [--control DIR]` (docs/runtime.md "Elastic jobs").
//
// Before any worker starts: the limits (A <= N <= B), a plan with a frontier for every count in
// A..B (planned here when --plan is not given: `plan --gpus A,A+1,...,B`; a given plan must hold
// them all), and the control directory (launcher/elastic/control.h; default: in the launcher's
// private directory, printed). Then N workers of generation 0 (launcher/elastic/worker.h).
//
// While the job runs the launcher watches DIR/request.json. On a request for M workers: to grow,
// it starts the missing workers as generation G+1 (ranks from the current count up) and, once
// each says it is ready (loaded while the old group trains), writes the go-ahead (switch.json); to
// shrink, it writes the go-ahead at once. The group switches a few steps after it sees the
// go-ahead (launcher/elastic/worker.h); requests that arrive during a resize wait for it. A joining
// worker that fails before the go-ahead abandons that resize (the others of its generation are
// stopped) and the job goes on at its size; when the job ends before the switch, the joining workers are stopped. A worker killed
// by a signal, with checkpoints written (unless --checkpoint-every 0), is lost: the launcher stops
// the others and starts the workers left as a new generation that resumes from the checkpoint
// (TENSOROPT_RESTART; DIR/recovery.json says what was lost); below --min-gpus it first waits
// --rejoin-timeout seconds for a resize that brings the count there, else stops (exit 1, one
// line). Any other worker ending badly takes the group down as launch_local does (SIGTERM,
// SIGKILL after 5 s, one line naming the rank, exit 1, or 2 when it refused its input); so do
// SIGINT and SIGTERM. Exit 0 when every worker has ended well (those that left at a shrink, and
// the last group).
//
// Not yet: recovery from replicas the plan keeps (the checkpoint is read instead).
// Not thread-safe (signal handlers).
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "launcher/train/settings.h"

namespace tensoropt {

int launch_elastic(const std::vector<std::string>& argv, int gpus, const TrainSettings& s, std::ostream& out, std::ostream& err);

}  // namespace tensoropt
