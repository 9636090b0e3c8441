// The CUDA backend over the host emulation of its driver (launcher/runtime/cuda/device/
// host_exec.h): the same kernel sources and the same host logic as on a GPU, run on the CPU, for
// the tests that hold the CUDA backend to the CPU backend on machines without a GPU.
#pragma once

#include "launcher/runtime/cuda/backend.h"

namespace tensoropt::test {

// The emulated driver table (one per process).
const TensoroptCudaDriver& emulated_cuda_driver();

}  // namespace tensoropt::test
