// What `tensoropt devices` reports: the devices `run --device` can use on this machine now. The
// CPU, and, where CUDA support is built, what the CUDA module finds: the CUDA runtime, cuDNN,
// cuBLAS and NCCL versions loaded, the GPUs visible (zero, with the reason, on a machine without
// a GPU or driver) and whether a kernel launches. This loads the CUDA module
// (launcher/runtime/cuda/loader.h) and with it the CUDA libraries.
#pragma once

#include <string>

namespace tensoropt {

// "key: value" lines. Throws InputError, one line naming the module's path, when the module is
// missing or does not load.
std::string devices_info();

}  // namespace tensoropt
