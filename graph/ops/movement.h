// The data-movement ops' catalogue entries (docs/ops.md, family "data movement"): Reshape, Flatten,
// Squeeze, Unsqueeze (movement_view.cc); Transpose, Concat, Split, Expand, Tile, Trilu
// (movement.cc); Slice and Pad (movement_slice.cc); Gather, GatherElements, ScatterND and OneHot
// (movement_gather.cc), as the CPU kernels in launcher/runtime/cpu/movement*.cc are laid out. None
// computes anything; all fold when their inputs are constants. This header holds what the files
// share; register_movement (helpers.h) adds them all. N = output elements.
#pragma once

#include <string>
#include <vector>

#include "graph/ops/helpers.h"

namespace tensoropt::ops {

// Copy a constant into a new shape keeping the linear order (Reshape, Flatten, Squeeze, ...).
Value relabel(const Value& in, const Shape& shape);

// Fold by an index map: element k of the output (shape `shape`, index `idx`) is element
// src(idx) of input 0, or the pad value when src returns -1.
template <typename Src>
Value gather_fold(const Value& in, DType t, const Shape& shape, Src src, double pad = 0) {
  Value out = make_value(t, shape);
  int64_t n = checked_numel(shape);
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t k = 0; k < n; ++k) {
    int64_t s = src(idx);
    if (s < 0) set_elem(out, k, pad, saturate_to_int64(pad));
    else set_elem(out, k, in.real(s), in.integer(s));
    next_index(idx, shape);
  }
  return out;
}

// The row-major linear index of `idx` in `shape`.
inline int64_t linear(const std::vector<int64_t>& idx, const Shape& shape) {
  int64_t l = 0;
  for (size_t a = 0; a < shape.size(); ++a) l = l * shape[a] + idx[a];
  return l;
}

// An entry with no FLOPs and nothing saved, in the data-movement family.
OpDef movement(const std::string& type, std::vector<int> nondiff);

void register_movement_views(std::vector<OpDef>& ops);    // movement_view.cc
void register_movement_slices(std::vector<OpDef>& ops);   // movement_slice.cc
void register_movement_indexed(std::vector<OpDef>& ops);  // movement_gather.cc

}  // namespace tensoropt::ops
