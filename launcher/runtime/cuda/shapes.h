// Shape helpers of the CUDA backend's host side: the broadcast descriptor of the driver
// (driver_abi.h's TensoroptBroadcast) from numpy-broadcast shapes, the sum of an output-shaped
// gradient back onto a broadcast operand, and the float32 check every kernel makes.
#pragma once

#include "launcher/runtime/cuda/backend.h"

namespace tensoropt::runtime::cuda {

// Refuses (kernel_error) an operand that is not float32: "<what> is int64[2,3]; the CUDA kernel
// takes float32".
void require_f32(const Node& node, const Array& a, const char* what);
// The same for a kernel that reads bfloat16 as stored (OpKernel::takes_bf16): float32 or
// bfloat16; returns its TO_DTYPE_*.
int require_float(const Node& node, const Array& a, const char* what);

// `a` and `b` broadcast (numpy rules, aligned right) to `out`: out's shape and each operand's
// element strides per output axis, 0 along the axes it is broadcast along. kernel_error when out
// has more than TO_MAX_RANK axes.
TensoroptBroadcast broadcast_of(const Node& node, const Shape& out, const Shape& a, const Shape& b);

// dst (float32) = src (float32 or bfloat16) summed over the axes dst's shape is broadcast along to
// reach src's (overwrites dst).
void sum_onto(CudaBackend& be, const Node& node, const Array& src, Array& dst);

}  // namespace tensoropt::runtime::cuda
