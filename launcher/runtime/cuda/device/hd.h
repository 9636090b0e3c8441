// What the CUDA backend's kernel sources (device/*.h) share, compiled twice: by nvcc into the CUDA
// module, where TO_HD functions run on the GPU, and by the host compiler into the tests' emulated
// driver (host_exec.h), where the same functions run on the CPU. Nothing here includes a CUDA
// header, so the host build needs no toolkit.
//
// TO_HD marks a function for both sides; TO_HD_LAMBDA a lambda handed to an executor's each() or
// rows() (an nvcc extended lambda: the module is built with --extended-lambda).
// Lanes: the threads that share one row of a row kernel (a warp on the GPU, one thread on the
// host); sum() and max() combine a value over them, and every lane gets the result.
#pragma once

#include <stdint.h>
#include <string.h>

#include <cmath>

#if defined(__CUDACC__)
#define TO_HD __host__ __device__ __forceinline__
#define TO_HD_LAMBDA __host__ __device__
#else
#define TO_HD inline
#define TO_HD_LAMBDA
#endif

namespace tensoropt::cuda_kernels {

TO_HD uint32_t float_bits(float v) {
  uint32_t b;
  memcpy(&b, &v, 4);
  return b;
}
TO_HD float bits_float(uint32_t b) {
  float v;
  memcpy(&v, &b, 4);
  return v;
}
// float32 <-> bfloat16 bit patterns as graph/dtype.h: nearest, ties to even; NaN stays NaN.
TO_HD uint16_t to_bf16(float v) {
  uint32_t bits = float_bits(v);
  if ((bits & 0x7f800000u) == 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | ((bits & 0xffffu) ? 0x40u : 0u));
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}
TO_HD float from_bf16(uint16_t h) { return bits_float(static_cast<uint32_t>(h) << 16); }

struct Lanes {
  int lane = 0;   // this thread's index in the row's group
  int width = 1;  // threads per row
  TO_HD float sum(float v) const {
#if defined(__CUDA_ARCH__)
    for (int o = width / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
#endif
    return v;
  }
  TO_HD double sum(double v) const {
#if defined(__CUDA_ARCH__)
    for (int o = width / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
#endif
    return v;
  }
  TO_HD float max(float v) const {
#if defined(__CUDA_ARCH__)
    for (int o = width / 2; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
#endif
    return v;
  }
};

}  // namespace tensoropt::cuda_kernels
