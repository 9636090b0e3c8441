// Versions of the CUDA libraries linked in and the GPUs visible, as "key: value" lines.
// Only compiled when CUDA support is built (TENSOROPT_HAVE_CUDA). Thread-safe.
#pragma once

#include <string>

namespace tensoropt {

std::string cuda_info();

}  // namespace tensoropt
