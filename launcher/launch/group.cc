#include "launcher/launch/group.h"

#include <cstdlib>

#include "launcher/comm/gloo_communicator.h"
#include "launcher/runtime/cuda/backend.h"
#ifdef TENSOROPT_HAVE_CUDA
#include "launcher/runtime/cuda/nccl_loader.h"
#endif

namespace tensoropt {

Group join_group(const WorkerPlace& place, runtime::Backend& backend, const std::string& prefix, std::shared_ptr<const std::atomic<bool>> abandon) {
  comm::GlooOptions go;
  go.rank = place.rank;
  go.size = place.world;
  go.rendezvous = place.rendezvous;
  go.prefix = prefix;
  go.abandon = std::move(abandon);
  // Workers this machine's launcher started listen on loopback, unless GLOO_SOCKET_IFNAME names the
  // interface other machines reach them on (an elastic job taking workers from them).
  const char* iface = std::getenv("GLOO_SOCKET_IFNAME");
  if (place.local && !(iface && *iface)) go.hostname = "127.0.0.1";
  Group group;
  group.gloo = comm::make_gloo_communicator(go);
#ifdef TENSOROPT_HAVE_CUDA
  if (auto* gpu = dynamic_cast<runtime::cuda::CudaBackend*>(&backend)) {
    comm::NcclOptions no;
    no.rank = place.rank;
    no.size = place.world;
    no.rendezvous = place.rendezvous;
    no.prefix = prefix;
    no.device = place.local_rank;
    no.compute_stream = gpu->stream();
    group.nccl = runtime::cuda::make_cuda_communicator(no);
    group.tensors_over = "NCCL";
  }
#else
  (void)backend;
#endif
  group.timed = std::make_unique<comm::TimedCommunicator>(group.nccl ? *group.nccl : *group.gloo);
  return group;
}

}  // namespace tensoropt
