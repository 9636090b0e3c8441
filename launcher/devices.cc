#include "launcher/devices.h"

#include <thread>

#include "graph/error.h"
#ifdef TENSOROPT_HAVE_CUDA
#include "launcher/runtime/cuda/loader.h"
#endif

namespace tensoropt {

std::string devices_info() {
  std::string s = "cpu: " + std::to_string(std::thread::hardware_concurrency()) + " hardware threads (run --device cpu)\n";
#ifdef TENSOROPT_HAVE_CUDA
  std::string why;
  const TensoroptCudaModule* module = runtime::cuda::load_module(&why);
  if (!module) throw InputError("devices: " + why);
  s += "CUDA module: " + runtime::cuda::module_path() + "\n";
  s += runtime::cuda::describe(*module);
#else
  s += "CUDA support: no (built without a CUDA toolkit; CPU only)\n";
#endif
  return s;
}

}  // namespace tensoropt
