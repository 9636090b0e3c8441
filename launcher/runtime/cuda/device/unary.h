// Unary float maths of the CUDA backend, one TO_UNARY_* code per ONNX op (driver_abi.h), as
// scalar functions for any executor (hd.h); operands float32 or bfloat16 (bfloat16 as stored
// under mixed precision), computed in float32 and rounded once when stored. The formulas and the
// kinks' derivatives are the CPU backend's (cpu/elementwise_unary.cc), hence PyTorch's; so is
// which value the backward reads (unary_reads_output): the catalogue saves x or y accordingly,
// and the backward sees only that.
#pragma once

#include <cmath>

#include "launcher/runtime/cuda/device/hd.h"
#include "launcher/runtime/cuda/device/primitives.h"
#include "launcher/runtime/cuda/driver_abi.h"

namespace tensoropt::cuda_kernels {

constexpr float kSqrt1_2 = 0.70710678118654752f;     // 1/√2
constexpr float kInvSqrt2Pi = 0.39894228040143268f;  // 1/√(2π)
constexpr float k2InvSqrtPi = 1.12837916709551257f;  // 2/√π
constexpr float kSqrt2_Pi = 0.79788456080286536f;    // √(2/π)
constexpr float kGeluKappa = 0.044715f;

TO_HD float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
TO_HD float softplus(float x) { return fmaxf(x, 0.0f) + log1pf(expf(-fabsf(x))); }

// True where the backward reads the output y rather than the input x (the catalogue's Keep).
TO_HD bool unary_reads_output(int op) {
  switch (op) {
    case TO_UNARY_RELU: case TO_UNARY_SIGMOID: case TO_UNARY_TANH: case TO_UNARY_EXP: case TO_UNARY_SQRT:
    case TO_UNARY_RECIPROCAL: case TO_UNARY_ELU: case TO_UNARY_SELU: case TO_UNARY_TAN: return true;
    default: return false;
  }
}

TO_HD float unary_forward(int op, float x, float a, float b) {
  switch (op) {
    case TO_UNARY_RELU: return x < 0.0f ? 0.0f : x;  // NaN stays NaN
    case TO_UNARY_LEAKY_RELU: return x > 0.0f ? x : a * x;
    case TO_UNARY_SIGMOID: return sigmoid(x);
    case TO_UNARY_TANH: return tanhf(x);
    case TO_UNARY_ERF: return erff(x);
    case TO_UNARY_EXP: return expf(x);
    case TO_UNARY_LOG: return logf(x);
    case TO_UNARY_SQRT: return sqrtf(x);
    case TO_UNARY_RECIPROCAL: return 1.0f / x;
    case TO_UNARY_NEG: return -x;
    case TO_UNARY_ABS: return fabsf(x);
    case TO_UNARY_FLOOR: return floorf(x);
    case TO_UNARY_CEIL: return ceilf(x);
    case TO_UNARY_ROUND: return rintf(x);  // half to even
    case TO_UNARY_SIGN: return x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : x;
    case TO_UNARY_SOFTPLUS: return softplus(x);
    case TO_UNARY_ELU: return fmaxf(x, 0.0f) + a * expm1f(fminf(x, 0.0f));
    case TO_UNARY_SELU: return b * (fmaxf(x, 0.0f) + a * expm1f(fminf(x, 0.0f)));
    case TO_UNARY_HARD_SIGMOID: return fminf(fmaxf(a * x + b, 0.0f), 1.0f);
    case TO_UNARY_HARD_SWISH: return x * fminf(fmaxf(x * (1.0f / 6) + 0.5f, 0.0f), 1.0f);
    case TO_UNARY_SIN: return sinf(x);
    case TO_UNARY_COS: return cosf(x);
    case TO_UNARY_SOFTSIGN: return x / (1.0f + fabsf(x));
    case TO_UNARY_CELU: return fmaxf(x, 0.0f) + a * expm1f(fminf(x, 0.0f) / a);
    case TO_UNARY_THRESHOLDED_RELU: return x > a ? x : 0.0f;
    case TO_UNARY_MISH: return x * tanhf(softplus(x));
    case TO_UNARY_SHRINK: return x < -b ? x + a : x > b ? x - a : 0.0f;
    case TO_UNARY_TAN: return tanf(x);
    case TO_UNARY_ATAN: return atanf(x);
    case TO_UNARY_ASIN: return asinf(x);
    case TO_UNARY_ACOS: return acosf(x);
    case TO_UNARY_SINH: return sinhf(x);
    case TO_UNARY_COSH: return coshf(x);
    case TO_UNARY_GELU: return 0.5f * x * (1.0f + erff(x * kSqrt1_2));
    case TO_UNARY_GELU_TANH: return 0.5f * x * (1.0f + tanhf(kSqrt2_Pi * (x + kGeluKappa * x * x * x)));
    case TO_UNARY_SILU: return x * sigmoid(x);
    default: return NAN;
  }
}

// dx for dy at s, s being x or y as unary_reads_output says. Floor, Ceil, Round and Sign have no
// backward (zero gradient: the catalogue sends none back).
TO_HD float unary_backward(int op, float s, float g, float a, float b) {
  switch (op) {
    case TO_UNARY_RELU: return s > 0.0f ? g : 0.0f;
    case TO_UNARY_LEAKY_RELU: return s > 0.0f ? g : a * g;
    case TO_UNARY_SIGMOID: return g * s * (1.0f - s);
    case TO_UNARY_TANH: return g * (1.0f - s * s);
    case TO_UNARY_ERF: return g * k2InvSqrtPi * expf(-s * s);
    case TO_UNARY_EXP: return g * s;
    case TO_UNARY_LOG: return g / s;
    case TO_UNARY_SQRT: return g / (2.0f * s);
    case TO_UNARY_RECIPROCAL: return -g * s * s;
    case TO_UNARY_NEG: return -g;
    case TO_UNARY_ABS: return s > 0.0f ? g : s < 0.0f ? -g : 0.0f;
    case TO_UNARY_SOFTPLUS: return g * sigmoid(s);
    case TO_UNARY_ELU: return s > 0.0f ? g : g * (s + a);
    case TO_UNARY_SELU: return s > 0.0f ? b * g : g * (s + b * a);
    case TO_UNARY_HARD_SIGMOID: {
      const float t = a * s + b;
      return t > 0.0f && t < 1.0f ? a * g : 0.0f;
    }
    case TO_UNARY_HARD_SWISH: return s < -3.0f ? 0.0f : s <= 3.0f ? g * (s * (1.0f / 3) + 0.5f) : g;
    case TO_UNARY_SIN: return g * cosf(s);
    case TO_UNARY_COS: return -g * sinf(s);
    case TO_UNARY_SOFTSIGN: {
      const float d = 1.0f + fabsf(s);
      return g / (d * d);
    }
    case TO_UNARY_CELU: return g * expf(fminf(s, 0.0f) / a);
    case TO_UNARY_THRESHOLDED_RELU: return s > a ? g : 0.0f;
    case TO_UNARY_MISH: {
      const float t = tanhf(softplus(s));
      return g * (t + s * sigmoid(s) * (1.0f - t * t));
    }
    case TO_UNARY_SHRINK: return s < -b || s > b ? g : 0.0f;
    case TO_UNARY_TAN: return g * (1.0f + s * s);
    case TO_UNARY_ATAN: return g / (1.0f + s * s);
    case TO_UNARY_ASIN: return g / sqrtf(1.0f - s * s);
    case TO_UNARY_ACOS: return -g / sqrtf(1.0f - s * s);
    case TO_UNARY_SINH: return g * coshf(s);
    case TO_UNARY_COSH: return g * sinhf(s);
    case TO_UNARY_GELU: return g * (0.5f * (1.0f + erff(s * kSqrt1_2)) + s * kInvSqrt2Pi * expf(-0.5f * s * s));
    case TO_UNARY_GELU_TANH: {
      const float t = tanhf(kSqrt2_Pi * (s + kGeluKappa * s * s * s));
      return g * (0.5f * (1.0f + t) + 0.5f * s * (1.0f - t * t) * kSqrt2_Pi * (1.0f + 3.0f * kGeluKappa * s * s));
    }
    case TO_UNARY_SILU: {
      const float sg = sigmoid(s);
      return g * sg * (1.0f + s * (1.0f - sg));
    }
    default: return NAN;
  }
}

// x, s and dy float32 or bfloat16 (TO_DTYPE_*), y too; dx float32.
template <class Exec>
int unary(Exec& ex, int op, const void* x, int x_dtype, void* y, int y_dtype, int64_t n, float a, float b) {
  if (op < 0 || op >= TO_UNARY_COUNT) return ex.fail("unary: unknown op code");
  if (!float_or_bf16(x_dtype) || !float_or_bf16(y_dtype)) return ex.fail("unary: float32 and bfloat16 only");
  return ex.each(n, [=] TO_HD_LAMBDA(int64_t i) { store_float(y, y_dtype, i, unary_forward(op, load_float(x, x_dtype, i), a, b)); });
}

template <class Exec>
int unary_backward(Exec& ex, int op, const void* s, int s_dtype, const void* dy, int dy_dtype, float* dx, int64_t n, float a, float b) {
  if (op < 0 || op >= TO_UNARY_COUNT) return ex.fail("unary_backward: unknown op code");
  if (!float_or_bf16(s_dtype) || !float_or_bf16(dy_dtype)) return ex.fail("unary_backward: float32 and bfloat16 only");
  return ex.each(n, [=] TO_HD_LAMBDA(int64_t i) {
    dx[i] = unary_backward(op, load_float(s, s_dtype, i), load_float(dy, dy_dtype, i), a, b);
  });
}

}  // namespace tensoropt::cuda_kernels
