// The C entry point of the CUDA module, libtensoropt_cuda.so: everything of tensoropt that needs
// the CUDA runtime, cuBLAS, cuDNN or NCCL lives in that shared object, so that the tensoropt binary
// itself links none of them and starts without loading them (`--version`, `plan`, `run --device
// cpu`). The binary loads the module only for `devices` and `run --device cuda`
// (launcher/runtime/cuda/loader.h), from the directory the binary itself is in.
//
// The contract is C, so that the loader and the module need agree on nothing but this header:
// the module exports one function, `tensoropt_cuda_module`, which returns a table of functions
// that lives as long as the process. `abi_version` is TENSOROPT_CUDA_ABI_VERSION and `abi_hash`
// TENSOROPT_CUDA_ABI_HASH of the module's build (a hash of this header, driver_abi.h and nccl_abi.h that the
// build computes); the loader refuses any other (a module left over from another tensoropt build).
// Strings cross as caller-owned buffers: a function writes at most `size` bytes including the
// terminating NUL; `describe` returns the length of its whole text, so a caller can retry with a
// larger buffer, and `gpu_count`'s reason is cut to fit. Every function is safe to call on a machine without a GPU or driver, and thread-safe.
#pragma once

#include <stddef.h>

#include "launcher/comm/nccl/nccl_abi.h"
#include "launcher/runtime/cuda/driver_abi.h"

#define TENSOROPT_CUDA_ABI_VERSION 2
#define TENSOROPT_CUDA_MODULE_FILE "libtensoropt_cuda.so"
#define TENSOROPT_CUDA_MODULE_ENTRY "tensoropt_cuda_module"

#ifdef __cplusplus
extern "C" {
#endif

struct TensoroptCudaModule {
  int abi_version;
  const char* abi_hash;
  // The versions of the CUDA runtime, cuDNN, cuBLAS and NCCL loaded, the GPUs visible (name,
  // memory, compute capability) and whether a kernel launches, as "key: value" lines.
  size_t (*describe)(char* text, size_t size);
  // How many GPUs are visible; when none, why not (the CUDA runtime's reason) into `why`.
  int (*gpu_count)(char* why, size_t size);
  // The device operations of the CUDA backend (driver_abi.h).
  const struct TensoroptCudaDriver* (*driver)(void);
  // NCCL and the CUDA runtime calls of the NCCL communicator (launcher/comm/nccl/nccl_abi.h).
  const struct TensoroptNcclApi* (*nccl)(void);
};

typedef const struct TensoroptCudaModule* (*TensoroptCudaModuleEntry)(void);

#ifdef __cplusplus
}
#endif
