// Binary and variadic arithmetic with numpy broadcasting (graph/ops/elementwise.cc binary()):
// Add, Sub, Mul, Div, Pow, Mod, Min, Max, Sum, Mean, PRelu. Shapes: a, b broadcast to y [N];
// da, db have a's and b's shapes: each gradient is the per-element term summed over the axes its
// operand was broadcast along (reduce_to_operand). Forward takes float32, float64, int64 and int32
// (Mean: floats; PRelu: float32); integers wrap on overflow, Div truncates toward zero, and a zero
// divisor is a kernel_error. Backward is float32. Min and Max split a tie's gradient in halves and
// propagate NaN, as PyTorch's maximum and minimum.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include "launcher/runtime/cpu/elementwise_loops.h"
#include "launcher/runtime/cpu/elementwise_parts.h"

namespace tensoropt::runtime::cpu {
namespace {

template <class T>
using Unsigned = std::make_unsigned_t<T>;

// Integer arithmetic wraps (two's complement), as the catalogue folds it.
template <class T>
T add(T a, T b) {
  if constexpr (std::is_integral_v<T>) return static_cast<T>(static_cast<Unsigned<T>>(a) + static_cast<Unsigned<T>>(b));
  else return a + b;
}
template <class T>
T sub(T a, T b) {
  if constexpr (std::is_integral_v<T>) return static_cast<T>(static_cast<Unsigned<T>>(a) - static_cast<Unsigned<T>>(b));
  else return a - b;
}
template <class T>
T mul(T a, T b) {
  if constexpr (std::is_integral_v<T>) return static_cast<T>(static_cast<Unsigned<T>>(a) * static_cast<Unsigned<T>>(b));
  else return a * b;
}
// Max and Min keep NaN from either side.
template <class T>
T max_of(T a, T b) { return pick((a != a) | (a > b), a, b); }
template <class T>
T min_of(T a, T b) { return pick((a != a) | (a < b), a, b); }

void require_binary(const OpCall& c) {
  if (c.in.size() != 2) kernel_error(c.node, "takes exactly two inputs");
  if (c.in[0]->dtype() != c.in[1]->dtype()) kernel_error(c.node, "the two inputs have different dtypes");
}

template <class T>
void require_nonzero(const OpCall& c, const Array& b) {
  const T* p = b.data<T>();
  for (int64_t i = 0; i < b.numel(); ++i) {
    if (p[i] == 0) kernel_error(c.node, "integer division by zero");
  }
}

// Binary forward for the numeric dtypes: op is a generic (T, T) -> T lambda.
template <class Op>
void binary_forward(const OpCall& c, const Op& op) {
  require_binary(c);
  dispatch_numeric<false>(c.in[0]->dtype(), c.node, [&](auto tag) {
    using T = decltype(tag);
    apply2<T, T>(*c.in[0], *c.in[1], *c.out[0], c.ctx.threads, [&](T a, T b) { return op(a, b); });
  });
}

// Variadic forward (Sum, Mean, Min, Max): y = op(...op(op(x0, x1), x2)..., xn).
template <class T, class Op>
void fold_forward(const OpCall& c, const Op& op) {
  Array& y = *c.out[0];
  for (const Array* x : c.in) {
    if (x->dtype() != y.dtype()) kernel_error(c.node, "the inputs have different dtypes");
  }
  if (c.in.size() == 1) {
    const T* x = c.in[0]->data<T>();
    T* py = y.data<T>();
    parallel_for(y.numel(), kElementwiseGrain, c.ctx.threads,
                 [&](int64_t lo, int64_t hi) { std::copy(x + lo, x + hi, py + lo); });
    return;
  }
  apply2<T, T>(*c.in[0], *c.in[1], y, c.ctx.threads, op);
  for (size_t k = 2; k < c.in.size(); ++k) apply2<T, T>(y, *c.in[k], y, c.ctx.threads, op);
}

const float* f32(const Array* a) { return a ? a->data<float>() : nullptr; }

// The broadcast of a two-input op's operands, for its backward (which is float32).
Broadcast pair_of(const GradCall& c) {
  require_f32(c.node, *c.dout[0], "the output gradient");
  return Broadcast({c.in_shapes[0], c.in_shapes[1]}, c.dout[0]->shape());
}

void scale(Array& a, float s, int threads) {
  float* d = a.data<float>();
  parallel_for(a.numel(), kElementwiseGrain, threads, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) d[i] *= s;
  });
}

// din[k] = dy summed onto input k's shape, times `factor`, for every wanted k.
void sum_gradients(const GradCall& c, float factor) {
  for (size_t k = 0; k < c.din.size(); ++k) {
    if (!c.din[k]) continue;
    require_f32(c.node, *c.dout[0], "the output gradient");
    Broadcast bc({c.in_shapes[k]}, c.dout[0]->shape());
    reduce_to_operand(bc, 0, c.dout[0]->data<float>(), c.din[k]->data<float>(), c.ctx.threads, *c.ctx.allocator);
    if (factor != 1.0f) scale(*c.din[k], factor, c.ctx.threads);
  }
}

// ---- Add: y = a + b; da = dy, db = dy (summed over broadcast axes).
void add_forward(const OpCall& c) { binary_forward(c, [](auto a, auto b) { return add(a, b); }); }
void add_backward(const GradCall& c) { sum_gradients(c, 1.0f); }

// ---- Sub: y = a - b; da = dy, db = -dy.
void sub_forward(const OpCall& c) { binary_forward(c, [](auto a, auto b) { return sub(a, b); }); }
void sub_backward(const GradCall& c) {
  sum_gradients(c, 1.0f);
  if (c.din[1]) scale(*c.din[1], -1.0f, c.ctx.threads);
}

// ---- Mul: y = a·b; da = dy·b, db = dy·a.
void mul_forward(const OpCall& c) { binary_forward(c, [](auto a, auto b) { return mul(a, b); }); }
void mul_backward(const GradCall& c) {
  Broadcast bc = pair_of(c);
  if (c.din[0]) operand_gradient(c, *c.din[0], 0, bc, f32(nullptr), f32(c.in[1]), [](float, float b, float g) { return g * b; });
  if (c.din[1]) operand_gradient(c, *c.din[1], 1, bc, f32(c.in[0]), f32(nullptr), [](float a, float, float g) { return g * a; });
}

// ---- Div: y = a / b; da = dy / b, db = -dy·a / b².
void div_forward(const OpCall& c) {
  require_binary(c);
  if (c.in[1]->dtype() == DType::I64) require_nonzero<int64_t>(c, *c.in[1]);
  if (c.in[1]->dtype() == DType::I32) require_nonzero<int32_t>(c, *c.in[1]);
  binary_forward(c, [](auto a, auto b) {
    using T = decltype(a);
    if constexpr (std::is_integral_v<T>) return b == -1 ? sub(T{0}, a) : static_cast<T>(a / b);
    else return a / b;
  });
}
void div_backward(const GradCall& c) {
  Broadcast bc = pair_of(c);
  if (c.din[0]) operand_gradient(c, *c.din[0], 0, bc, f32(nullptr), f32(c.in[1]), [](float, float b, float g) { return g / b; });
  if (c.din[1]) {
    operand_gradient(c, *c.din[1], 1, bc, f32(c.in[0]), f32(c.in[1]), [](float a, float b, float g) { return -g * a / (b * b); });
  }
}

// ---- Pow: y = a^b (the exponent converted to a's dtype); da = dy·b·a^(b-1) (0 where b = 0),
// db = dy·a^b·ln a (0 where a = 0 and b >= 0), as PyTorch. A scalar exponent 2 or 3 (x², x³ in
// decomposed LayerNorm and GELU) multiplies instead of calling pow.
Array exponent_as_base(const Node& node, const Array& base, const Array& exponent, const StepContext& ctx) {
  if (exponent.dtype() == base.dtype()) return exponent;
  Array e(base.dtype(), exponent.shape(), *ctx.allocator, MemoryKind::Transients);
  convert(node, exponent, e, ctx.threads);
  return e;
}

// The exponent's value when it is a single 2 or 3, else 0.
template <class T>
int small_exponent(const Array& e) {
  if (e.numel() != 1) return 0;
  const T v = e.data<T>()[0];
  return v == T{2} ? 2 : v == T{3} ? 3 : 0;
}

void pow_forward(const OpCall& c) {
  if (c.in.size() != 2) kernel_error(c.node, "takes exactly two inputs");
  Array e = exponent_as_base(c.node, *c.in[0], *c.in[1], c.ctx);
  const Array& a = *c.in[0];
  Array& y = *c.out[0];
  dispatch_numeric<false>(a.dtype(), c.node, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T>) {
      apply2<T, T>(a, e, y, c.ctx.threads, [](T x, T p) {
        int64_t r = saturate_to_int64(std::pow(static_cast<double>(x), static_cast<double>(p)));
        return static_cast<T>(std::clamp<int64_t>(r, std::numeric_limits<T>::min(), std::numeric_limits<T>::max()));
      });
    } else if (small_exponent<T>(e) == 2) {
      apply2<T, T>(a, e, y, c.ctx.threads, [](T x, T) { return x * x; });
    } else if (small_exponent<T>(e) == 3) {
      apply2<T, T>(a, e, y, c.ctx.threads, [](T x, T) { return x * x * x; });
    } else {
      apply2<T, T>(a, e, y, c.ctx.threads, [](T x, T p) { return std::pow(x, p); });
    }
  });
}

void pow_backward(const GradCall& c) {
  require_f32(c.node, *c.in[0], "the base");
  Array e = exponent_as_base(c.node, *c.in[0], *c.in[1], c.ctx);
  Broadcast bc = pair_of(c);
  const float* a = f32(c.in[0]);
  if (c.din[0] && small_exponent<float>(e) == 2) {
    operand_gradient(c, *c.din[0], 0, bc, a, f32(nullptr), [](float x, float, float g) { return 2.0f * x * g; });
  } else if (c.din[0] && small_exponent<float>(e) == 3) {
    operand_gradient(c, *c.din[0], 0, bc, a, f32(nullptr), [](float x, float, float g) { return 3.0f * x * x * g; });
  } else if (c.din[0]) {
    operand_gradient(c, *c.din[0], 0, bc, a, f32(&e), [](float x, float p, float g) {
      return pick(p == 0.0f, 0.0f, g * p * std::pow(x, p - 1.0f));
    });
  }
  if (c.din[1]) {
    operand_gradient(c, *c.din[1], 1, bc, a, f32(&e), [](float x, float p, float g) {
      return pick((x == 0.0f) & (p >= 0.0f), 0.0f, g * std::pow(x, p) * std::log(x));
    });
  }
}

// ---- Mod(fmod = 0): integers take the divisor's sign (Python's %); fmod = 1: C's fmod, the
// dividend's sign. Floats need fmod = 1 (ONNX). da = dy; the divisor's gradient (-dy·trunc(a/b))
// would need both inputs, which the catalogue does not save: asking for it is a kernel_error.
void mod_forward(const OpCall& c) {
  require_binary(c);
  bool fmod = c.node.attr_int("fmod", 0) != 0;
  if (!fmod && dtype_is_float(c.in[0]->dtype())) kernel_error(c.node, "Mod of floats needs fmod=1");
  if (c.in[1]->dtype() == DType::I64) require_nonzero<int64_t>(c, *c.in[1]);
  if (c.in[1]->dtype() == DType::I32) require_nonzero<int32_t>(c, *c.in[1]);
  binary_forward(c, [fmod](auto a, auto b) {
    using T = decltype(a);
    if constexpr (std::is_integral_v<T>) {
      if (b == -1) return T{0};
      T r = static_cast<T>(a % b);
      return !fmod && r != 0 && ((r < 0) != (b < 0)) ? static_cast<T>(r + b) : r;
    } else {
      return std::fmod(a, b);
    }
  });
}
void mod_backward(const GradCall& c) {
  if (c.din[1]) kernel_error(c.node, "the gradient of Mod's divisor needs both inputs, which the catalogue does not save");
  sum_gradients(c, 1.0f);
}

// ---- Max, Min (two or more inputs): y = the largest (smallest), NaN winning. With two inputs
// da = dy where a wins, dy/2 on a tie, else 0 (db likewise); with more, the catalogue saves only
// the first two, so a gradient is a kernel_error.
template <bool kMax>
void extremum_forward(const OpCall& c) {
  if (c.in.size() < 2) kernel_error(c.node, "takes at least two inputs");
  dispatch_numeric<false>(c.in[0]->dtype(), c.node, [&](auto tag) {
    using T = decltype(tag);
    fold_forward<T>(c, [](T a, T b) { return kMax ? max_of(a, b) : min_of(a, b); });
  });
}
template <bool kMax>
void extremum_backward(const GradCall& c) {
  if (c.in.size() != 2) kernel_error(c.node, "the gradient of Max and Min is implemented for two inputs");
  Broadcast bc = pair_of(c);
  auto wins = [](float x, float other, float g) {
    return pick(x == other, 0.5f * g, pick(kMax ? x > other : x < other, g, 0.0f));
  };
  const float* a = f32(c.in[0]);
  const float* b = f32(c.in[1]);
  if (c.din[0]) operand_gradient(c, *c.din[0], 0, bc, a, b, [&](float x, float other, float g) { return wins(x, other, g); });
  if (c.din[1]) operand_gradient(c, *c.din[1], 1, bc, a, b, [&](float other, float x, float g) { return wins(x, other, g); });
}

// ---- Sum, Mean (one or more inputs): y = x0 + ... + xn (Mean: divided by n);
// dxk = dy (Mean: dy / n).
void sum_forward(const OpCall& c) {
  dispatch_numeric<false>(c.out[0]->dtype(), c.node, [&](auto tag) {
    using T = decltype(tag);
    fold_forward<T>(c, [](T a, T b) { return add(a, b); });
  });
}
void sum_backward(const GradCall& c) { sum_gradients(c, 1.0f); }

template <class T>
void mean_of(const OpCall& c) {
  fold_forward<T>(c, [](T a, T b) { return a + b; });
  T* y = c.out[0]->data<T>();
  const T n = static_cast<T>(c.in.size());
  parallel_for(c.out[0]->numel(), kElementwiseGrain, c.ctx.threads, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) y[i] /= n;
  });
}
void mean_forward(const OpCall& c) {
  if (c.out[0]->dtype() == DType::F32) return mean_of<float>(c);
  if (c.out[0]->dtype() == DType::F64) return mean_of<double>(c);
  kernel_error(c.node, "Mean takes float inputs");
}
void mean_backward(const GradCall& c) { sum_gradients(c, 1.0f / static_cast<float>(c.din.size())); }

// ---- PRelu(x, slope), slope broadcast to x: y = x > 0 ? x : slope·x;
// dx = x > 0 ? dy : slope·dy, dslope = x > 0 ? 0 : x·dy.
void prelu_forward(const OpCall& c) {
  require_binary(c);
  require_f32(c.node, *c.in[0], "the input");
  apply2<float, float>(*c.in[0], *c.in[1], *c.out[0], c.ctx.threads, [](float x, float s) { return pick(x > 0.0f, x, s * x); });
}
void prelu_backward(const GradCall& c) {
  if (!c.in[0]) {
    kernel_error(c.node, "PRelu's input gradient needs x, which the catalogue saves only when the slope takes a gradient too");
  }
  Broadcast bc = pair_of(c);
  const float* x = f32(c.in[0]);
  if (c.din[0]) {
    operand_gradient(c, *c.din[0], 0, bc, x, f32(c.in[1]), [](float v, float s, float g) {
      return pick(v > 0.0f, g, s * g);
    });
  }
  if (c.din[1]) {
    operand_gradient(c, *c.din[1], 1, bc, x, f32(nullptr), [](float v, float, float g) {
      return pick(v > 0.0f, 0.0f, v * g);
    });
  }
}

}  // namespace

void register_elementwise_binary(KernelTable& table) {
  table["Add"] = {add_forward, add_backward};
  table["Sub"] = {sub_forward, sub_backward};
  table["Mul"] = {mul_forward, mul_backward};
  table["Div"] = {div_forward, div_backward};
  table["Pow"] = {pow_forward, pow_backward};
  table["Mod"] = {mod_forward, mod_backward};
  table["Max"] = {extremum_forward<true>, extremum_backward<true>};
  table["Min"] = {extremum_forward<false>, extremum_backward<false>};
  table["Sum"] = {sum_forward, sum_backward};
  table["Mean"] = {mean_forward, mean_backward};
  table["PRelu"] = {prelu_forward, prelu_backward};
}

}  // namespace tensoropt::runtime::cpu
