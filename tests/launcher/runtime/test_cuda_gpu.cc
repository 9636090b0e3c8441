// The CUDA backend on a GPU, held to the CPU backend: every kernel case (kernel_check.h) forward
// and backward, printed as a table so a missing or failing op shows. Runs where the CUDA module
// loads and sees a GPU (scripts/gpu-check runs it on a lent GPU machine); elsewhere it says in
// one visible line why it skipped. The module: TENSOROPT_CUDA_MODULE, else the one the build wrote
// beside the tensoropt binary.
// Tolerance (fp32): 2e-4 of |value| + 1 per element: the GPU's expf, erff and tanhf are within a
// few ulp of glibc's, and cuBLASLt sums products in another order than Eigen.
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iomanip>
#include <sstream>

#include "launcher/runtime/cpu/backend.h"
#include "launcher/runtime/cuda/backend.h"
#include "tests/launcher/runtime/backend_compare.h"
#include "tests/launcher/runtime/fixture_training.h"
#ifdef TENSOROPT_HAVE_CUDA
#include "launcher/runtime/cuda/loader.h"
#endif

namespace tensoropt::test {
namespace {

// The real driver when a GPU is visible; else nullptr with the reason printed.
const TensoroptCudaDriver* gpu_driver(const char* test) {
#ifdef TENSOROPT_HAVE_CUDA
  if (!std::getenv("TENSOROPT_CUDA_MODULE")) {
    const auto beside = std::filesystem::path(TENSOROPT_BINARY).parent_path() / "libtensoropt_cuda.so";
    setenv("TENSOROPT_CUDA_MODULE", beside.c_str(), 1);
  }
  std::string why;
  const TensoroptCudaModule* module = runtime::cuda::load_module(&why);
  if (module && runtime::cuda::gpu_count(*module, &why) > 0) return module->driver();
  std::printf("GPU test skipped: %s: %s\n", test, why.c_str());
  MESSAGE("GPU test skipped: " << why);
  return nullptr;
#else
  std::printf("GPU test skipped: %s: this build has no CUDA support\n", test);
  MESSAGE("GPU test skipped: this build has no CUDA support");
  return nullptr;
#endif
}

}  // namespace

TEST_CASE("gpu: every CUDA kernel against the CPU backend, forward and backward, on every kernel case") {
  const TensoroptCudaDriver* driver = gpu_driver("kernels against the CPU backend");
  if (!driver) return;
  runtime::cpu::CpuBackend cpu(2);
  runtime::cuda::CudaBackend cuda(*driver, 0);
  std::ostringstream table;
  table << std::left << std::setw(22) << "op" << std::setw(48) << "case" << std::setw(12) << "forward" << std::setw(12) << "gradient"
        << "status\n";
  int ok = 0, other = 0, missing = 0;
  for (const KernelCase& c : all_kernel_cases()) {
    const Comparison r = compare_backends(c, cpu, cuda, 2e-4);
    if (r.status == "no kernel") ++missing;
    else if (r.status == "ok") ++ok;
    else ++other;
    table << std::left << std::setw(22) << r.op << std::setw(48) << r.name.substr(0, 46) << std::setw(12) << std::setprecision(3)
          << r.forward_error << std::setw(12) << r.gradient_error << r.status.substr(0, 160) << "\n";
    if (r.status == "mismatch" || r.status.rfind("failed", 0) == 0) FAIL_CHECK(r.op << " / " << r.name << ": " << r.status);
  }
  std::printf("%s", table.str().c_str());
  std::printf("kernel cases: %d equal on the GPU, %d refused or failed, %d without a CUDA kernel\n", ok, other, missing);
  MESSAGE(ok << " kernel cases equal on the GPU");
}

TEST_CASE("gpu: the runtime fixtures train on the GPU as PyTorch does, three steps of every optimizer") {
  const TensoroptCudaDriver* driver = gpu_driver("fixture training");
  if (!driver) return;
  runtime::cuda::CudaBackend cuda(*driver, 0);
  std::string missing;
  const std::vector<std::string> names = fixtures_with_kernels(cuda, &missing);
  std::printf("fixtures trained on the GPU: %zu of %zu%s%s\n", names.size(), training_fixtures().size(),
              missing.empty() ? "" : "; not yet (an op without a CUDA kernel):", missing.c_str());
  CHECK_MESSAGE(missing.empty(), "fixtures the CUDA backend cannot run yet:" << missing);
  for (const std::string& name : names) {
    for (const char* optimizer : {"sgd", "adam", "adamw"}) check_fixture_training(&cuda, name, optimizer);
  }
}

}  // namespace tensoropt::test
