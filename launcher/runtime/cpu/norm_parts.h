// What the norm-family kernels (norm_*.cc, registered by norm.cc) share: the rows a run of axes
// splits a tensor into, sums along a row in double, attribute checks, inputs that backward needs
// although the catalogue does not save them, and each file's registration function.
//
// Rows legend: a tensor seen as [outer, n, inner] around axes [begin, end) has outer * inner rows
// of n elements each, element k of row r at start(r) + k * inner. Row r's position in a tensor
// with the n axis removed (or kept as 1) is r itself: reductions index their outputs by it.
#pragma once

#include <cstdint>

#include "launcher/runtime/array.h"
#include "launcher/runtime/kernel.h"

namespace tensoropt::runtime::cpu {

struct Rows {
  int64_t outer = 1, n = 1, inner = 1;
  int64_t count() const { return outer * inner; }
  int64_t start(int64_t r) const { return (r / inner) * n * inner + r % inner; }
};

// The rows of `s` around axes [begin, end).
Rows rows_of(const Shape& s, int begin, int end);

// Rows handed to one thread at a time: about 16K elements' worth.
inline int64_t row_grain(int64_t n) { return n > 0 && n < 16384 ? 16384 / n : 1; }

// sum of p[k * stride] for k < n, accumulated in double (four partial sums).
double row_sum(const float* p, int64_t n, int64_t stride);

// The int attribute `key` (default `fallback`) as an axis in [0, rank); kernel_error otherwise.
int node_axis(const Node& node, const char* key, int64_t fallback, int rank);


// Input `i` for backward, when the catalogue does not save it (a normalisation's scale, the
// constant axes of a reduction). Parameters, buffers and constants live through the whole step,
// so the view kept costs no bytes; any other input (a scale computed by an earlier node) is
// copied into an Activations array, bytes the catalogue does not charge.
Array keep_input(const OpCall& c, int i);

void register_norm_axis(KernelTable& table);     // norm_axis.cc: Softmax, LogSoftmax, LpNormalization
void register_norm_layer(KernelTable& table);    // norm_layer.cc: LayerNormalization
void register_norm_group(KernelTable& table);    // norm_group.cc: GroupNormalization, InstanceNormalization
void register_norm_batch(KernelTable& table);    // norm_batch.cc: BatchNormalization
void register_norm_reduce(KernelTable& table);   // norm_reduce.cc: Reduce*
void register_norm_select(KernelTable& table);   // norm_select.cc: ArgMax, ArgMin, TopK, CumSum

}  // namespace tensoropt::runtime::cpu
