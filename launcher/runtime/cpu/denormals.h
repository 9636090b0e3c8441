// Subnormal floats in the CPU kernels: flushed to zero by default.
//
// Why: on Intel Xeons a floating-point operation whose input or result is subnormal (below about
// 1.2e-38 in fp32) takes a microcode assist costing some hundred cycles, and training makes them:
// the probabilities a causal mask leaves after softmax, gradients that shrink. Measured on an H100
// machine's Xeon (16 vCPUs), a 2-layer small GPT step at batch 8 took 19 s at 1 thread with them
// kept and TENSOROPT's AVX-512 GEMM (37 s with the AVX2 one), against 0.57 s on this project's AMD
// EPYC, which has no such penalty. Flushing sets FTZ (results) and DAZ (inputs) in each compute
// thread's MXCSR, as TensorFlow does on CPU and torch.set_flush_denormal(True) offers: values
// below the normal range become zero, a change far below fp32 training's other rounding.
//
// TENSOROPT_DENORMALS=keep in the environment keeps IEEE subnormals (clearing FTZ and DAZ, even
// where a host process had set them); =flush, the default, or unset flushes. Another value is an
// InputError from the first call of either function below (run calls denormal_mode before its
// first step, beside block_gemm_isa). On processors without SSE control registers (not x86) both
// modes leave the floating-point state alone.
//
// flush_denormals_here(): applies the mode to the calling thread (once per thread; the kernels'
// parallel_for calls it in every chunk, so OpenMP's threads get it; threads made by one that has
// it, such as Eigen's and Gloo's, inherit the control register on Linux). Thread-safe.
#pragma once

namespace tensoropt::runtime::cpu {

// "flush" or "keep", from TENSOROPT_DENORMALS, parsed once.
[[nodiscard]] const char* denormal_mode();

void flush_denormals_here();

}  // namespace tensoropt::runtime::cpu
