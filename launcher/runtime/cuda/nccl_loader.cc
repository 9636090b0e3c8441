#include "launcher/runtime/cuda/nccl_loader.h"

#include "graph/error.h"
#include "launcher/runtime/cuda/loader.h"

namespace tensoropt::runtime::cuda {

const TensoroptNcclApi& nccl_api(const TensoroptCudaModule* module, const std::string& why) {
  if (!module) throw InputError("--device cuda (the NCCL communicator): " + why);
  std::string no_gpu;
  if (gpu_count(*module, &no_gpu) == 0)
    throw InputError("--device cuda: the NCCL communicator has no GPU visible (" + no_gpu +
                     "); tensoropt devices says what this machine has");
  return *module->nccl();
}

const TensoroptNcclApi& nccl_api() {
  std::string why;
  const TensoroptCudaModule* module = load_module(&why);
  return nccl_api(module, why);
}

std::unique_ptr<comm::Communicator> make_cuda_communicator(const comm::NcclOptions& options) {
  return comm::make_nccl_communicator(options, nccl_api());
}

}  // namespace tensoropt::runtime::cuda
