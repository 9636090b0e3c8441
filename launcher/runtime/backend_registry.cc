#include "launcher/runtime/backend_registry.h"

#include "graph/error.h"
#include "launcher/runtime/cpu/backend.h"
#include "launcher/runtime/cpu/denormals.h"
#include "launcher/runtime/cpu/linear_block_gemm.h"

namespace tensoropt::runtime {
namespace {

struct Entry {
  const char* name;
  std::unique_ptr<Backend> (*make)(const BackendOptions&);
  void (*check_environment)();  // InputError for a setting of the environment the backend refuses
};

// One entry per backend.
const Entry kBackends[] = {
    {"cpu", [](const BackendOptions& o) -> std::unique_ptr<Backend> { return std::make_unique<cpu::CpuBackend>(o.threads); },
     [] {
       (void)cpu::block_gemm_isa();  // a bad TENSOROPT_GEMM
       (void)cpu::denormal_mode();   // a bad TENSOROPT_DENORMALS
     }},
};

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
  const std::string why = device == "cuda" ? "the CUDA backend is not built yet" : "no such backend";
  throw InputError("--device " + std::string(device) + ": " + why + " (this build trains on: " + allowed + ")");
}

std::unique_ptr<Backend> make_backend(std::string_view device, const BackendOptions& options) {
  const Entry* e = find(device);
  TO_CHECK(e != nullptr);
  return e->make(options);
}

}  // namespace tensoropt::runtime
