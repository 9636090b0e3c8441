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
#include "tests/gpu.h"

namespace tensoropt::test {
namespace {

// The real driver when a GPU is visible; else nullptr, with the reason printed.
const TensoroptCudaDriver* gpu_driver(const char* test) {
  const TensoroptCudaModule* module = gpu_module(test);
  return module ? module->driver() : nullptr;
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
