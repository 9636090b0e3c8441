// The module's driver table (driver_abi.h), built over the GPU executor (device/device_exec.cuh).
// Compiled only into the CUDA module; module.cc hands it out through module_abi.h.
#pragma once

#include "launcher/runtime/cuda/driver_abi.h"

namespace tensoropt::cuda {

const TensoroptCudaDriver* driver_table();

}  // namespace tensoropt::cuda
