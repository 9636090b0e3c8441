// What the CUDA elementwise files share (family-private): elementwise.cc (float32 unary maths and
// the two-input arithmetic), elementwise_arith.cc (Mod, Sum, Mean, Min, Max, PRelu),
// elementwise_logic.cc (comparisons, logic, IsNaN, IsInf, Where), elementwise_misc.cc (Clip,
// Dropout, Cast). Kernel sources: device/elementwise_more.h and the driver table's unary/binary.
#pragma once

#include <vector>

#include "launcher/runtime/cuda/backend.h"
#include "launcher/runtime/cuda/device/elementwise_more.h"
#include "launcher/runtime/cuda/shapes.h"

namespace tensoropt::runtime::cuda {

inline int dtype_code(DType t) { return static_cast<int>(t); }

// out = op(a, b) broadcast (cuda_kernels::EW_* op; b null: every b is b_scalar) for operands of
// one dtype among float32, float64, int64, int32 (and bool for the predicates); out may be a.
// An integer Div or Mod by zero is the CPU's kernel_error (the one case that waits for the GPU).
void typed_binary(CudaBackend& be, const Node& node, const StepContext& ctx, int op, const Array& a, const Array* b,
                  double b_scalar, Array& out, int fmod = 0);

// dst = src converted (device/elementwise_misc.h's ew_cast; same element count).
void cast_array(CudaBackend& be, const Node& node, const Array& src, Array& dst, int round = cuda_kernels::EW_ROUND_NONE);
// dst = src byte for byte (same bytes).
void copy_array(CudaBackend& be, const Array& src, Array& dst, const char* what);
// dst = src: a copy when their dtypes agree, else converted (cast_array): a bfloat16 tensor as
// stored into a float32 one, say.
void copy_or_cast(CudaBackend& be, const Node& node, const Array& src, Array& dst);

// Gradient terms of a broadcast op, output-shaped: target(k) is din[k] itself when input k has
// the output's shape, else an output-shaped transient that finish() sums onto din[k]; null when
// din[k] is not wanted.
class GradientTerms {
 public:
  GradientTerms(const GradCall& c, const Shape& out) : c_(c), out_(out), full_(c.din.size()) {}
  float* target(size_t k);
  void finish(CudaBackend& be);

 private:
  const GradCall& c_;
  Shape out_;
  std::vector<Array> full_;
};

// din[k] = dout (float32 or bfloat16) summed onto input k's shape, times `factor`, for every
// wanted k (Add-like gradients: Sum, Mean, Mod's dividend).
void sum_gradients(CudaBackend& be, const GradCall& c, float factor);

// The two-input backward of binary.h (TO_BINARY_*): Add, Sub, Mul, Div, Pow, Min, Max; the saved
// inputs and the output gradient float32 or bfloat16 (as stored), the input gradients float32.
void binary_backward_float(CudaBackend& be, int code, const GradCall& c);

void register_elementwise_arith(CudaBackend& be, KernelTable& table);  // elementwise_arith.cc
void register_elementwise_logic(CudaBackend& be, KernelTable& table);  // elementwise_logic.cc
void register_elementwise_misc(CudaBackend& be, KernelTable& table);   // elementwise_misc.cc

}  // namespace tensoropt::runtime::cuda
