// Loading the CUDA module (module_abi.h) when it is needed: `tensoropt devices` and
// `run --device cuda` call these, nothing else does, so no other command loads the CUDA runtime,
// cuBLAS, cuDNN or NCCL. Host code only; compiled into the runtime when CUDA support is built
// (TENSOROPT_HAVE_CUDA), and it includes no CUDA header.
//
// The module is libtensoropt_cuda.so in the directory of the running binary (/proc/self/exe, so
// a symlink to the binary finds it too): the build writes both to build/cli/, and an install
// keeps them side by side. It is opened once (RTLD_NOW | RTLD_LOCAL) and kept open for the life of
// the process. Thread-safe.
#pragma once

#include <string>

#include "launcher/runtime/cuda/module_abi.h"

namespace tensoropt::runtime::cuda {

// Where the module is looked for: the TENSOROPT_CUDA_MODULE variable's path when set (the test
// binary, which lives elsewhere, uses it), else "<directory of this binary>/libtensoropt_cuda.so"
// (the current directory where /proc/self/exe cannot be read).
std::string module_path();

// The module's function table, loading it on the first call. nullptr when it cannot be had, with
// one clause into `why` naming the file and the reason: it is missing, it does not load
// (dlerror's reason: a CUDA library it needs is not found, say), or it has no entry point or
// another TENSOROPT_CUDA_ABI_VERSION. A failure is remembered: later calls give the same answer.
const TensoroptCudaModule* load_module(std::string* why);

// The module's describe() and gpu_count() with std::string (module_abi.h says what they report).
std::string describe(const TensoroptCudaModule& module);
int gpu_count(const TensoroptCudaModule& module, std::string* why);

}  // namespace tensoropt::runtime::cuda
