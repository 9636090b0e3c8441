// Elementwise kernels of any dtype with numpy broadcasting (TensoroptBroadcast), for any executor
// (hd.h); host side cuda/elementwise*.cc. The rules are the CPU backend's (cpu/elementwise_binary.cc,
// cpu/elementwise_logic.cc, cpu/elementwise_unary.cc), operation for operation:
//   ew_binary: arithmetic of float32, float64, int64 and int32 operands (integers wrap on overflow;
//     Div truncates toward zero; an integer divisor of 0 sets *zero_divisor, which the host turns
//     into the CPU's kernel_error; Pow of integers is pow in double saturated to the type; Mod
//     takes the divisor's sign, or the dividend's with fmod), Min and Max keeping NaN, PRelu
//     (float32), comparisons of any of those or bool (-> bool) and And, Or, Xor of bools.
//   ew_unary_int: Relu, Neg, Abs, Sign, Floor, Ceil, Round of int64 and int32 (TO_UNARY_* codes).
//   ew_test: IsNaN and IsInf of float32 or float64, Not of bool (-> bool).
//   ew_where: out = cond ? x : y, any element width, three operands broadcast; ew_where_backward
//     and ew_prelu_backward write output-shaped gradient terms that the host sums onto each
//     operand's shape (sum_to).
#pragma once

#include <float.h>
#include <stdint.h>

#include <string>
#include <type_traits>

#include "launcher/runtime/cuda/device/binary.h"
#include "launcher/runtime/cuda/device/hd.h"
#include "launcher/runtime/cuda/driver_abi.h"

namespace tensoropt::cuda_kernels {

enum {
  EW_ADD, EW_SUB, EW_MUL, EW_DIV, EW_POW, EW_MOD, EW_MIN, EW_MAX, EW_PRELU,
  EW_EQUAL, EW_LESS, EW_LESS_EQUAL, EW_GREATER, EW_GREATER_EQUAL, EW_AND, EW_OR, EW_XOR, EW_COUNT
};
TO_HD bool ew_is_predicate(int op) { return op >= EW_EQUAL; }

// y = op(a, b) broadcast; predicates write bool (uint8), the others the operands' dtype.
struct EwBinaryArgs {
  int op;             // EW_*
  int dtype;          // the operands' (TO_DTYPE_*)
  int fmod;           // EW_MOD: C's fmod (the dividend's sign)
  const void* a;
  const void* b;      // null: every b is b_scalar
  double b_scalar;
  void* out;          // may be a itself (a's strides then equal the output's)
  int* zero_divisor;  // integer Div and Mod: set to 1 where a divisor is 0
  TensoroptBroadcast shape;
};

// The element types' limits (std::numeric_limits is host-only without relaxed constexpr).
template <class T> struct EwLimits;
template <> struct EwLimits<int64_t> { static constexpr int64_t lo = INT64_MIN, hi = INT64_MAX; };
template <> struct EwLimits<int32_t> { static constexpr int32_t lo = INT32_MIN, hi = INT32_MAX; };
template <> struct EwLimits<float> { static constexpr float lo = -FLT_MAX, hi = FLT_MAX; };
template <> struct EwLimits<double> { static constexpr double lo = -DBL_MAX, hi = DBL_MAX; };

template <class T> struct EwUnsigned { using type = T; };
template <> struct EwUnsigned<int64_t> { using type = uint64_t; };
template <> struct EwUnsigned<int32_t> { using type = uint32_t; };
TO_HD float ew_pow(float a, float b) { return powf(a, b); }
TO_HD double ew_pow(double a, double b) { return pow(a, b); }
TO_HD float ew_fmod(float a, float b) { return fmodf(a, b); }
TO_HD double ew_fmod(double a, double b) { return fmod(a, b); }

// graph/ir.h's saturate_to_int64.
TO_HD int64_t ew_saturate(double r) {
  if (r != r) return 0;
  if (r >= 9.2e18) return INT64_MAX;
  if (r <= -9.2e18) return INT64_MIN;
  return static_cast<int64_t>(r);
}

template <class T>
TO_HD T ew_arith(int op, T a, T b, int c_fmod, bool* zero) {
  if constexpr (std::is_integral_v<T>) {
    using U = typename EwUnsigned<T>::type;
    switch (op) {
      case EW_ADD: return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
      case EW_SUB: return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
      case EW_MUL: return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
      case EW_DIV:
        if (b == 0) { *zero = true; return 0; }
        return b == -1 ? static_cast<T>(U{0} - static_cast<U>(a)) : static_cast<T>(a / b);
      case EW_POW: {
        const int64_t r = ew_saturate(pow(static_cast<double>(a), static_cast<double>(b)));
        const int64_t lo = EwLimits<T>::lo, hi = EwLimits<T>::hi;
        return static_cast<T>(r < lo ? lo : r > hi ? hi : r);
      }
      case EW_MOD: {
        if (b == 0) { *zero = true; return 0; }
        if (b == -1) return 0;
        const T r = static_cast<T>(a % b);
        return !c_fmod && r != 0 && ((r < 0) != (b < 0)) ? static_cast<T>(r + b) : r;
      }
      case EW_MIN: return a < b ? a : b;
      case EW_MAX: return a > b ? a : b;
      default: return 0;
    }
  } else {
    switch (op) {
      case EW_ADD: return a + b;
      case EW_SUB: return a - b;
      case EW_MUL: return a * b;
      case EW_DIV: return a / b;
      case EW_POW: return b == T(2) ? a * a : b == T(3) ? a * a * a : ew_pow(a, b);
      case EW_MOD: return ew_fmod(a, b);
      case EW_MIN: return (a != a) || a < b ? a : b;
      case EW_MAX: return (a != a) || a > b ? a : b;
      case EW_PRELU: return a > T(0) ? a : b * a;
      default: return NAN;
    }
  }
}

template <class T>
TO_HD bool ew_predicate(int op, T a, T b) {
  switch (op) {
    case EW_EQUAL: return a == b;
    case EW_LESS: return a < b;
    case EW_LESS_EQUAL: return a <= b;
    case EW_GREATER: return a > b;
    case EW_GREATER_EQUAL: return a >= b;
    case EW_AND: return (a != T(0)) && (b != T(0));
    case EW_OR: return (a != T(0)) || (b != T(0));
    case EW_XOR: return (a != T(0)) != (b != T(0));
    default: return false;
  }
}

template <class Exec, class T>
int ew_binary_of(Exec& ex, const EwBinaryArgs& args) {
  const EwBinaryArgs g = args;
  const T* a = static_cast<const T*>(g.a);
  const T* b = static_cast<const T*>(g.b);
  const auto bs = static_cast<T>(g.b_scalar);
  int64_t n = 1;
  for (int d = 0; d < g.shape.rank; ++d) n *= g.shape.shape[d];
  if (ew_is_predicate(g.op)) {
    uint8_t* y = static_cast<uint8_t*>(g.out);
    return ex.each(n, [=] TO_HD_LAMBDA(int64_t i) {
      int64_t oa, ob;
      broadcast_offsets(g.shape, i, &oa, &ob);
      y[i] = ew_predicate<T>(g.op, a[oa], b ? b[ob] : bs);
    });
  }
  if constexpr (sizeof(T) == 1) {
    return ex.fail("ew_binary: arithmetic of bool operands");
  } else {
    T* y = static_cast<T*>(g.out);
    return ex.each(n, [=] TO_HD_LAMBDA(int64_t i) {
      int64_t oa, ob;
      broadcast_offsets(g.shape, i, &oa, &ob);
      bool zero = false;
      y[i] = ew_arith<T>(g.op, a[oa], b ? b[ob] : bs, g.fmod, &zero);
      if (zero) *g.zero_divisor = 1;  // every writer writes 1
    });
  }
}

template <class Exec>
int ew_binary(Exec& ex, const EwBinaryArgs& g) {
  if (g.op < 0 || g.op >= EW_COUNT || g.shape.rank > TO_MAX_RANK) return ex.fail("ew_binary: bad arguments");
  if ((g.op == EW_DIV || g.op == EW_MOD) && !g.zero_divisor && (g.dtype == TO_DTYPE_I64 || g.dtype == TO_DTYPE_I32))
    return ex.fail("ew_binary: an integer division needs its zero-divisor flag");
  switch (g.dtype) {
    case TO_DTYPE_F32: return ew_binary_of<Exec, float>(ex, g);
    case TO_DTYPE_F64: return ew_binary_of<Exec, double>(ex, g);
    case TO_DTYPE_I64: return ew_binary_of<Exec, int64_t>(ex, g);
    case TO_DTYPE_I32: return ew_binary_of<Exec, int32_t>(ex, g);
    case TO_DTYPE_BOOL: case TO_DTYPE_U8: return ew_binary_of<Exec, uint8_t>(ex, g);
    default: return ex.fail("ew_binary: dtype " + std::to_string(g.dtype) + " has no kernel");
  }
}

// ---- Integer unary ops, as the CPU's integer forms (wrap-around negation).
struct EwUnaryIntArgs {
  int op;     // TO_UNARY_RELU, NEG, ABS, SIGN, FLOOR, CEIL or ROUND
  int dtype;  // TO_DTYPE_I64 or TO_DTYPE_I32
  const void* x;
  void* y;
  int64_t n;
};

TO_HD int64_t ew_unary_integer(int op, int64_t v) {
  const int64_t neg = static_cast<int64_t>(uint64_t{0} - static_cast<uint64_t>(v));
  switch (op) {
    case TO_UNARY_RELU: return v < 0 ? 0 : v;
    case TO_UNARY_NEG: return neg;
    case TO_UNARY_ABS: return v < 0 ? neg : v;
    case TO_UNARY_SIGN: return (v > 0) - (v < 0);
    default: return v;  // Floor, Ceil, Round
  }
}

template <class Exec>
int ew_unary_int(Exec& ex, const EwUnaryIntArgs& g) {
  const int op = g.op;
  if (op != TO_UNARY_RELU && op != TO_UNARY_NEG && op != TO_UNARY_ABS && op != TO_UNARY_SIGN && op != TO_UNARY_FLOOR &&
      op != TO_UNARY_CEIL && op != TO_UNARY_ROUND)
    return ex.fail("ew_unary_int: the op has no integer form");
  if (g.dtype == TO_DTYPE_I64) {
    const int64_t* x = static_cast<const int64_t*>(g.x);
    int64_t* y = static_cast<int64_t*>(g.y);
    return ex.each(g.n, [=] TO_HD_LAMBDA(int64_t i) { y[i] = ew_unary_integer(op, x[i]); });
  }
  if (g.dtype == TO_DTYPE_I32) {
    const int32_t* x = static_cast<const int32_t*>(g.x);
    int32_t* y = static_cast<int32_t*>(g.y);
    return ex.each(g.n, [=] TO_HD_LAMBDA(int64_t i) { y[i] = static_cast<int32_t>(ew_unary_integer(op, x[i])); });
  }
  return ex.fail("ew_unary_int: int64 and int32 only");
}

// ---- IsNaN, IsInf (detect_negative, detect_positive) of floats; Not of bools.
enum { EW_ISNAN, EW_ISINF, EW_NOT };
struct EwTestArgs {
  int op;     // EW_ISNAN, EW_ISINF, EW_NOT
  int dtype;  // F32 or F64 (IsNaN, IsInf); BOOL (Not)
  int negative, positive;
  const void* x;
  uint8_t* y;
  int64_t n;
};

template <class T>
TO_HD uint8_t ew_classify(T v, int op, int negative, int positive) {
  if (op == EW_ISNAN) return v != v;
  return (negative && v == -T(INFINITY)) || (positive && v == T(INFINITY));
}

template <class Exec>
int ew_test(Exec& ex, const EwTestArgs& g) {
  const int op = g.op, neg = g.negative, pos = g.positive;
  uint8_t* y = g.y;
  if (op == EW_NOT && g.dtype == TO_DTYPE_BOOL) {
    const uint8_t* x = static_cast<const uint8_t*>(g.x);
    return ex.each(g.n, [=] TO_HD_LAMBDA(int64_t i) { y[i] = x[i] == 0; });
  }
  if (op == EW_NOT) return ex.fail("ew_test: Not takes bool");
  if (g.dtype == TO_DTYPE_F32) {
    const float* x = static_cast<const float*>(g.x);
    return ex.each(g.n, [=] TO_HD_LAMBDA(int64_t i) { y[i] = ew_classify(x[i], op, neg, pos); });
  }
  if (g.dtype == TO_DTYPE_F64) {
    const double* x = static_cast<const double*>(g.x);
    return ex.each(g.n, [=] TO_HD_LAMBDA(int64_t i) { y[i] = ew_classify(x[i], op, neg, pos); });
  }
  return ex.fail("ew_test: IsNaN and IsInf take float32 or float64");
}

// ---- Where: out = cond ? x : y over three operands broadcast to the output; elements are moved
// as `width` bytes.
struct EwWhereArgs {
  const uint8_t* cond;
  const void* x;
  const void* y;
  void* out;
  int width;                    // bytes per element of x, y and out: 1, 2, 4 or 8
  TensoroptBroadcast cx;        // the output's shape; a_stride: cond's, b_stride: x's
  int64_t y_stride[TO_MAX_RANK];
};

template <class Exec, class T>
int ew_where_of(Exec& ex, const EwWhereArgs& args) {
  const EwWhereArgs g = args;
  const T* x = static_cast<const T*>(g.x);
  const T* y = static_cast<const T*>(g.y);
  T* out = static_cast<T*>(g.out);
  int64_t n = 1;
  for (int d = 0; d < g.cx.rank; ++d) n *= g.cx.shape[d];
  return ex.each(n, [=] TO_HD_LAMBDA(int64_t i) {
    int64_t oc = 0, ox = 0, oy = 0, r = i;
    for (int d = g.cx.rank - 1; d >= 0; --d) {
      const int64_t c = r % g.cx.shape[d];
      r /= g.cx.shape[d];
      oc += c * g.cx.a_stride[d];
      ox += c * g.cx.b_stride[d];
      oy += c * g.y_stride[d];
    }
    out[i] = g.cond[oc] ? x[ox] : y[oy];
  });
}

template <class Exec>
int ew_where(Exec& ex, const EwWhereArgs& g) {
  if (g.cx.rank > TO_MAX_RANK) return ex.fail("ew_where: rank above TO_MAX_RANK");
  switch (g.width) {
    case 1: return ew_where_of<Exec, uint8_t>(ex, g);
    case 2: return ew_where_of<Exec, uint16_t>(ex, g);
    case 4: return ew_where_of<Exec, uint32_t>(ex, g);
    case 8: return ew_where_of<Exec, uint64_t>(ex, g);
    default: return ex.fail("ew_where: element width " + std::to_string(g.width));
  }
}

// dx_full = cond ? dy : 0 and dy_full = cond ? 0 : dy (either may be null), output-shaped.
struct EwWhereBackwardArgs {
  const uint8_t* cond;
  const void* dout;  // float32 or bfloat16 (dout_dtype)
  int dout_dtype;
  float* dx_full;
  float* dy_full;
  TensoroptBroadcast shape;  // the output's; a_stride: cond's
};

template <class Exec>
int ew_where_backward(Exec& ex, const EwWhereBackwardArgs& args) {
  const EwWhereBackwardArgs g = args;
  if (g.shape.rank > TO_MAX_RANK) return ex.fail("ew_where_backward: rank above TO_MAX_RANK");
  if (!float_or_bf16(g.dout_dtype)) return ex.fail("ew_where_backward: float32 and bfloat16 only");
  int64_t n = 1;
  for (int d = 0; d < g.shape.rank; ++d) n *= g.shape.shape[d];
  return ex.each(n, [=] TO_HD_LAMBDA(int64_t i) {
    int64_t oc, unused;
    broadcast_offsets(g.shape, i, &oc, &unused);
    const bool taken = g.cond[oc] != 0;
    const float dy = load_float(g.dout, g.dout_dtype, i);
    if (g.dx_full) g.dx_full[i] = taken ? dy : 0.0f;
    if (g.dy_full) g.dy_full[i] = taken ? 0.0f : dy;
  });
}

// PRelu's gradient terms (TensoroptBinary: a = x, b = slope, float32 or bfloat16): dx = x > 0 ? dy : slope·dy,
// dslope = x > 0 ? 0 : x·dy; b is read only for dx.
template <class Exec>
int ew_prelu_backward(Exec& ex, const TensoroptBinary& args) {
  const TensoroptBinary g = args;
  if (g.shape.rank > TO_MAX_RANK || !g.a || (g.da_full && !g.b) || !float_or_bf16(g.a_dtype) || !float_or_bf16(g.dout_dtype) ||
      (g.b && !float_or_bf16(g.b_dtype)))
    return ex.fail("ew_prelu_backward: bad arguments");
  int64_t n = 1;
  for (int d = 0; d < g.shape.rank; ++d) n *= g.shape.shape[d];
  return ex.each(n, [=] TO_HD_LAMBDA(int64_t i) {
    int64_t oa, ob;
    broadcast_offsets(g.shape, i, &oa, &ob);
    const float x = load_float(g.a, g.a_dtype, oa), dy = load_float(g.dout, g.dout_dtype, i);
    if (g.da_full) g.da_full[i] = x > 0.0f ? dy : load_float(g.b, g.b_dtype, ob) * dy;
    if (g.db_full) g.db_full[i] = x > 0.0f ? 0.0f : x * dy;
  });
}

}  // namespace tensoropt::cuda_kernels
