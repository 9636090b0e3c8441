// Selections and running sums along one axis (graph/ops/norm.cc): ArgMax, ArgMin, TopK, CumSum,
// kernel sources for any executor (hd.h), on rows along the axis (norm_rows.h). Semantics as the
// CPU kernels (cpu/norm_select.cc):
//   arg_extreme: the int64 index of the first (last) extreme of each row; NaN counts as the
//     extreme. Each lane keeps its best, the lanes then agree on one (a total order: NaN class,
//     value, index), so the answer does not depend on how the row was split.
//   top_k: the K extreme of each row and their int64 indices, ordered from the extreme, equal
//     values by index, NaN as the largest. Pass t finds the first element after pick t-1 in that
//     order: O(K n) per row, for the small K of the models we run (a full sort is K = n).
//   top_k_backward: dx = 0, then dValues scattered to Indices (distinct within a row).
//   cumsum: running sums along the row (float32 in double, int64 and int32 in int64), exclusive
//     and reverse as ONNX; the backward is the running sum of dy in the other direction. A warp
//     scans 32 elements at a time and carries the total on.
// Float tensors float32 or bfloat16 as stored (norm_rows.h's FloatIn, FloatOut): X, TopK's values
// and their gradient, CumSum's x and y (its gradient float32, read from a float32 or bfloat16 dy).
#pragma once

#include <cmath>

#include "launcher/runtime/cuda/device/norm_rows.h"
#include "launcher/runtime/cuda/driver_abi.h"

namespace tensoropt::cuda_kernels {

struct SelectArgs {
  AxisRows rows;
  FloatIn x;
  int64_t* indices;   // arg_extreme: [count]; top_k: like values (may be null)
  FloatOut values;    // top_k: X's shape with the axis cut to k
  int64_t k;          // top_k
  int largest;        // arg_extreme: 1 ArgMax, 0 ArgMin; top_k: 1 the largest, 0 the smallest
  int last;           // arg_extreme: select_last_index
};

// Whether a comes before b: NaN first, then the larger (smaller) value, then `last`-wise index.
TO_HD bool select_before(Pick a, Pick b, int largest, int last) {
  const bool na = a.v != a.v, nb = b.v != b.v;
  if (na != nb) return na;
  if (!na && a.v != b.v) return largest ? a.v > b.v : a.v < b.v;
  return last ? a.at > b.at : a.at < b.at;
}

struct SelectOrder {
  int largest, last;
  TO_HD bool operator()(Pick a, Pick b) const { return select_before(a, b, largest, last); }
};

template <class Exec>
int arg_extreme(Exec& ex, const SelectArgs& a) {
  const SelectArgs g = a;
  return axis_rows(ex, g.rows, [=] TO_HD_LAMBDA(const Lanes& l, int64_t r) {
    const SelectOrder before{g.largest, g.last};
    const FloatIn x = g.x.at(g.rows.start(r));
    Pick best{0.0f, -1};
    for (int64_t k = l.lane; k < g.rows.n; k += l.width) {
      const Pick p{x[k * g.rows.inner], k};
      if (best.at < 0 || before(p, best)) best = p;
    }
    best = lanes_pick(l, best, before);
    if (l.lane == 0) g.indices[r] = best.at < 0 ? 0 : best.at;
  });
}

template <class Exec>
int top_k(Exec& ex, const SelectArgs& a) {
  const SelectArgs g = a;
  return axis_rows(ex, g.rows, [=] TO_HD_LAMBDA(const Lanes& l, int64_t r) {
    // The order "before" with ties by the smaller index, largest or smallest first.
    const SelectOrder before{g.largest, 0};
    const int64_t st = g.rows.inner;
    const FloatIn x = g.x.at(g.rows.start(r));
    const int64_t out = (r / st) * g.k * st + r % st;
    Pick prev{0.0f, -1};
    for (int64_t t = 0; t < g.k; ++t) {
      Pick best{0.0f, -1};
      for (int64_t k = l.lane; k < g.rows.n; k += l.width) {
        const Pick p{x[k * st], k};
        if ((prev.at < 0 || before(prev, p)) && (best.at < 0 || before(p, best))) best = p;
      }
      best = lanes_pick(l, best, before);
      if (l.lane == 0) {
        g.values.set(out + t * st, best.v);
        if (g.indices) g.indices[out + t * st] = best.at;
      }
      prev = best;
    }
  });
}

struct TopKBackwardArgs {
  AxisRows rows;        // of X along the axis
  int64_t k;
  FloatIn dvalues;       // [outer, k, inner]
  const int64_t* indices;
  float* dx;
};

template <class Exec>
int top_k_backward(Exec& ex, const TopKBackwardArgs& a) {
  const TopKBackwardArgs g = a;
  if (int s = ex.each(g.rows.outer * g.rows.n * g.rows.inner, [=] TO_HD_LAMBDA(int64_t i) { g.dx[i] = 0.0f; })) return s;
  return ex.each(g.rows.outer * g.k * g.rows.inner, [=] TO_HD_LAMBDA(int64_t e) {
    const int64_t st = g.rows.inner, o = e / (g.k * st), i = e % st;
    g.dx[o * g.rows.n * st + g.indices[e] * st + i] = g.dvalues[e];
  });
}

struct CumSumArgs {
  AxisRows rows;
  const void* x;
  void* y;
  int dtype;    // x's: TO_DTYPE_F32 or BF16 (float sums), I64 or I32
  int y_dtype;  // float sums: y's, TO_DTYPE_F32 or BF16; integer sums: dtype
  int exclusive, reverse;
};

// Element i of a row of T (integers) or of float32 / bfloat16 (`dtype`), as Acc.
template <class T, class Acc>
struct CumSumIo {
  static TO_HD Acc load(const void* p, int, int64_t i) { return static_cast<Acc>(static_cast<const T*>(p)[i]); }
  static TO_HD void store(void* p, int, int64_t i, Acc v) { static_cast<T*>(p)[i] = static_cast<T>(v); }
};
template <>
struct CumSumIo<float, double> {
  static TO_HD double load(const void* p, int dtype, int64_t i) { return load_float(p, dtype, i); }
  static TO_HD void store(void* p, int dtype, int64_t i, double v) { store_float(p, dtype, i, static_cast<float>(v)); }
};

template <class T, class Acc, class Exec>
int running_sums(Exec& ex, const CumSumArgs& a) {
  const CumSumArgs g = a;
  return axis_rows(ex, g.rows, [=] TO_HD_LAMBDA(const Lanes& l, int64_t r) {
    using Io = CumSumIo<T, Acc>;
    const int64_t s = g.rows.start(r), n = g.rows.n, st = g.rows.inner;
    Acc carry = 0;
    for (int64_t base = 0; base < n; base += l.width) {
      const int64_t k = base + l.lane;
      const int64_t at = s + (g.reverse ? n - 1 - k : k) * st;
      const Acc v = k < n ? Io::load(g.x, g.dtype, at) : Acc(0);
      const Acc inclusive = lanes_scan(l, v);
      if (k < n) Io::store(g.y, g.y_dtype, at, carry + (g.exclusive ? inclusive - v : inclusive));
      carry += lanes_from(l, inclusive, l.width - 1);
    }
  });
}

template <class Exec>
int cumsum(Exec& ex, const CumSumArgs& a) {
  const bool floats = float_or_bf16(a.dtype) && float_or_bf16(a.y_dtype);
  if (floats) return running_sums<float, double>(ex, a);
  if (a.dtype != a.y_dtype) return ex.fail("cumsum: integer sums keep their dtype");
  switch (a.dtype) {
    case TO_DTYPE_I64: return running_sums<int64_t, int64_t>(ex, a);
    case TO_DTYPE_I32: return running_sums<int32_t, int64_t>(ex, a);
    default: return ex.fail("cumsum: float32, bfloat16, int64 or int32 only");
  }
}

}  // namespace tensoropt::cuda_kernels
