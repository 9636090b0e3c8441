// What this tensoropt binary was built with: version, whether CUDA support is compiled in and, if
// it is, the versions of the CUDA runtime, cuDNN, cuBLAS and NCCL it was compiled against (their
// headers' version macros). Loads nothing: the CUDA libraries are the CUDA module's
// (launcher/runtime/cuda/module_abi.h), and launcher/devices.h reports the versions loaded and
// the GPUs visible. Thread-safe.
#pragma once

#include <string>

namespace tensoropt {

// Multi-line, human-readable; first line "tensoropt X.Y.Z", then "CUDA support: yes ..." or
// "CUDA support: no ...", then (with CUDA) the versions compiled against and a line pointing to
// `tensoropt devices`.
std::string build_info();
bool built_with_cuda();

}  // namespace tensoropt
