#include "profiler/device_id.h"

#include <unistd.h>

#include <fstream>

#ifdef TENSOROPT_HAVE_CUDA
#include "launcher/runtime/cuda/loader.h"
#endif

namespace tensoropt::profiler {

namespace {

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon != std::string::npos) return line.substr(line.find_first_not_of(" \t", colon + 1));
  }
  return "unknown CPU";
}

}  // namespace

DeviceId device_id(const runtime::Backend& backend) {
  DeviceId id;
  id.backend = std::string(backend.name());
  id.tensoropt = TENSOROPT_VERSION;
  const runtime::DeviceFacts facts = backend.facts();
  if (id.backend == "cpu") {
    id.name = cpu_model_name();
    id.units = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
    for (const auto& [k, v] : facts.fields) id.facts[k] = v;
    return id;
  }
  for (const auto& [k, v] : facts.fields) {
    if (k == "name") id.name = v;
    else if (k == "SMs") id.units = std::stoi(v);
    else if (k != "memory MiB") id.facts[k] = v;
  }
#ifdef TENSOROPT_HAVE_CUDA
  std::string why;
  if (const TensoroptCudaModule* module = runtime::cuda::load_module(&why)) {
    const std::string text = runtime::cuda::describe(*module);
    size_t at = 0;
    while (at < text.size()) {
      size_t end = text.find('\n', at);
      if (end == std::string::npos) end = text.size();
      const std::string line = text.substr(at, end - at);
      at = end + 1;
      const size_t colon = line.find(": ");
      if (colon != std::string::npos && line.find("version") != std::string::npos) id.facts[line.substr(0, colon)] = line.substr(colon + 2);
    }
  }
#endif
  if (id.units < 1) id.units = 1;
  return id;
}

}  // namespace tensoropt::profiler
