// The GPU tests' way in: the CUDA module this build wrote (TENSOROPT_CUDA_MODULE, else the one
// beside the tensoropt binary), when it loads and sees a GPU. Elsewhere a GPU test says in one
// line why it skipped ("GPU test skipped: <test>: <why>", printed and as a doctest message), and
// CTest reports it as skipped (tests/CMakeLists.txt).
#pragma once

#include "launcher/runtime/cuda/module_abi.h"

namespace tensoropt::test {

// The loaded module when a GPU is visible; nullptr after printing why not.
const TensoroptCudaModule* gpu_module(const char* test);

}  // namespace tensoropt::test
