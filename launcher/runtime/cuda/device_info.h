// Versions of the CUDA libraries loaded and the GPUs visible. Compiled only into the CUDA module
// (libtensoropt_cuda.so, module_abi.h), never into the tensoropt binary. Works without a GPU or
// driver (zero GPUs, and why). Thread-safe.
#pragma once

#include <string>

namespace tensoropt {

// "key: value" lines: CUDA runtime, cuDNN, cuBLAS and NCCL versions as loaded, "GPUs visible: N"
// (with the reason when 0), a line per GPU, and whether a kernel launches on GPU 0.
std::string cuda_info();

// How many GPUs the CUDA runtime sees; when none, `why` says why (its error string).
int visible_gpus(std::string* why);

}  // namespace tensoropt
