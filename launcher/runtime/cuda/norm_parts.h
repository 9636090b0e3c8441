// What the CUDA norm family's host files (norm_*.cc, registered by norm.cc) share: rows along
// an axis (device/norm_rows.h's AxisRows), attribute checks, a small index input brought to the
// host, and inputs kept for backward. Mirrors cpu/norm_parts.h; kernels refuse what they do not
// implement with kernel_error, naming the node.
#pragma once

#include <cstdint>
#include <vector>

#include "launcher/runtime/cuda/backend.h"
#include "launcher/runtime/cuda/device/norm_rows.h"

namespace tensoropt::runtime::cuda {

// The rows of `s` around axes [begin, end): outer = the axes before, n = those in, inner = after.
cuda_kernels::AxisRows rows_of(const Shape& s, int begin, int end);

// The int attribute `key` (default `fallback`) as an axis in [0, rank); kernel_error otherwise.
int node_axis(const Node& node, const char* key, int64_t fallback, int rank);

// The values of an int64 or int32 array (a constant's axes, CumSum's axis), downloaded: a wait
// for the stream, made only where a shape decision needs a device value.
std::vector<int64_t> read_indices(CudaBackend& be, const Node& node, const Array& a);

// Input `i` for backward when the catalogue does not save it (a normalisation's scale, the
// constant axes of a reduction): a view of a parameter or buffer, which lives through the step;
// any other input is copied on the device into an Activations array.
Array keep_input(CudaBackend& be, const OpCall& c, int i);

// A float32 or bfloat16 array as the kernels read or write it (device/norm_rows.h's FloatIn,
// FloatOut: bfloat16 as stored under mixed precision); null: absent. kernel_error naming `what`
// for another dtype.
cuda_kernels::FloatIn float_in(const Node& node, const Array* a, const char* what);
cuda_kernels::FloatOut float_out(const Node& node, Array* a, const char* what);
// Element i of v as float_in (absent past v's end or where null).
inline cuda_kernels::FloatIn float_in_at(const Node& node, const std::vector<const Array*>& v, size_t i, const char* what) {
  return float_in(node, i < v.size() ? v[i] : nullptr, what);
}

// The float pointer of an optional output (null when absent).
inline float* out_or_null(const std::vector<Array*>& v, size_t i) { return i < v.size() && v[i] ? v[i]->data<float>() : nullptr; }

void register_norm_axis(CudaBackend& be, KernelTable& table);    // norm_axis.cc: Softmax, LogSoftmax, LpNormalization
void register_norm_layer(CudaBackend& be, KernelTable& table);   // norm_layer.cc: LayerNormalization
void register_norm_group(CudaBackend& be, KernelTable& table);   // norm_group.cc: GroupNormalization, InstanceNormalization
void register_norm_batch(CudaBackend& be, KernelTable& table);   // norm_batch.cc: BatchNormalization
void register_norm_reduce(CudaBackend& be, KernelTable& table);  // norm_reduce.cc: Reduce*
void register_norm_select(CudaBackend& be, KernelTable& table);  // norm_select.cc: ArgMax, ArgMin, TopK, CumSum

}  // namespace tensoropt::runtime::cuda
