#include "tests/gpu.h"

#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#ifdef TENSOROPT_HAVE_CUDA
#include "launcher/runtime/cuda/loader.h"
#endif

namespace tensoropt::test {

const TensoroptCudaModule* gpu_module(const char* test) {
  std::string why = "this build has no CUDA support";
#ifdef TENSOROPT_HAVE_CUDA
  if (!std::getenv("TENSOROPT_CUDA_MODULE")) {
    const auto beside = std::filesystem::path(TENSOROPT_BINARY).parent_path() / "libtensoropt_cuda.so";
    setenv("TENSOROPT_CUDA_MODULE", beside.c_str(), 1);
  }
  const TensoroptCudaModule* module = runtime::cuda::load_module(&why);
  if (module && runtime::cuda::gpu_count(*module, &why) > 0) return module;
#endif
  std::printf("GPU test skipped: %s: %s\n", test, why.c_str());
  MESSAGE("GPU test skipped: " << why);
  return nullptr;
}

}  // namespace tensoropt::test
