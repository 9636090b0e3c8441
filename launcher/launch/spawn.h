// What the local launcher (local.cc) lends the elastic one (launch.cc) and the live scheduler
// (launcher/cluster/live.h): one worker or one process of this binary started, how a process
// ended, whether a stop signal came, and the plan made for the workers.
// Not thread-safe (the launcher's signal handlers are process-wide).
#pragma once

#include <sys/types.h>

#include <iosfwd>
#include <string>
#include <vector>

#include "launcher/train/settings.h"

namespace tensoropt {

// Forks worker `rank` of `world` running `argv` with RANK, WORLD_SIZE, LOCAL_RANK (`local_rank`,
// or the rank when negative) and TENSOROPT_RENDEZVOUS (`store`, a rendezvous spec) set (and
// TENSOROPT_GENERATION when generation >= 0, TENSOROPT_RESTART=1 with `restart`: an elastic job's
// generation that starts again from its checkpoint); it dies with this process. Rank 0 keeps
// stdout; in an elastic job (generation >= 0) every worker does, and prints only while it is rank 0.
pid_t start_worker(const std::vector<std::string>& argv, int rank, int world, const std::string& store, int generation, bool restart = false,
                   int local_rank = -1);

// Forks the program at the path argv[0] with `argv`, its stdout and stderr appended to `log`; it
// dies with this process (SIGKILL, whatever ends this one). Returns its pid (exit 127 when the
// program cannot run). (The live scheduler's jobs, launcher/cluster/live.h.)
pid_t spawn_logged(const std::vector<std::string>& argv, const std::string& log);

// "exited with code 3", "killed by signal 9 (Killed)".
std::string how_it_ended(int status);

// The SIGINT or SIGTERM the launcher received, or 0.
int stop_signal();

// The flags and environment checked before any worker of `workers` starts (--data with --labels,
// --dtype, the checkpoint paths, OMP_NUM_THREADS, --profile): InputError, one line.
void check_before_workers(const TrainSettings& s, int workers);

// `tensoropt plan` for the run's model on `gpus` workers ("8", or a list "2,3,4") into
// DIR/plan.json, its chosen line echoed. Returns 0, or the exit code the launcher ends with when
// planning failed.
int plan_for_workers(const TrainSettings& s, const std::string& gpus, const std::string& dir, std::ostream& out, std::ostream& err);

}  // namespace tensoropt
