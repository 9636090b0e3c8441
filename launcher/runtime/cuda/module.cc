// The CUDA module's entry point (module_abi.h): the table of its functions, over device_info.h.
// Compiled only into libtensoropt_cuda.so.
#include <algorithm>
#include <cstring>
#include <string>

#include "launcher/runtime/cuda/device_info.h"
#include "launcher/runtime/cuda/driver.h"
#include "launcher/runtime/cuda/module_abi.h"

namespace {

size_t copy_out(const std::string& s, char* out, size_t size) {
  if (size > 0) {
    const size_t n = std::min(s.size(), size - 1);
    std::memcpy(out, s.data(), n);
    out[n] = '\0';
  }
  return s.size();
}

size_t describe(char* text, size_t size) { return copy_out(tensoropt::cuda_info(), text, size); }

int gpu_count(char* why, size_t size) {
  std::string reason;
  const int n = tensoropt::visible_gpus(&reason);
  copy_out(reason, why, size);
  return n;
}

const TensoroptCudaDriver* driver() { return tensoropt::cuda::driver_table(); }

const TensoroptCudaModule kModule = {TENSOROPT_CUDA_ABI_VERSION, TENSOROPT_CUDA_ABI_HASH, describe, gpu_count, driver, tensoropt_nccl_api};

}  // namespace

extern "C" __attribute__((visibility("default"))) const TensoroptCudaModule* tensoropt_cuda_module(void) { return &kModule; }
