// The data-movement family's files, each registered from register_movement (movement.cc), and what their
// kernels share with the resampling and shape kernels: reading constant operands, keeping them
// for backward, and a few shape helpers.
//
// Keeping operands: a backward may read only what the catalogue saves, and for most data-movement
// ops that is nothing, yet Slice's starts, Pad's pads, Resize's scales or ScatterND's indices
// decide where the gradient goes. These operands are constants after import (the executor holds
// them for the whole run), so forward keeps a view of them in OpState: a shared reference to the
// same block, no copy and no bytes beyond the planner's count. Only ScatterND's indices may be an
// activation; keeping them then holds that tensor until backward.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <vector>

#include "launcher/runtime/kernel.h"

namespace tensoropt::runtime::cpu {

void register_movement_slice(KernelTable& table);   // movement_slice.cc: Slice, Pad
void register_movement_gather(KernelTable& table);  // movement_gather.cc: Gather, GatherElements, ScatterND, OneHot

// Input k, or nullptr when it is absent (omitted or past the inputs given).
const Array* optional_input(const OpCall& c, int k);
// Forward keeps views of inputs `which` (absent ones as undefined Arrays) in state.saved, in order.
void keep_inputs(const OpCall& c, std::initializer_list<int> which);
// Backward's view of the k-th kept input; nullptr when it was absent.
const Array* kept(const GradCall& c, int k);

// An integer array's values (int64 or int32); empty for nullptr or an empty array.
std::vector<int64_t> ints_of(const Array* a);

// The bits of one element of dtype t holding `real` (float types) or `integer` (integer types and
// bool), in the low dtype_size(t) bytes; false for float16 and bfloat16.
bool element_bits(DType t, double real, int64_t integer, uint64_t& bits);

// Elements before and after an axis: a shape seen as [outer, shape[axis], inner].
inline int64_t outer_of(const Shape& s, int axis) { return numel(Shape(s.begin(), s.begin() + axis)); }
inline int64_t inner_of(const Shape& s, int axis) { return numel(Shape(s.begin() + axis + 1, s.end())); }

// axis + rank when negative (the catalogue has checked the range at import).
int norm_axis(int64_t axis, int rank);

// Slice(x, starts, ends, axes?, steps?)'s positions (movement_slice.cc), for both backends: per axis
// of `in`, the source index of each output position, start + i * step, with start and end taken
// from the end when negative and clamped as numpy does (to [0, n] for a positive step, [-1, n - 1]
// for a negative one). Opset < 10 gives starts, ends and axes as attributes; else `ints` reads the
// operands' values (ints_of here, a download on a GPU).
std::vector<std::vector<int64_t>> slice_index_maps(const Node& node, const Shape& in,
                                                   const std::function<std::vector<int64_t>(const Array*)>& ints,
                                                   const Array* starts, const Array* ends, const Array* axes,
                                                   const Array* steps);

}  // namespace tensoropt::runtime::cpu
