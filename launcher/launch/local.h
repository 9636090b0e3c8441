// The local launcher: on one machine `run --gpus N` plans first when no --plan is given
// (`tensoropt plan MODEL --gpus N --json` into a private directory, with --profile when the run
// has one, the chosen point), then starts
// N copies of itself as workers (launcher/train/worker.h; threads per worker: the cores / N unless
// --threads says), with RANK, WORLD_SIZE and LOCAL_RANK set and a file store in the private
// directory. A worker that ends badly (an error, a signal) takes the group down: the launcher stops
// the others (SIGTERM, then SIGKILL after 5 s), says which rank ended and how in one line, and
// exits 1 (2 when a worker refused its input). SIGINT or SIGTERM to the launcher stops every worker;
// whatever kills the launcher (SIGKILL too), its workers and its planner die with it (the parent-death
// signal), and the next launcher removes the private directory of one that could not.
// Not thread-safe (installs signal handlers).
#pragma once

#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "launcher/train/settings.h"

namespace tensoropt {

// Starts `gpus` copies of this binary running `argv` on this machine (RANK, WORLD_SIZE, LOCAL_RANK
// and TENSOROPT_RENDEZVOUS, a file store in a private directory, set for each) and waits for them,
// with the failure handling above; `before` (optional) runs first with the private directory and
// may add to the workers' argv or return a non-zero exit code to stop. Used by run and profile.
// `supervise` (optional) then starts and watches the workers itself (an elastic job,
// launcher/elastic/launch.h), in place of starting `gpus` and waiting for them.
using BeforeWorkers = std::function<int(const std::string& dir, std::vector<std::string>& worker_argv)>;
using Supervise = std::function<int(const std::string& dir, const std::vector<std::string>& worker_argv)>;
int launch_workers(const std::vector<std::string>& argv, int gpus, std::ostream& err, const BeforeWorkers& before = {},
                   const Supervise& supervise = {});

// Starts `gpus` workers on this machine running `argv` (the run command line) and waits for them.
int launch_local(const std::vector<std::string>& argv, int gpus, const TrainSettings& s, std::ostream& out, std::ostream& err);

}  // namespace tensoropt
