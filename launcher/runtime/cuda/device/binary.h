// Binary float arithmetic of the CUDA backend with numpy broadcasting (TensoroptBroadcast in
// driver_abi.h), for any executor (hd.h), and the sum of a gradient back onto a broadcast operand.
// Operands float32 or bfloat16 each (bfloat16 as stored under mixed precision), computed in
// float32, an output rounded once when stored; gradient terms and sums float32.
// Formulas as the CPU backend's (cpu/elementwise_binary.cc): Div's db = -dy·a/b², Pow's
// da = dy·b·a^(b-1) (0 where b = 0) and db = dy·a^b·ln a (0 where a = 0 and b >= 0), a^2 and a^3
// multiplied out; Min and Max keep NaN and split a tie's gradient in halves.
// Backward reads only what its term needs (Mul's da reads b alone), as the catalogue saves.
#pragma once

#include <cmath>

#include "launcher/runtime/cuda/device/hd.h"
#include "launcher/runtime/cuda/device/primitives.h"
#include "launcher/runtime/cuda/driver_abi.h"

namespace tensoropt::cuda_kernels {

// Offsets into a and b of output element i.
TO_HD void broadcast_offsets(const TensoroptBroadcast& s, int64_t i, int64_t* oa, int64_t* ob) {
  int64_t a = 0, b = 0;
  for (int d = s.rank - 1; d >= 0; --d) {
    const int64_t c = i % s.shape[d];
    i /= s.shape[d];
    a += c * s.a_stride[d];
    b += c * s.b_stride[d];
  }
  *oa = a;
  *ob = b;
}

TO_HD float power(float x, float p) { return p == 2.0f ? x * x : p == 3.0f ? x * x * x : powf(x, p); }

TO_HD float binary_forward(int op, float a, float b) {
  switch (op) {
    case TO_BINARY_ADD: return a + b;
    case TO_BINARY_SUB: return a - b;
    case TO_BINARY_MUL: return a * b;
    case TO_BINARY_DIV: return a / b;
    case TO_BINARY_POW: return power(a, b);
    case TO_BINARY_MIN: return (a != a) || a < b ? a : b;
    case TO_BINARY_MAX: return (a != a) || a > b ? a : b;
    default: return NAN;
  }
}

// d out / d a times g (which = 0) or d out / d b times g (which = 1).
TO_HD float binary_term(int op, int which, float a, float b, float g) {
  switch (op) {
    case TO_BINARY_ADD: return g;
    case TO_BINARY_SUB: return which ? -g : g;
    case TO_BINARY_MUL: return which ? g * a : g * b;
    case TO_BINARY_DIV: return which ? -g * a / (b * b) : g / b;
    case TO_BINARY_POW:
      if (which) return a == 0.0f && b >= 0.0f ? 0.0f : g * power(a, b) * logf(a);
      if (b == 2.0f) return 2.0f * a * g;
      if (b == 3.0f) return 3.0f * a * a * g;
      return b == 0.0f ? 0.0f : g * b * powf(a, b - 1.0f);
    case TO_BINARY_MIN: case TO_BINARY_MAX: {
      const float x = which ? b : a, other = which ? a : b;
      if (x == other) return 0.5f * g;
      return (op == TO_BINARY_MAX ? x > other : x < other) ? g : 0.0f;
    }
    default: return NAN;
  }
}

// Whether the term for operand `which` reads operand a (b): Add and Sub read neither.
TO_HD bool binary_term_reads(int op, int which, int operand) {
  switch (op) {
    case TO_BINARY_ADD: case TO_BINARY_SUB: return false;
    case TO_BINARY_MUL: return operand != which;
    case TO_BINARY_DIV: return which == 1 || operand == 1;
    default: return true;
  }
}

template <class Exec>
int binary(Exec& ex, const TensoroptBinary& args) {
  if (args.op < 0 || args.op >= TO_BINARY_COUNT || args.shape.rank > TO_MAX_RANK) return ex.fail("binary: bad arguments");
  if (!float_or_bf16(args.a_dtype) || !float_or_bf16(args.b_dtype) || !float_or_bf16(args.out_dtype))
    return ex.fail("binary: float32 and bfloat16 only");
  const TensoroptBinary g = args;
  int64_t n = 1;
  for (int d = 0; d < g.shape.rank; ++d) n *= g.shape.shape[d];
  return ex.each(n, [=] TO_HD_LAMBDA(int64_t i) {
    int64_t oa, ob;
    broadcast_offsets(g.shape, i, &oa, &ob);
    store_float(g.out, g.out_dtype, i, binary_forward(g.op, load_float(g.a, g.a_dtype, oa), load_float(g.b, g.b_dtype, ob)));
  });
}

template <class Exec>
int binary_backward(Exec& ex, const TensoroptBinary& args) {
  if (args.op < 0 || args.op >= TO_BINARY_COUNT || args.shape.rank > TO_MAX_RANK) return ex.fail("binary_backward: bad arguments");
  const TensoroptBinary g = args;
  for (int which = 0; which < 2; ++which) {
    float* d = which ? g.db_full : g.da_full;
    if (!d) continue;
    if ((binary_term_reads(g.op, which, 0) && !g.a) || (binary_term_reads(g.op, which, 1) && !g.b))
      return ex.fail("binary_backward: an operand the gradient reads is missing");
  }
  if ((g.a && !float_or_bf16(g.a_dtype)) || (g.b && !float_or_bf16(g.b_dtype)) || !float_or_bf16(g.dout_dtype))
    return ex.fail("binary_backward: float32 and bfloat16 only");
  int64_t n = 1;
  for (int d = 0; d < g.shape.rank; ++d) n *= g.shape.shape[d];
  return ex.each(n, [=] TO_HD_LAMBDA(int64_t i) {
    int64_t oa, ob;
    broadcast_offsets(g.shape, i, &oa, &ob);
    const float dy = load_float(g.dout, g.dout_dtype, i);
    for (int which = 0; which < 2; ++which) {
      float* d = which ? g.db_full : g.da_full;
      if (!d) continue;
      const float a = binary_term_reads(g.op, which, 0) ? load_float(g.a, g.a_dtype, oa) : 0.0f;
      const float b = binary_term_reads(g.op, which, 1) ? load_float(g.b, g.b_dtype, ob) : 0.0f;
      d[i] = binary_term(g.op, which, a, b, dy);
    }
  });
}

// dst[j] = sum over the src elements that land on j (dst_stride 0 along summed axes). One lane
// group per destination element walks the summed sub-space, in index order within each lane.
template <class Exec>
int sum_to(Exec& ex, const TensoroptSumTo& args) {
  const TensoroptSumTo g = args;
  if (g.shape.rank > TO_MAX_RANK) return ex.fail("sum_to: rank above TO_MAX_RANK");
  if (!float_or_bf16(g.src_dtype)) return ex.fail("sum_to: float32 and bfloat16 only");
  // The summed axes (stride 0 in dst) and the kept ones, with the kept axes' src strides.
  TensoroptBroadcast summed{}, kept{};
  int64_t src_stride[TO_MAX_RANK];
  int64_t s = 1;
  for (int d = g.shape.rank - 1; d >= 0; --d) {
    src_stride[d] = s;
    s *= g.shape.shape[d];
  }
  int64_t per_dst = 1;
  for (int d = 0; d < g.shape.rank; ++d) {
    TensoroptBroadcast& t = g.shape.a_stride[d] == 0 ? summed : kept;
    t.shape[t.rank] = g.shape.shape[d];
    t.a_stride[t.rank] = src_stride[d];
    ++t.rank;
    if (g.shape.a_stride[d] == 0) per_dst *= g.shape.shape[d];
  }
  return ex.rows(g.dst_count, [=] TO_HD_LAMBDA(const Lanes& l, int64_t j) {
    int64_t base, unused;
    broadcast_offsets(kept, j, &base, &unused);
    float acc = 0;
    for (int64_t k = l.lane; k < per_dst; k += l.width) {
      int64_t off;
      broadcast_offsets(summed, k, &off, &unused);
      acc += load_float(g.src, g.src_dtype, base + off);
    }
    acc = l.sum(acc);
    if (l.lane == 0) g.dst[j] = acc;
  });
}

}  // namespace tensoropt::cuda_kernels
