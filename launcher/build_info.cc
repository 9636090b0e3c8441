#include "launcher/build_info.h"

#ifdef TENSOROPT_HAVE_CUDA
#include "launcher/runtime/cuda/device_info.h"
#endif

namespace tensoropt {

bool built_with_cuda() {
#ifdef TENSOROPT_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

std::string build_info() {
  std::string s = "tensoropt " TENSOROPT_VERSION "\n";
#ifdef TENSOROPT_HAVE_CUDA
  s += "CUDA support: yes\n" + cuda_info();
#else
  s += "CUDA support: no (built without a CUDA toolkit; CPU only)\n";
#endif
  return s;
}

}  // namespace tensoropt
