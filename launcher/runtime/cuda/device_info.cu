#include "launcher/runtime/cuda/device_info.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <nccl.h>

namespace tensoropt {
namespace {

// A kernel so this translation unit always holds device code: a toolchain that cannot build
// device code for our target architectures fails here, at build time.
__global__ void fill_kernel(float* out, float value, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = value;
}

std::string dotted(int major, int minor, int patch) {
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

// Returns "" when the probe worked, else why not.
std::string probe_device() {
  float* buf = nullptr;
  if (cudaMalloc(&buf, 32 * sizeof(float)) != cudaSuccess) return "allocation failed";
  fill_kernel<<<1, 32>>>(buf, 1.0f, 32);
  cudaError_t err = cudaDeviceSynchronize();
  cudaFree(buf);
  return err == cudaSuccess ? "" : cudaGetErrorString(err);
}

}  // namespace

int visible_gpus(std::string* why) {
  int devices = 0;
  const cudaError_t err = cudaGetDeviceCount(&devices);
  if (err != cudaSuccess) {
    *why = cudaGetErrorString(err);
    return 0;
  }
  if (devices == 0) *why = "the CUDA runtime sees no device";
  return devices;
}

std::string cuda_info() {
  std::string s;
  int runtime = 0;
  cudaRuntimeGetVersion(&runtime);
  s += "CUDA runtime: " + dotted(runtime / 1000, (runtime % 1000) / 10, 0) + "\n";
  size_t cudnn = cudnnGetVersion();
  s += "cuDNN: " + dotted(static_cast<int>(cudnn / 10000), static_cast<int>((cudnn % 10000) / 100),
                         static_cast<int>(cudnn % 100)) + "\n";
  int major = 0, minor = 0, patch = 0;
  cublasGetProperty(MAJOR_VERSION, &major);
  cublasGetProperty(MINOR_VERSION, &minor);
  cublasGetProperty(PATCH_LEVEL, &patch);
  s += "cuBLAS: " + dotted(major, minor, patch) + "\n";
  int nccl = 0;
  ncclGetVersion(&nccl);
  s += "NCCL: " + dotted(nccl / 10000, (nccl % 10000) / 100, nccl % 100) + "\n";
  std::string why;
  const int devices = visible_gpus(&why);
  if (devices == 0) return s + "GPUs visible: 0 (" + why + ")\n";
  s += "GPUs visible: " + std::to_string(devices) + "\n";
  for (int d = 0; d < devices; ++d) {
    cudaDeviceProp p{};
    cudaGetDeviceProperties(&p, d);
    s += "  GPU " + std::to_string(d) + ": " + p.name + ", " + std::to_string(p.totalGlobalMem >> 20) +
         " MiB, compute capability " + std::to_string(p.major) + "." + std::to_string(p.minor) + "\n";
  }
  if (devices > 0) {
    std::string why = probe_device();
    s += why.empty() ? "GPU kernel launch: ok\n" : "GPU kernel launch: failed (" + why + ")\n";
  }
  return s;
}

}  // namespace tensoropt
