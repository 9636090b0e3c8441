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
    for (const auto& [k, v] : runtime::facts_from_lines(runtime::cuda::describe(*module)).fields)
      if (k.find("version") != std::string::npos || v.find("version") != std::string::npos) id.facts[k] = v;
  }
#endif
  if (id.units < 1) id.units = 1;
  return id;
}

}  // namespace tensoropt::profiler
