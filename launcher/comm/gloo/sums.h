// The element-wise sums the Gloo communicator's reductions (all_reduce, reduce_scatter) run, one
// per dtype that has one: float32, float64, int32, int64 added as themselves, and bfloat16 with
// each pair added in float32 and rounded to nearest even (as NCCL sums bfloat16), by graph/dtype.h's
// conversions, so a sum's bits are those graph/dtype.h gives. Every other dtype has none: an
// InternalError naming the collective (communicator.h: a sum on a dtype that has none is the
// caller's bug).
//
// An AddFn has Gloo's reduce-function shape: c[i] = a[i] + b[i] for n elements; c may be a (Gloo
// and the direct reduce-scatter reduce in place). Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "launcher/comm/communicator.h"

namespace tensoropt::comm::gloo_impl {

using AddFn = void (*)(void* c, const void* a, const void* b, size_t n);

// The sum of `dtype`; throws InternalError ("`what`: no sum for dtype ...") when it has none.
AddFn sum_fn(DType dtype, const char* what);

// Bytes of one element of a dtype a copy moves; throws InternalError ("`what`: dtype ... cannot
// be moved") for one without a size.
int64_t copy_size(DType dtype, const char* what);

// "#3 (2 bytes)": a dtype in an error message (dtype_name lives in the graph library, which this
// layer does not link).
std::string dtype_label(DType dtype);

}  // namespace tensoropt::comm::gloo_impl
