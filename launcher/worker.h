// `tensoropt run --gpus N` for N > 1: the workers and the launcher that starts them (issue 13).
//
// A worker is one process of the group: it reads its rank and the world size from the variables
// of the launcher that started it (worker_place), meets the others through a store
// (--rendezvous file:DIR or redis://HOST:PORT; the local launcher sets TENSOROPT_RENDEZVOUS), and
// trains its shard of one point of a plan for N GPUs with the ShardedExecutor over Gloo: every
// worker takes the same global batch (seeded synthetic data or the .npy files) and keeps its
// shard. Rank 0 prints the step lines and, at the end, measured against predicted with every
// rank's step time and peak memory, and writes --report.
//
// The local launcher (launch_local): on one machine `run --gpus N` plans first when no --plan is
// given (`tensoropt plan MODEL --gpus N --json` into a private directory, the chosen point), then
// starts N copies of itself as workers (threads per worker: the cores / N unless --threads says),
// with RANK, WORLD_SIZE and LOCAL_RANK set and a file store in the private directory. A worker that
// ends badly (an error, a signal) takes the group down: the launcher stops the others (SIGTERM,
// then SIGKILL after 5 s), says which rank ended and how in one line, and exits 1 (2 when a worker
// refused its input). SIGINT or SIGTERM to the launcher stops every worker.
//
// Checkpoints: --resume reads the one-device checkpoint whole and each worker takes its shard;
// --save gathers the whole model (ShardedExecutor::gather_whole) and worker 0 writes it, so a
// checkpoint moves between strategies and GPU counts. The peak memory reported is that of the
// training steps (what was read whole to start is gone).
//
// Not yet: bf16 with N > 1.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "launcher/train.h"

namespace tensoropt {

struct WorkerPlace {
  int rank = 0;
  int world = 1;
  std::string rendezvous;  // file:DIR or redis://HOST:PORT
  bool local = false;      // started by launch_local: peers on 127.0.0.1
  std::string from;        // which variables said so: "RANK/WORLD_SIZE", "SLURM_PROCID/SLURM_NTASKS", ...
};

// The rank and world from torchrun's (RANK, WORLD_SIZE), Slurm's (SLURM_PROCID, SLURM_NTASKS) or
// Open MPI's (OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE) variables, in that order; nullopt when
// none is set. `rendezvous`: the --rendezvous flag, else TENSOROPT_RENDEZVOUS. InputError for
// malformed values, a rank outside the world, or no rendezvous.
std::optional<WorkerPlace> worker_place(const std::optional<std::string>& rendezvous);

// One worker's training; `gpus` is the --gpus value (it must be the world size).
int run_worker(const TrainSettings& s, int gpus, const WorkerPlace& place, std::ostream& out, std::ostream& err);

// Starts `gpus` workers on this machine running `argv` (the run command line) and waits for them.
int launch_local(const std::vector<std::string>& argv, int gpus, const TrainSettings& s, std::ostream& out, std::ostream& err);

}  // namespace tensoropt
