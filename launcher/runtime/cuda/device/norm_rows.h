// What the norm family's kernel sources (device/norm_*.h) share: rows along an axis, the
// combinations over a row's lanes that hd.h's Lanes lacks (min, product, the arg-extreme pair,
// an inclusive scan), and the launch that picks a layout per row shape.
//
// Rows legend (as the CPU kernels' cpu/norm_parts.h): a tensor seen as [outer, n, inner] around
// an axis has outer * inner rows of n elements, element k of row r at row_start(r) + k * inner.
// axis_rows() runs body(lanes, r) for every row: contiguous rows (inner = 1) get a warp each
// (coalesced along the row); strided rows get a thread each, so neighbouring threads read
// neighbouring rows' elements (coalesced across rows). A body must let every lane of its group
// reach each combination (no lane returns early).
//
// Float tensors (FloatIn, FloatOut): an array of float32 or bfloat16 (TO_DTYPE_*) as the kernels
// read and write it, so they take bfloat16 as stored under mixed precision (OpKernel::takes_bf16):
// elements are read as float (exact), computed on in float32 as before and written rounded to
// nearest even once (primitives.h's load_float, store_float). The branch on the dtype is the same
// for every thread of a launch.
#pragma once

#include <stdint.h>

#include "launcher/runtime/cuda/device/hd.h"
#include "launcher/runtime/cuda/device/primitives.h"

namespace tensoropt::cuda_kernels {

TO_HD int64_t float_bytes(int dtype) { return dtype == TO_DTYPE_F32 ? 4 : 2; }

struct FloatIn {
  const void* p;  // null: absent
  int dtype;      // TO_DTYPE_F32 or TO_DTYPE_BF16
  TO_HD float operator[](int64_t i) const { return load_float(p, dtype, i); }
  TO_HD FloatIn at(int64_t offset) const { return {static_cast<const char*>(p) + offset * float_bytes(dtype), dtype}; }
  TO_HD explicit operator bool() const { return p != nullptr; }
};

struct FloatOut {
  void* p;  // null: absent
  int dtype;
  TO_HD void set(int64_t i, float v) const { store_float(p, dtype, i, v); }
  TO_HD FloatOut at(int64_t offset) const { return {static_cast<char*>(p) + offset * float_bytes(dtype), dtype}; }
  TO_HD explicit operator bool() const { return p != nullptr; }
};

struct AxisRows {
  int64_t outer, n, inner;
  TO_HD int64_t count() const { return outer * inner; }
  TO_HD int64_t start(int64_t r) const { return (r / inner) * n * inner + r % inner; }
};

template <class Exec, class F>
int axis_rows(Exec& ex, const AxisRows& rows, F body) {
  if (rows.inner == 1) return ex.rows(rows.count(), body);
  return ex.each(rows.count(), [=] TO_HD_LAMBDA(int64_t r) { body(Lanes{}, r); });
}

TO_HD bool infinite(double v) { return v == INFINITY || v == -INFINITY; }

TO_HD float lanes_min(const Lanes& l, float v) { return -l.max(-v); }

TO_HD double lanes_max(const Lanes& l, double v) {
#if defined(__CUDA_ARCH__)
  for (int o = l.width / 2; o > 0; o /= 2) v = fmax(v, __shfl_xor_sync(0xffffffffu, v, o));
#else
  (void)l;
#endif
  return v;
}

TO_HD double lanes_prod(const Lanes& l, double v) {
#if defined(__CUDA_ARCH__)
  for (int o = l.width / 2; o > 0; o /= 2) v *= __shfl_xor_sync(0xffffffffu, v, o);
#else
  (void)l;
#endif
  return v;
}

// Inclusive prefix over the lanes in lane order: lane i gets the sum of lanes 0..i.
template <class T>
TO_HD T lanes_scan(const Lanes& l, T v) {
#if defined(__CUDA_ARCH__)
  for (int o = 1; o < l.width; o *= 2) {
    const T up = __shfl_up_sync(0xffffffffu, v, o);
    if (l.lane >= o) v += up;
  }
#else
  (void)l;
#endif
  return v;
}

// The value lane `from` holds.
template <class T>
TO_HD T lanes_from(const Lanes& l, T v, int from) {
#if defined(__CUDA_ARCH__)
  return __shfl_sync(0xffffffffu, v, from, l.width);
#else
  (void)l;
  (void)from;
  return v;
#endif
}

// A candidate of an arg-extreme search: a value and its index along the row (-1: none yet).
struct Pick {
  float v;
  int64_t at;
};

// The pick of every lane's under `before` (a strict total order on picks; none loses to all).
template <class Before>
TO_HD Pick lanes_pick(const Lanes& l, Pick p, Before before) {
#if defined(__CUDA_ARCH__)
  for (int o = l.width / 2; o > 0; o /= 2) {
    Pick q{__shfl_xor_sync(0xffffffffu, p.v, o), __shfl_xor_sync(0xffffffffu, p.at, o)};
    if (q.at >= 0 && (p.at < 0 || before(q, p))) p = q;
  }
#else
  (void)l;
  (void)before;
#endif
  return p;
}

}  // namespace tensoropt::cuda_kernels
