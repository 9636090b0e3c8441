// Where a worker process sits in its group: its rank and the world size, read from the variables
// of the launcher that started it (torchrun, Slurm, Open MPI, or launch_local), and where the group
// meets (docs/runtime.md "Launching").
// Errors: InputError for malformed values, a rank outside the world, or no rendezvous, naming the
// variable. Thread-safe (reads the environment).
#pragma once

#include <optional>
#include <string>

namespace tensoropt {

struct WorkerPlace {
  int rank = 0;
  int world = 1;
  int local_rank = 0;      // among the workers of this machine (LOCAL_RANK, SLURM_LOCALID, ...; else rank): its GPU
  std::string rendezvous;  // file:DIR or redis://HOST:PORT
  bool local = false;      // started by launch_local: peers on 127.0.0.1
  std::string from;        // which variables said so: "RANK/WORLD_SIZE", "SLURM_PROCID/SLURM_NTASKS", ...
};

// The rank and world from torchrun's (RANK, WORLD_SIZE), Slurm's (SLURM_PROCID, SLURM_NTASKS) or
// Open MPI's (OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE) variables, in that order, with the
// same launcher's local rank (LOCAL_RANK, SLURM_LOCALID, OMPI_COMM_WORLD_LOCAL_RANK); nullopt when
// none is set. `rendezvous`: the --rendezvous flag, else TENSOROPT_RENDEZVOUS. InputError for
// malformed values, a rank outside the world, or no rendezvous.
std::optional<WorkerPlace> worker_place(const std::optional<std::string>& rendezvous);

}  // namespace tensoropt
