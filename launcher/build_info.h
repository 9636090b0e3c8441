// What this tensoropt binary was built with: version, whether CUDA support is compiled in, and the
// versions of the CUDA runtime, cuDNN, cuBLAS and NCCL it links, plus how many GPUs are visible
// now. Works without a GPU or driver (reports zero GPUs and why). Thread-safe.
#pragma once

#include <string>

namespace tensoropt {

// Multi-line, human-readable; first line "tensoropt X.Y.Z".
std::string build_info();
bool built_with_cuda();

}  // namespace tensoropt
