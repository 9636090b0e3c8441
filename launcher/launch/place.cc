#include "launcher/launch/place.h"

#include <cstdlib>
#include <utility>

#include "graph/error.h"
#include "launcher/comm/gloo_communicator.h"

namespace tensoropt {
namespace {

std::optional<int> env_int(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  if (*end != '\0' || x < 0 || x > 1 << 20) throw InputError(std::string(name) + "=" + v + ": not a rank or size");
  return static_cast<int>(x);
}

}  // namespace

std::optional<WorkerPlace> worker_place(const std::optional<std::string>& rendezvous) {
  struct Source {
    const char* rank_var;
    const char* size_var;
    const char* local_var;
  };
  const Source sources[] = {{"RANK", "WORLD_SIZE", "LOCAL_RANK"},
                            {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
                            {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"}};
  for (const auto& [rank_var, size_var, local_var] : sources) {
    const std::optional<int> rank = env_int(rank_var), world = env_int(size_var);
    if (!rank && !world) continue;
    if (!rank || !world) throw InputError(std::string(rank_var) + " and " + size_var + " go together");
    if (*world < 1 || *rank >= *world) {
      throw InputError(std::string(rank_var) + "=" + std::to_string(*rank) + " is outside " + size_var + "=" + std::to_string(*world));
    }
    WorkerPlace p;
    p.rank = *rank;
    p.world = *world;
    p.from = std::string(rank_var) + "/" + size_var;
    p.local_rank = env_int(local_var).value_or(p.rank);
    const char* env = std::getenv("TENSOROPT_RENDEZVOUS");
    if (rendezvous) p.rendezvous = *rendezvous;
    else if (env && *env) p.rendezvous = env;
    else throw InputError("worker " + std::to_string(p.rank) + " of " + std::to_string(p.world) + " (" + p.from +
                          "): say where the group meets: --rendezvous file:DIR (a shared directory) or redis://HOST:PORT");
    comm::parse_rendezvous(p.rendezvous);  // a malformed spec is refused here, before anything starts
    const char* local = std::getenv("TENSOROPT_LOCAL_LAUNCH");
    p.local = local && std::string(local) == "1";
    return p;
  }
  return std::nullopt;
}

}  // namespace tensoropt
