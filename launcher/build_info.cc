#include "launcher/build_info.h"

#ifdef TENSOROPT_HAVE_CUDA
// Headers only, for their version macros: nothing of them is linked into the binary.
#include <cublas_api.h>
#include <cuda_runtime_api.h>
#include <cudnn_version.h>
#include <nccl.h>

#include "launcher/runtime/cuda/module_abi.h"
#endif

namespace tensoropt {
namespace {

#ifdef TENSOROPT_HAVE_CUDA
std::string dotted(int major, int minor, int patch) {
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}
#endif

}  // namespace

bool built_with_cuda() {
#ifdef TENSOROPT_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

std::string build_info() {
  std::string s = "tensoropt " TENSOROPT_VERSION "\n";
#ifdef TENSOROPT_HAVE_CUDA
  s += "CUDA support: yes, in " TENSOROPT_CUDA_MODULE_FILE " next to this binary (loaded only by `devices` and `run --device cuda`)\n";
  s += "compiled against: CUDA runtime " + std::to_string(CUDART_VERSION / 1000) + "." + std::to_string(CUDART_VERSION % 1000 / 10) +
       ", cuDNN " + dotted(CUDNN_MAJOR, CUDNN_MINOR, CUDNN_PATCHLEVEL) + ", cuBLAS " +
       dotted(CUBLAS_VER_MAJOR, CUBLAS_VER_MINOR, CUBLAS_VER_PATCH) + ", NCCL " + dotted(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH) + "\n";
  s += "versions loaded and GPUs visible: tensoropt devices\n";
#else
  s += "CUDA support: no (built without a CUDA toolkit; CPU only)\n";
#endif
  return s;
}

}  // namespace tensoropt
