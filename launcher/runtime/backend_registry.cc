#include "launcher/runtime/backend_registry.h"

#include <filesystem>
#include <system_error>

#include "graph/error.h"
#include "launcher/runtime/cpu/backend.h"
#include "launcher/runtime/cpu/denormals.h"
#include "launcher/runtime/cpu/linear_block_gemm.h"
#include "launcher/runtime/cuda/backend.h"
#ifdef TENSOROPT_HAVE_CUDA
#include "launcher/runtime/cuda/loader.h"
#endif

namespace tensoropt::runtime {
namespace {

struct Entry {
  const char* name;
  std::unique_ptr<Backend> (*make)(const BackendOptions&);
  void (*check_environment)();  // InputError for a setting of the environment the backend refuses
};

#ifdef TENSOROPT_HAVE_CUDA
// The CUDA module's driver table (cuda/loader.h); InputError naming --device cuda when the module
// does not load or sees no GPU.
const TensoroptCudaDriver& cuda_driver() {
  std::string why;
  const TensoroptCudaModule* module = cuda::load_module(&why);
  if (!module) throw InputError("--device cuda: " + why);
  const int gpus = cuda::gpu_count(*module, &why);
  if (gpus == 0) throw InputError("--device cuda: no GPU visible (" + why + "); tensoropt devices says what this machine has");
  return *module->driver();
}
#endif

// One entry per backend.
const Entry kBackends[] = {
    {"cpu", [](const BackendOptions& o) -> std::unique_ptr<Backend> { return std::make_unique<cpu::CpuBackend>(o.threads); },
     [] {
       (void)cpu::block_gemm_isa();  // a bad TENSOROPT_GEMM
       (void)cpu::denormal_mode();   // a bad TENSOROPT_DENORMALS
     }},
#ifdef TENSOROPT_HAVE_CUDA
    {"cuda", [](const BackendOptions& o) -> std::unique_ptr<Backend> { return std::make_unique<cuda::CudaBackend>(cuda_driver(), o.gpu); },
     [] { (void)cuda_driver(); }},
#endif
};

#ifndef TENSOROPT_HAVE_CUDA
[[noreturn]] void refuse_cuda(const std::string& allowed) {
  throw InputError("--device cuda: this build has no CUDA support (built without a CUDA toolkit, or with TENSOROPT_CUDA=OFF; it trains on: " + allowed + ")");
}
#endif

const Entry* find(std::string_view device) {
  for (const Entry& e : kBackends)
    if (device == e.name) return &e;
  return nullptr;
}

}  // namespace

std::vector<std::string> backend_names() {
  std::vector<std::string> names;
  for (const Entry& e : kBackends) names.emplace_back(e.name);
  return names;
}

void check_device(std::string_view device) {
  if (const Entry* e = find(device)) {
    e->check_environment();
    return;
  }
  std::string allowed;
  for (const std::string& n : backend_names()) allowed += (allowed.empty() ? "" : ", ") + n;
#ifndef TENSOROPT_HAVE_CUDA
  if (device == "cuda") refuse_cuda(allowed);
#endif
  throw InputError("--device " + std::string(device) + ": no such backend (this build trains on: " + allowed + ")");
}

std::string default_device() {
#ifdef TENSOROPT_HAVE_CUDA
  std::error_code ec;
  if (!std::filesystem::exists("/dev/nvidiactl", ec)) return "cpu";
  std::string why;
  const TensoroptCudaModule* module = cuda::load_module(&why);
  if (module && cuda::gpu_count(*module, &why) > 0) return "cuda";
#endif
  return "cpu";
}

void check_local_gpus(std::string_view device, int workers, std::string_view flag) {
#ifdef TENSOROPT_HAVE_CUDA
  if (device != "cuda") return;
  std::string why;
  const TensoroptCudaModule* module = cuda::load_module(&why);
  if (!module) throw InputError("--device cuda: " + why);
  const int gpus = cuda::gpu_count(*module, &why);
  if (gpus < workers)
    throw InputError(std::string(flag) + " " + std::to_string(workers) + " with --device cuda: one GPU per worker, and " + std::to_string(gpus) +
                     (gpus == 1 ? " is" : " are") + " visible here (CUDA_VISIBLE_DEVICES chooses which)");
#else
  (void)device;
  (void)workers;
  (void)flag;
#endif
}

std::unique_ptr<Backend> make_backend(std::string_view device, const BackendOptions& options) {
  const Entry* e = find(device);
  TO_CHECK(e != nullptr);
  return e->make(options);
}

}  // namespace tensoropt::runtime
