// Cast, Clip and Dropout kernels for any executor (hd.h); host side cuda/elementwise_misc.cc.
// Numerics are the CPU backend's (cpu/elementwise.cc, cpu/elementwise_loops.cc convert()):
//   ew_cast: every pair of float32, float16, bfloat16, float64, int8/16/32/64, uint8/16/32/64 and
//     bool (DType values): integers wrap as C++ converts them; a float into an integer truncates
//     toward zero, NaN gives 0 and the range saturates; into bool, nonzero (NaN too) gives 1;
//     float16 and bfloat16 round to nearest even (through float32, as the CPU's Eigen types).
//     `round` then rounds a float32 result to float16 or bfloat16 precision (a Cast whose `to` is
//     one of those, the runtime keeping float tensors as float32), before it is stored (float32,
//     or bfloat16 under mixed precision).
//   ew_clip: y = min(max(x, lo), hi), NaN staying NaN; lo and hi read from a device scalar, or a
//     value, or the dtype's lowest and highest; float32 also writes [lo, hi] for the backward.
//     ew_clip_backward: dx = dy where lo <= x <= hi, else 0.
//   ew_dropout: element i kept when the top 24 bits of splitmix64(key + global index) are >=
//     threshold, the CPU's counter-based mask bit for bit (the global index: the element's place
//     in the whole tensor, so a shard draws the one-device mask); y = x·(kept ? scale : 0), the
//     mask (bool) saved. ew_dropout_backward: dx = dy·(mask ? scale : 0).
#pragma once

#include <stdint.h>

#include <string>

#include "launcher/runtime/cuda/device/elementwise_typed.h"
#include "launcher/runtime/cuda/device/hd.h"
#include "launcher/runtime/cuda/driver_abi.h"

namespace tensoropt::cuda_kernels {

// The DType values (graph/dtype.h) that driver_abi.h does not name.
enum { EW_DTYPE_F16 = 2, EW_DTYPE_I8 = 5, EW_DTYPE_I16 = 6, EW_DTYPE_U16 = 10, EW_DTYPE_U32 = 11, EW_DTYPE_U64 = 12 };

// float32 <-> float16 bit patterns, nearest even; 65520 and above is infinity.
TO_HD uint16_t to_f16(float v) {
  const uint32_t x = float_bits(v);
  const auto sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t a = x & 0x7fffffffu;
  if (a >= 0x7f800000u) return sign | (a > 0x7f800000u ? 0x7e00u : 0x7c00u);
  if (a >= 0x477ff000u) return sign | 0x7c00u;
  if (a < 0x38800000u) return sign | static_cast<uint16_t>(rintf(bits_float(a) * 16777216.0f));  // subnormal: units of 2^-24
  uint32_t r = a - 0x38000000u;  // rebias the exponent from 127 to 15
  r += 0xfffu + ((r >> 13) & 1u);
  return sign | static_cast<uint16_t>(r >> 13);
}
TO_HD float from_f16(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0) return bits_float(sign | float_bits(static_cast<float>(m) * 5.9604644775390625e-8f));
  if (e == 31) return bits_float(sign | 0x7f800000u | (m << 13));
  return bits_float(sign | ((e + 112) << 23) | (m << 13));
}

// One element on its way through a Cast: a float value (exact for every float source), or an
// integer's bits with its signedness.
struct EwValue {
  double f;
  uint64_t bits;
  int kind;  // 0 float, 1 signed integer, 2 unsigned integer (bool included)
};

TO_HD EwValue ew_load(const void* p, int dtype, int64_t i) {
  switch (dtype) {
    case TO_DTYPE_F32: return {static_cast<const float*>(p)[i], 0, 0};
    case TO_DTYPE_F64: return {static_cast<const double*>(p)[i], 0, 0};
    case TO_DTYPE_BF16: return {from_bf16(static_cast<const uint16_t*>(p)[i]), 0, 0};
    case EW_DTYPE_F16: return {from_f16(static_cast<const uint16_t*>(p)[i]), 0, 0};
    case EW_DTYPE_I8: return {0, static_cast<uint64_t>(static_cast<int64_t>(static_cast<const int8_t*>(p)[i])), 1};
    case EW_DTYPE_I16: return {0, static_cast<uint64_t>(static_cast<int64_t>(static_cast<const int16_t*>(p)[i])), 1};
    case TO_DTYPE_I32: return {0, static_cast<uint64_t>(static_cast<int64_t>(static_cast<const int32_t*>(p)[i])), 1};
    case TO_DTYPE_I64: return {0, static_cast<uint64_t>(static_cast<const int64_t*>(p)[i]), 1};
    case TO_DTYPE_U8: case TO_DTYPE_BOOL: return {0, static_cast<const uint8_t*>(p)[i], 2};
    case EW_DTYPE_U16: return {0, static_cast<const uint16_t*>(p)[i], 2};
    case EW_DTYPE_U32: return {0, static_cast<const uint32_t*>(p)[i], 2};
    default: return {0, static_cast<const uint64_t*>(p)[i], 2};  // U64
  }
}

// v as an integer of [lo, hi], the type's range: a float saturates (the CPU compares with the
// bounds rounded to the source's float type; no float lies between that and the double bound),
// an integer wraps as C++ converts it.
template <class D>
TO_HD D ew_to_integer(const EwValue& v, D lo, D hi) {
  if (v.kind != 0) return static_cast<D>(v.bits);
  if (v.f != v.f) return 0;
  if (v.f <= static_cast<double>(lo)) return lo;
  if (v.f >= static_cast<double>(hi)) return hi;
  return static_cast<D>(v.f);
}

TO_HD float ew_as_float(const EwValue& v) {
  return v.kind == 0 ? static_cast<float>(v.f)
         : v.kind == 1 ? static_cast<float>(static_cast<int64_t>(v.bits))
                       : static_cast<float>(v.bits);
}

TO_HD void ew_store(void* p, int dtype, int64_t i, const EwValue& v) {
  switch (dtype) {
    case TO_DTYPE_BOOL: static_cast<uint8_t*>(p)[i] = v.kind == 0 ? v.f != 0 : v.bits != 0; return;
    case TO_DTYPE_F32: static_cast<float*>(p)[i] = ew_as_float(v); return;
    case TO_DTYPE_F64:
      static_cast<double*>(p)[i] = v.kind == 0 ? v.f : v.kind == 1 ? static_cast<double>(static_cast<int64_t>(v.bits))
                                                                   : static_cast<double>(v.bits);
      return;
    case TO_DTYPE_BF16: static_cast<uint16_t*>(p)[i] = to_bf16(ew_as_float(v)); return;
    case EW_DTYPE_F16: static_cast<uint16_t*>(p)[i] = to_f16(ew_as_float(v)); return;
    case EW_DTYPE_I8: static_cast<int8_t*>(p)[i] = ew_to_integer<int8_t>(v, INT8_MIN, INT8_MAX); return;
    case EW_DTYPE_I16: static_cast<int16_t*>(p)[i] = ew_to_integer<int16_t>(v, INT16_MIN, INT16_MAX); return;
    case TO_DTYPE_I32: static_cast<int32_t*>(p)[i] = ew_to_integer<int32_t>(v, INT32_MIN, INT32_MAX); return;
    case TO_DTYPE_I64: static_cast<int64_t*>(p)[i] = ew_to_integer<int64_t>(v, INT64_MIN, INT64_MAX); return;
    case TO_DTYPE_U8: static_cast<uint8_t*>(p)[i] = ew_to_integer<uint8_t>(v, 0, UINT8_MAX); return;
    case EW_DTYPE_U16: static_cast<uint16_t*>(p)[i] = ew_to_integer<uint16_t>(v, 0, UINT16_MAX); return;
    case EW_DTYPE_U32: static_cast<uint32_t*>(p)[i] = ew_to_integer<uint32_t>(v, 0, UINT32_MAX); return;
    default: static_cast<uint64_t*>(p)[i] = ew_to_integer<uint64_t>(v, 0, UINT64_MAX); return;  // U64
  }
}

TO_HD bool ew_castable(int dtype) {
  return dtype == TO_DTYPE_F32 || dtype == TO_DTYPE_F64 || dtype == TO_DTYPE_BF16 || dtype == EW_DTYPE_F16 ||
         dtype == EW_DTYPE_I8 || dtype == EW_DTYPE_I16 || dtype == TO_DTYPE_I32 || dtype == TO_DTYPE_I64 ||
         dtype == TO_DTYPE_U8 || dtype == TO_DTYPE_BOOL || dtype == EW_DTYPE_U16 || dtype == EW_DTYPE_U32 ||
         dtype == EW_DTYPE_U64;
}

enum { EW_ROUND_NONE, EW_ROUND_F16, EW_ROUND_BF16 };
struct EwCastArgs {
  const void* x;
  void* y;
  int from, to;  // DType values
  int round;     // EW_ROUND_*: y's float value rounded to that precision (y float32, or bfloat16 as stored)
  int64_t n;
};

template <class Exec>
int ew_cast(Exec& ex, const EwCastArgs& g) {
  if (!ew_castable(g.from) || !ew_castable(g.to))
    return ex.fail("ew_cast: dtype " + std::to_string(g.from) + " -> " + std::to_string(g.to));
  if (g.round != EW_ROUND_NONE && g.to != TO_DTYPE_F32 && g.to != TO_DTYPE_BF16)
    return ex.fail("ew_cast: rounding writes float32 or bfloat16");
  const EwCastArgs c = g;
  return ex.each(c.n, [=] TO_HD_LAMBDA(int64_t i) {
    if (c.round == EW_ROUND_NONE) return ew_store(c.y, c.to, i, ew_load(c.x, c.from, i));
    const float v = ew_as_float(ew_load(c.x, c.from, i));
    store_float(c.y, c.to, i, c.round == EW_ROUND_F16 ? from_f16(to_f16(v)) : from_bf16(to_bf16(v)));
  });
}

// ---- Clip.
enum { EW_BOUND_VALUE, EW_BOUND_POINTER, EW_BOUND_LIMIT };
struct EwClipArgs {
  int dtype;  // F32, F64, I64, I32
  const void* x;
  void* y;
  int64_t n;
  int lo_kind, hi_kind;            // EW_BOUND_*
  const void* lo_ptr;              // a device scalar of x's dtype (EW_BOUND_POINTER)
  const void* hi_ptr;
  double lo_value, hi_value;       // EW_BOUND_VALUE
  float* bounds;                   // float32: [lo, hi] for the backward (may be null)
};

template <class T>
TO_HD T ew_bound(int kind, const void* p, double value, T limit) {
  return kind == EW_BOUND_POINTER ? *static_cast<const T*>(p) : kind == EW_BOUND_LIMIT ? limit : static_cast<T>(value);
}

template <class Exec, class T>
int ew_clip_of(Exec& ex, const EwClipArgs& args) {
  const EwClipArgs g = args;
  const T* x = static_cast<const T*>(g.x);
  T* y = static_cast<T*>(g.y);
  const T lowest = EwLimits<T>::lo, highest = EwLimits<T>::hi;
  return ex.each(g.n, [=] TO_HD_LAMBDA(int64_t i) {
    const T lo = ew_bound<T>(g.lo_kind, g.lo_ptr, g.lo_value, lowest);
    const T hi = ew_bound<T>(g.hi_kind, g.hi_ptr, g.hi_value, highest);
    const T v = x[i] < lo ? lo : x[i];
    y[i] = v > hi ? hi : v;
    if (i == 0 && g.bounds) {
      g.bounds[0] = static_cast<float>(lo);
      g.bounds[1] = static_cast<float>(hi);
    }
  });
}

template <class Exec>
int ew_clip(Exec& ex, const EwClipArgs& g) {
  if (g.bounds && g.dtype != TO_DTYPE_F32) return ex.fail("ew_clip: bounds are saved for float32 only");
  switch (g.dtype) {
    case TO_DTYPE_F32: return ew_clip_of<Exec, float>(ex, g);
    case TO_DTYPE_F64: return ew_clip_of<Exec, double>(ex, g);
    case TO_DTYPE_I64: return ew_clip_of<Exec, int64_t>(ex, g);
    case TO_DTYPE_I32: return ew_clip_of<Exec, int32_t>(ex, g);
    default: return ex.fail("ew_clip: dtype " + std::to_string(g.dtype) + " has no kernel");
  }
}

struct EwClipBackwardArgs {
  const float* x;
  const float* dy;
  float* dx;
  const float* bounds;  // [lo, hi], as ew_clip wrote them
  int64_t n;
};

template <class Exec>
int ew_clip_backward(Exec& ex, const EwClipBackwardArgs& g) {
  const float* x = g.x;
  const float* dy = g.dy;
  float* dx = g.dx;
  const float* bounds = g.bounds;
  return ex.each(g.n, [=] TO_HD_LAMBDA(int64_t i) { dx[i] = x[i] >= bounds[0] && x[i] <= bounds[1] ? dy[i] : 0.0f; });
}

// ---- Dropout.
TO_HD uint64_t splitmix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

struct EwDropoutArgs {
  const void* x;      // float32 or bfloat16 (x_dtype), and so is y
  void* y;
  int x_dtype, y_dtype;
  uint8_t* mask;      // the saved mask
  uint8_t* mask_out;  // the node's mask output (may be null)
  float scale;        // 1 / (1 - ratio), 0 for ratio 1
  uint64_t key;       // splitmix64(splitmix64(splitmix64(seed) ^ step) ^ node_index)
  uint64_t threshold; // round(ratio · 2^24)
  int64_t n;
  int rank;
  int64_t shape[TO_MAX_RANK];          // the local tensor's
  int64_t offset[TO_MAX_RANK];         // where it starts in the whole tensor
  int64_t global_stride[TO_MAX_RANK];  // the whole tensor's strides
};

template <class Exec>
int ew_dropout(Exec& ex, const EwDropoutArgs& args) {
  const EwDropoutArgs g = args;
  if (g.rank > TO_MAX_RANK) return ex.fail("ew_dropout: rank above TO_MAX_RANK");
  if (!float_or_bf16(g.x_dtype) || !float_or_bf16(g.y_dtype)) return ex.fail("ew_dropout: float32 and bfloat16 only");
  return ex.each(g.n, [=] TO_HD_LAMBDA(int64_t i) {
    uint64_t index = 0;
    int64_t r = i;
    for (int d = g.rank - 1; d >= 0; --d) {
      const int64_t c = r % g.shape[d];
      r /= g.shape[d];
      index += static_cast<uint64_t>((c + g.offset[d]) * g.global_stride[d]);
    }
    const bool keep = (splitmix64(g.key + index) >> 40) >= g.threshold;
    g.mask[i] = keep;
    if (g.mask_out) g.mask_out[i] = keep;
    store_float(g.y, g.y_dtype, i, load_float(g.x, g.x_dtype, i) * (keep ? g.scale : 0.0f));
  });
}

struct EwDropoutBackwardArgs {
  const void* dy;  // float32 or bfloat16 (dy_dtype)
  int dy_dtype;
  float* dx;
  const uint8_t* mask;
  const float* scale;  // the saved scale, one float
  int64_t n;
};

template <class Exec>
int ew_dropout_backward(Exec& ex, const EwDropoutBackwardArgs& g) {
  if (!float_or_bf16(g.dy_dtype)) return ex.fail("ew_dropout_backward: float32 and bfloat16 only");
  const void* dy = g.dy;
  const int dy_dtype = g.dy_dtype;
  float* dx = g.dx;
  const uint8_t* mask = g.mask;
  const float* scale = g.scale;
  return ex.each(g.n, [=] TO_HD_LAMBDA(int64_t i) { dx[i] = load_float(dy, dy_dtype, i) * (mask[i] != 0 ? *scale : 0.0f); });
}

}  // namespace tensoropt::cuda_kernels
