// The NCCL communicator of a GPU worker (launcher/comm/nccl/nccl_communicator.h) over the CUDA
// module's NCCL table (launcher/comm/nccl/nccl_abi.h), loaded as the CUDA backend's driver is
// (loader.h). The comm layer knows nothing of the module; this is where the table is found and
// handed to it. Host code, no CUDA header; compiled when CUDA support is built (TENSOROPT_HAVE_CUDA).
// Thread-safe.
#pragma once

#include <memory>
#include <string>

#include "launcher/comm/communicator.h"
#include "launcher/comm/nccl/nccl_communicator.h"
#include "launcher/runtime/cuda/module_abi.h"

namespace tensoropt::runtime::cuda {

// The NCCL table of a loaded module, or InputError ("--device cuda: ...", one line) naming why
// not: `module` is null (`why`: load_module's reason: the module is missing, does not load, or is
// of another build), or no GPU is visible (`why`: gpu_count's reason).
const TensoroptNcclApi& nccl_api(const TensoroptCudaModule* module, const std::string& why);

// The same for this process's module: load_module, then gpu_count.
const TensoroptNcclApi& nccl_api();

// make_nccl_communicator over nccl_api(): InputError as nccl_api() and make_nccl_communicator say.
std::unique_ptr<comm::Communicator> make_cuda_communicator(const comm::NcclOptions& options);

}  // namespace tensoropt::runtime::cuda
