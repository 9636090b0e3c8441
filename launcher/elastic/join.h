// `tensoropt join DIR`: this machine offers one worker to a running elastic job whose control
// directory DIR it sees (a shared file system; docs/runtime.md "Workers from other machines").
//
// It reads how the job starts a worker (DIR/job.json, remote.h), offers itself (DIR/elastic-joins/M.json)
// and waits. The launcher takes waiting offers as a resize when the job has room below
// --max-gpus: it names this machine's rank and generation, and the worker started here loads the
// model while the job trains, meets the others in the job's store (DIR/elastic-store, or the job's
// --rendezvous) and takes part from the switch on, exactly as a worker the launcher started does.
// This process stays beside its worker: it beats (DIR/elastic-joins/M.beat) so that the launcher knows the
// machine is there, passes on the launcher's stop, and writes how the worker ended. After a lost
// worker elsewhere, a restart from the checkpoint starts this machine's worker again. Its device is
// the local rank a launcher gave this process (LOCAL_RANK, SLURM_LOCALID or
// OMPI_COMM_WORLD_LOCAL_RANK; else 0), so `srun --ntasks-per-node 8 tensoropt join DIR` offers a
// node's eight GPUs.
//
// Ends: 0 when its worker ended well (the job finished, or a shrink let it go) or the launcher
// stopped it for a resize given up; 1 when the worker failed or the launcher stopped answering
// (no beat for remote::kSilence: the worker is killed, no orphan is left); SIGINT or SIGTERM kill
// the worker at once, which the job survives as a lost worker. InputError (exit 2, before anything
// starts) when DIR is not a running elastic job's.
// Not thread-safe (signal handlers).
#pragma once

#include <iosfwd>
#include <optional>
#include <string>

namespace tensoropt {

int join_elastic(const std::string& control, std::optional<int> threads, std::ostream& out, std::ostream& err);

}  // namespace tensoropt
