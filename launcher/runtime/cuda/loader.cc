#include "launcher/runtime/cuda/loader.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string_view>
#include <system_error>
#include <vector>

namespace tensoropt::runtime::cuda {
namespace {

struct Loaded {
  const TensoroptCudaModule* module = nullptr;
  std::string why;
};

Loaded load() {
  Loaded out;
  const std::string path = module_path();
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    out.why = "the CUDA module " + path + " is missing (the build writes it next to the tensoropt binary; install it there)";
    return out;
  }
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* reason = dlerror();
    out.why = "the CUDA module " + path + " does not load: " + (reason ? reason : "unknown reason");
    return out;
  }
  auto entry = reinterpret_cast<TensoroptCudaModuleEntry>(dlsym(handle, TENSOROPT_CUDA_MODULE_ENTRY));
  const TensoroptCudaModule* module = entry ? entry() : nullptr;
  if (!module || module->abi_version != TENSOROPT_CUDA_ABI_VERSION || std::string_view(module->abi_hash) != TENSOROPT_CUDA_ABI_HASH) {
    out.why = "the CUDA module " + path + " is not one of this tensoropt build (entry point " TENSOROPT_CUDA_MODULE_ENTRY
              ", ABI version " + std::to_string(TENSOROPT_CUDA_ABI_VERSION) + ")";
    dlclose(handle);
    return out;
  }
  out.module = module;  // the handle stays open: the table lives in the module
  return out;
}

// Calls `fill(buffer, size)` (module_abi.h's string convention) until the text fits.
template <class Fill>
std::string text_from(Fill fill) {
  std::vector<char> buffer(4096);
  for (;;) {
    const size_t n = fill(buffer.data(), buffer.size());
    if (n < buffer.size()) return std::string(buffer.data(), n);
    buffer.resize(n + 1);
  }
}

}  // namespace

std::string module_path() {
  if (const char* path = std::getenv("TENSOROPT_CUDA_MODULE"); path && *path) return path;
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  const std::filesystem::path dir = ec ? std::filesystem::current_path() : self.parent_path();
  return (dir / TENSOROPT_CUDA_MODULE_FILE).string();
}

const TensoroptCudaModule* load_module(std::string* why) {
  static std::once_flag once;
  static Loaded loaded;
  std::call_once(once, [] { loaded = load(); });
  if (!loaded.module) *why = loaded.why;
  return loaded.module;
}

std::string describe(const TensoroptCudaModule& module) {
  return text_from([&](char* text, size_t size) { return module.describe(text, size); });
}

int gpu_count(const TensoroptCudaModule& module, std::string* why) {
  char text[1024] = "";
  const int n = module.gpu_count(text, sizeof text);
  *why = text;
  return n;
}

}  // namespace tensoropt::runtime::cuda
