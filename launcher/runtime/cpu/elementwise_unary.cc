// Unary elementwise kernels (graph/ops/elementwise.cc unary()): maths and activations as one
// table. Each row: the forward y = f(x) and the backward dx = dy · f'(s), where s is the input x
// or the output y as the catalogue saves it (its Keep). Smooth parts are Eigen array expressions
// (exp, tanh, erf and friends vectorise); piecewise parts are `each` loops selecting with pick()
// (elementwise_loops.h), so they vectorise instead of branching. Shapes: x, y, dy, dx all [N], handled
// in blocks of kBlock. float32; Relu, Neg, Abs, Sign, Floor, Ceil and Round also take int64 and
// int32 (as the catalogue folds them), forward only. Plus IsNaN and IsInf (bool out, no gradient).
// Numerics follow PyTorch: Softplus is max(x,0) + log1p(exp(-|x|)), Elu, Selu and Celu use
// expm1, Relu keeps NaN, the derivatives at kinks are PyTorch's (Abs: 0 at 0; HardSigmoid: 0 at
// the ends; HardSwish: the middle piece at 3).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>

#include <Eigen/Core>
#include <unsupported/Eigen/SpecialFunctions>

#include "launcher/runtime/cpu/elementwise_loops.h"
#include "launcher/runtime/cpu/elementwise_parts.h"

namespace tensoropt::runtime::cpu {
namespace {

using Vec = Eigen::Array<float, Eigen::Dynamic, 1>;
using In = Eigen::Map<const Vec>;
using Out = Eigen::Map<Vec>;

// What backward reads besides dy, as the catalogue's Keep for the op. None: no backward at all
// (Floor, Ceil, Round and Sign have a zero gradient, so nothing flows back through them).
enum class Grad : uint8_t { FromInput, FromOutput, FromNothing, None };

struct Unary {
  std::function<void(const float* x, float* y, int64_t n)> forward;
  // s: x, y or (FromNothing) dy itself. Empty for Grad::None.
  std::function<void(const float* s, const float* dy, float* dx, int64_t n)> backward;
};

struct Entry {
  const char* type;
  Grad grad;
  Unary (*make)(const Node& node);      // reads the node's attributes
  int64_t (*integer)(int64_t) = nullptr;  // the int64/int32 forward, where the catalogue has one
};

// y[i] = f(x[i]) and y[i] = f(a[i], b[i]), vectorised (y may be a or b).
template <class F>
void each(const float* x, float* y, int64_t n, const F& f) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = f(x[i]);
}
template <class F>
void each(const float* a, const float* b, float* y, int64_t n, const F& f) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = f(a[i], b[i]);
}

float attr(const Node& n, const char* key, double fallback) { return static_cast<float>(n.attr_float(key, fallback)); }

int64_t wrap_neg(int64_t v) { return static_cast<int64_t>(0 - static_cast<uint64_t>(v)); }

constexpr float kSqrt1_2 = 0.70710678118654752f;      // 1/√2
constexpr float kInvSqrt2Pi = 0.39894228040143268f;   // 1/√(2π)
constexpr float k2InvSqrtPi = 1.12837916709551257f;   // 2/√π
constexpr float kSqrt2_Pi = 0.79788456080286536f;     // √(2/π)
constexpr float kGeluKappa = 0.044715f;

// softplus(x) = log(1 + e^x), computed without overflow.
auto softplus(const In& x) { return x.max(0.0f) + (-x.abs()).exp().log1p(); }

// Rows whose forward and backward are Eigen expressions: y = f(x), dx = g(s, dy). (The
// expressions hold the maps by value, so returning them from the lambdas is safe.)
template <class F>
Unary forward_only(F f) {
  return {[f](const float* x, float* y, int64_t n) { Out(y, n) = f(In(x, n)); }, nullptr};
}
template <class F, class G>
Unary eigen(F f, G g) {
  return {[f](const float* x, float* y, int64_t n) { Out(y, n) = f(In(x, n)); },
          [g](const float* s, const float* dy, float* dx, int64_t n) { Out(dx, n) = g(In(s, n), In(dy, n)); }};
}

const Entry kTable[] = {
    // Relu: y = max(x, 0) (NaN stays NaN); dx = dy where y > 0.
    {"Relu", Grad::FromOutput, [](const Node&) -> Unary {
       return {[](const float* x, float* y, int64_t n) { each(x, y, n, [](float v) { return pick(v < 0.0f, 0.0f, v); }); },
               [](const float* y, const float* dy, float* dx, int64_t n) {
                 each(y, dy, dx, n, [](float v, float g) { return pick(v > 0.0f, g, 0.0f); });
               }};
     }, [](int64_t v) { return v < 0 ? int64_t{0} : v; }},
    // LeakyRelu(alpha = 0.01): y = x > 0 ? x : alpha·x; dx = dy or alpha·dy.
    {"LeakyRelu", Grad::FromInput, [](const Node& n) -> Unary {
       float a = attr(n, "alpha", 0.01);
       return {[a](const float* x, float* y, int64_t m) {
                 each(x, y, m, [a](float v) { return pick(v > 0.0f, v, a * v); });
               },
               [a](const float* x, const float* dy, float* dx, int64_t m) {
                 each(x, dy, dx, m, [a](float v, float g) { return pick(v > 0.0f, g, a * g); });
               }};
     }},
    // Sigmoid: y = 1 / (1 + e^-x); dx = dy·y·(1 - y).
    {"Sigmoid", Grad::FromOutput, [](const Node&) -> Unary {
       return eigen([](const In& x) { return x.logistic(); },
                    [](const In& s, const In& dy) { return dy * s * (1.0f - s); });
     }},
    // Tanh: dx = dy·(1 - y²).
    {"Tanh", Grad::FromOutput, [](const Node&) -> Unary {
       return eigen([](const In& x) { return x.tanh(); },
                    [](const In& s, const In& dy) { return dy * (1.0f - s.square()); });
     }},
    // Erf: dx = dy·2/√π·e^(-x²).
    {"Erf", Grad::FromInput, [](const Node&) -> Unary {
       return eigen([](const In& x) { return x.erf(); },
                    [](const In& s, const In& dy) { return dy * k2InvSqrtPi * (-s.square()).exp(); });
     }},
    // Exp: dx = dy·y.  Log: dx = dy / x.  Sqrt: dx = dy / (2y).  Reciprocal: y = 1/x, dx = -dy·y².
    {"Exp", Grad::FromOutput, [](const Node&) -> Unary {
       return eigen([](const In& x) { return x.exp(); },
                    [](const In& s, const In& dy) { return dy * s; });
     }},
    {"Log", Grad::FromInput, [](const Node&) -> Unary {
       return eigen([](const In& x) { return x.log(); },
                    [](const In& s, const In& dy) { return dy / s; });
     }},
    {"Sqrt", Grad::FromOutput, [](const Node&) -> Unary {
       return eigen([](const In& x) { return x.sqrt(); },
                    [](const In& s, const In& dy) { return dy / (2.0f * s); });
     }},
    {"Reciprocal", Grad::FromOutput, [](const Node&) -> Unary {
       return eigen([](const In& x) { return x.inverse(); },
                    [](const In& s, const In& dy) { return -dy * s.square(); });
     }},
    // Neg: dx = -dy.
    {"Neg", Grad::FromNothing, [](const Node&) -> Unary {
       return eigen([](const In& x) { return -x; },
                    [](const In&, const In& dy) { return -dy; });
     }, wrap_neg},
    // Abs: dx = dy·sign(x) (0 at 0).
    {"Abs", Grad::FromInput, [](const Node&) -> Unary {
       return {[](const float* x, float* y, int64_t n) { Out(y, n) = In(x, n).abs(); },
               [](const float* x, const float* dy, float* dx, int64_t n) {
                 each(x, dy, dx, n, [](float v, float g) { return pick(v > 0.0f, g, pick(v < 0.0f, -g, 0.0f)); });
               }};
     }, [](int64_t v) { return v < 0 ? wrap_neg(v) : v; }},
    // Floor, Ceil, Round (half to even), Sign: zero gradient, so none flows back.
    {"Floor", Grad::None, [](const Node&) { return forward_only([](const In& x) { return x.floor(); }); },
     [](int64_t v) { return v; }},
    {"Ceil", Grad::None, [](const Node&) { return forward_only([](const In& x) { return x.ceil(); }); },
     [](int64_t v) { return v; }},
    {"Round", Grad::None, [](const Node&) { return forward_only([](const In& x) { return x.rint(); }); },
     [](int64_t v) { return v; }},
    {"Sign", Grad::None, [](const Node&) { return forward_only([](const In& x) { return x.sign(); }); },
     [](int64_t v) { return int64_t{(v > 0) - (v < 0)}; }},
    // Softplus: y = log(1 + e^x); dx = dy·sigmoid(x).
    {"Softplus", Grad::FromInput, [](const Node&) -> Unary {
       return eigen([](const In& x) { return softplus(x); },
                    [](const In& s, const In& dy) { return dy * s.logistic(); });
     }},
    // Elu(alpha = 1): y = x > 0 ? x : alpha·(e^x - 1) = max(x, 0) + alpha·expm1(min(x, 0));
    // dx = y > 0 ? dy : dy·(y + alpha).
    {"Elu", Grad::FromOutput, [](const Node& n) -> Unary {
       float a = attr(n, "alpha", 1.0);
       return {[a](const float* x, float* y, int64_t m) { Out(y, m) = In(x, m).max(0.0f) + a * In(x, m).min(0.0f).expm1(); },
               [a](const float* y, const float* dy, float* dx, int64_t m) {
                 each(y, dy, dx, m, [a](float v, float g) { return pick(v > 0.0f, g, g * (v + a)); });
               }};
     }},
    // Selu(alpha, gamma): y = gamma·(max(x, 0) + alpha·expm1(min(x, 0)));
    // dx = y > 0 ? gamma·dy : dy·(y + gamma·alpha).
    {"Selu", Grad::FromOutput, [](const Node& n) -> Unary {
       float a = attr(n, "alpha", 1.67326319217681884765625), g = attr(n, "gamma", 1.05070102214813232421875);
       return {[a, g](const float* x, float* y, int64_t m) {
                 Out(y, m) = g * (In(x, m).max(0.0f) + a * In(x, m).min(0.0f).expm1());
               },
               [a, g](const float* y, const float* dy, float* dx, int64_t m) {
                 each(y, dy, dx, m, [a, g](float v, float d) { return pick(v > 0.0f, g * d, d * (v + g * a)); });
               }};
     }},
    // HardSigmoid(alpha = 0.2, beta = 0.5): y = clamp(alpha·x + beta, 0, 1);
    // dx = alpha·dy strictly inside (0, 1), else 0.
    {"HardSigmoid", Grad::FromInput, [](const Node& n) -> Unary {
       float a = attr(n, "alpha", 0.2), b = attr(n, "beta", 0.5);
       return {[a, b](const float* x, float* y, int64_t m) { Out(y, m) = (a * In(x, m) + b).max(0.0f).min(1.0f); },
               [a, b](const float* x, const float* dy, float* dx, int64_t m) {
                 each(x, dy, dx, m, [a, b](float v, float g) {
                   const float t = a * v + b;
                   return pick((t > 0.0f) & (t < 1.0f), a * g, 0.0f);
                 });
               }};
     }},
    // HardSwish: y = x·clamp(x/6 + 1/2, 0, 1); dx = 0 below -3, dy·(x/3 + 1/2) up to 3, dy above.
    {"HardSwish", Grad::FromInput, [](const Node&) -> Unary {
       return {[](const float* px, float* y, int64_t n) {
                 const In x(px, n);
                 Out(y, n) = x * (x * (1.0f / 6) + 0.5f).max(0.0f).min(1.0f);
               },
               [](const float* x, const float* dy, float* dx, int64_t n) {
                 each(x, dy, dx, n, [](float v, float g) {
                   return pick(v < -3.0f, 0.0f, pick(v <= 3.0f, g * (v * (1.0f / 3) + 0.5f), g));
                 });
               }};
     }},
    // Sin: dx = dy·cos(x).  Cos: dx = -dy·sin(x).
    {"Sin", Grad::FromInput, [](const Node&) -> Unary {
       return eigen([](const In& x) { return x.sin(); },
                    [](const In& s, const In& dy) { return dy * s.cos(); });
     }},
    {"Cos", Grad::FromInput, [](const Node&) -> Unary {
       return eigen([](const In& x) { return x.cos(); },
                    [](const In& s, const In& dy) { return -dy * s.sin(); });
     }},
    // Softsign: y = x / (1 + |x|); dx = dy / (1 + |x|)².
    {"Softsign", Grad::FromInput, [](const Node&) -> Unary {
       return eigen([](const In& x) { return x / (1.0f + x.abs()); },
                    [](const In& s, const In& dy) { return dy / (1.0f + s.abs()).square(); });
     }},
    // Celu(alpha = 1): y = max(x, 0) + alpha·expm1(min(x, 0)/alpha); dx = dy·e^(min(x, 0)/alpha).
    {"Celu", Grad::FromInput, [](const Node& n) -> Unary {
       float a = attr(n, "alpha", 1.0);
       return {[a](const float* px, float* y, int64_t m) {
                 const In x(px, m);
                 Out(y, m) = x.max(0.0f) + a * (x.min(0.0f) / a).expm1();
               },
               [a](const float* x, const float* dy, float* dx, int64_t m) {
                 Out(dx, m) = In(dy, m) * (In(x, m).min(0.0f) / a).exp();
               }};
     }},
    // ThresholdedRelu(alpha = 1): y = x > alpha ? x : 0; dx likewise from dy.
    {"ThresholdedRelu", Grad::FromInput, [](const Node& n) -> Unary {
       float a = attr(n, "alpha", 1.0);
       return {[a](const float* x, float* y, int64_t m) { each(x, y, m, [a](float v) { return pick(v > a, v, 0.0f); }); },
               [a](const float* x, const float* dy, float* dx, int64_t m) {
                 each(x, dy, dx, m, [a](float v, float g) { return pick(v > a, g, 0.0f); });
               }};
     }},
    // Mish: y = x·tanh(softplus(x)); dx = dy·(t + x·sigmoid(x)·(1 - t²)), t = tanh(softplus(x))
    // (computed into dx first).
    {"Mish", Grad::FromInput, [](const Node&) -> Unary {
       return {[](const float* x, float* y, int64_t n) { Out(y, n) = In(x, n) * softplus(In(x, n)).tanh(); },
               [](const float* px, const float* pdy, float* pdx, int64_t n) {
                 const In x(px, n), dy(pdy, n);
                 Out t(pdx, n);
                 t = softplus(x).tanh();
                 t = dy * (t + x * x.logistic() * (1.0f - t.square()));
               }};
     }},
    // Shrink(bias = 0, lambd = 0.5): y = x < -lambd ? x + bias : x > lambd ? x - bias : 0;
    // dx = dy outside [-lambd, lambd], else 0.
    {"Shrink", Grad::FromInput, [](const Node& n) -> Unary {
       float b = attr(n, "bias", 0.0), l = attr(n, "lambd", 0.5);
       return {[b, l](const float* x, float* y, int64_t m) {
                 each(x, y, m, [b, l](float v) { return pick(v < -l, v + b, pick(v > l, v - b, 0.0f)); });
               },
               [l](const float* x, const float* dy, float* dx, int64_t m) {
                 each(x, dy, dx, m, [l](float v, float g) { return pick((v < -l) | (v > l), g, 0.0f); });
               }};
     }},
    // Tan: dx = dy·(1 + y²).  Atan: dx = dy / (1 + x²).
    {"Tan", Grad::FromOutput, [](const Node&) -> Unary {
       return eigen([](const In& x) { return x.tan(); },
                    [](const In& s, const In& dy) { return dy * (1.0f + s.square()); });
     }},
    {"Atan", Grad::FromInput, [](const Node&) -> Unary {
       return eigen([](const In& x) { return x.atan(); },
                    [](const In& s, const In& dy) { return dy / (1.0f + s.square()); });
     }},
    // Asin: dx = dy / √(1 - x²).  Acos: dx = -dy / √(1 - x²).
    {"Asin", Grad::FromInput, [](const Node&) -> Unary {
       return eigen([](const In& x) { return x.asin(); },
                    [](const In& s, const In& dy) { return dy * (1.0f - s.square()).rsqrt(); });
     }},
    {"Acos", Grad::FromInput, [](const Node&) -> Unary {
       return eigen([](const In& x) { return x.acos(); },
                    [](const In& s, const In& dy) { return -dy * (1.0f - s.square()).rsqrt(); });
     }},
    // Sinh: dx = dy·cosh(x).  Cosh: dx = dy·sinh(x).
    {"Sinh", Grad::FromInput, [](const Node&) -> Unary {
       return eigen([](const In& x) { return x.sinh(); },
                    [](const In& s, const In& dy) { return dy * s.cosh(); });
     }},
    {"Cosh", Grad::FromInput, [](const Node&) -> Unary {
       return eigen([](const In& x) { return x.cosh(); },
                    [](const In& s, const In& dy) { return dy * s.sinh(); });
     }},
    // Gelu(approximate = "none"): y = x·Φ(x), Φ(x) = (1 + erf(x/√2))/2; dx = dy·(Φ(x) + x·φ(x)).
    // approximate = "tanh" (PyTorch's): y = x/2·(1 + tanh(u)), u = √(2/π)·(x + 0.044715·x³);
    // dx = dy·((1 + t)/2 + x/2·(1 - t²)·√(2/π)·(1 + 3·0.044715·x²)), t = tanh(u) (into dx first).
    {"Gelu", Grad::FromInput, [](const Node& n) -> Unary {
       std::string mode = n.attr_string("approximate", "none");
       if (mode == "tanh") {
         return {[](const float* px, float* py, int64_t m) {
                   const In x(px, m);
                   Out(py, m) = 0.5f * x * (1.0f + (kSqrt2_Pi * (x + kGeluKappa * x.cube())).tanh());
                 },
                 [](const float* px, const float* pdy, float* pdx, int64_t m) {
                   const In x(px, m), dy(pdy, m);
                   Out t(pdx, m);
                   t = (kSqrt2_Pi * (x + kGeluKappa * x.cube())).tanh();
                   t = dy * (0.5f * (1.0f + t) +
                             0.5f * x * (1.0f - t.square()) * kSqrt2_Pi * (1.0f + 3.0f * kGeluKappa * x.square()));
                 }};
       }
       if (mode != "none") kernel_error(n, "Gelu approximate='" + mode + "' is not 'none' or 'tanh'");
       return eigen([](const In& x) { return 0.5f * x * (1.0f + (x * kSqrt1_2).erf()); },
                    [](const In& s, const In& dy) {
                      return dy * (0.5f * (1.0f + (s * kSqrt1_2).erf()) + s * kInvSqrt2Pi * (-0.5f * s.square()).exp());
                    });
     }},
    // Silu: y = x·sigmoid(x); dx = dy·σ·(1 + x·(1 - σ)), σ = sigmoid(x) (into dx first).
    {"Silu", Grad::FromInput, [](const Node&) -> Unary {
       return {[](const float* x, float* y, int64_t n) { Out(y, n) = In(x, n) * In(x, n).logistic(); },
               [](const float* px, const float* pdy, float* pdx, int64_t n) {
                 const In x(px, n), dy(pdy, n);
                 Out sig(pdx, n);
                 sig = x.logistic();
                 sig = dy * sig * (1.0f + x * (1.0f - sig));
               }};
     }},
};

// Elements per block: a few passes over a block stay in the L1/L2 cache.
constexpr int64_t kBlock = 4096;

template <class T>
void integer_forward(const OpCall& c, int64_t (*f)(int64_t)) {
  const T* x = c.in[0]->data<T>();
  T* y = c.out[0]->data<T>();
  parallel_for(c.out[0]->numel(), kElementwiseGrain, c.ctx.threads, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) y[i] = static_cast<T>(f(x[i]));
  });
}

// fn(lo, len) over [0, n) in blocks of kBlock, the blocks split among threads.
template <class Fn>
void for_blocks(int64_t n, int threads, const Fn& fn) {
  parallel_for(n, kElementwiseGrain, threads, [&](int64_t lo, int64_t hi) {
    for (int64_t b = lo; b < hi; b += kBlock) fn(b, std::min(kBlock, hi - b));
  });
}

void unary_forward(const OpCall& c, const Entry& e) {
  const Array& x = *c.in[0];
  if (e.integer && x.dtype() == DType::I64) return integer_forward<int64_t>(c, e.integer);
  if (e.integer && x.dtype() == DType::I32) return integer_forward<int32_t>(c, e.integer);
  require_f32(c.node, x, "the input");
  Unary u = e.make(c.node);
  const float* px = x.data<float>();
  float* py = c.out[0]->data<float>();
  for_blocks(x.numel(), c.ctx.threads, [&](int64_t lo, int64_t len) { u.forward(px + lo, py + lo, len); });
}

void unary_backward(const GradCall& c, const Entry& e) {
  require_f32(c.node, *c.dout[0], "the output gradient");
  Unary u = e.make(c.node);
  const float* dy = c.dout[0]->data<float>();
  const float* s = dy;
  if (e.grad == Grad::FromInput) s = c.in[0]->data<float>();
  if (e.grad == Grad::FromOutput) s = c.out[0]->data<float>();
  float* dx = c.din[0]->data<float>();
  for_blocks(c.din[0]->numel(), c.ctx.threads, [&](int64_t lo, int64_t len) { u.backward(s + lo, dy + lo, dx + lo, len); });
}

// IsNaN: y = x != x.  IsInf(detect_negative = 1, detect_positive = 1): y = x is ±inf as asked.
template <class T>
void classify_forward(const OpCall& c, bool nan, bool neg, bool pos) {
  const T* x = c.in[0]->data<T>();
  uint8_t* y = c.out[0]->data<uint8_t>();
  const T inf = std::numeric_limits<T>::infinity();
  parallel_for(c.out[0]->numel(), kElementwiseGrain, c.ctx.threads, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) y[i] = nan ? std::isnan(x[i]) : (neg && x[i] == -inf) || (pos && x[i] == inf);
  });
}

void classify(const OpCall& c, bool nan) {
  bool neg = c.node.attr_int("detect_negative", 1) != 0, pos = c.node.attr_int("detect_positive", 1) != 0;
  if (c.in[0]->dtype() == DType::F64) return classify_forward<double>(c, nan, neg, pos);
  require_f32(c.node, *c.in[0], "the input");
  classify_forward<float>(c, nan, neg, pos);
}

}  // namespace

void register_elementwise_unary(KernelTable& table) {
  for (const Entry& e : kTable) {
    OpKernel k{[&e](const OpCall& c) { unary_forward(c, e); }, nullptr};
    if (e.grad != Grad::None) k.backward = [&e](const GradCall& c) { unary_backward(c, e); };
    table[e.type] = std::move(k);
  }
  table["IsNaN"] = {[](const OpCall& c) { classify(c, true); }, nullptr};
  table["IsInf"] = {[](const OpCall& c) { classify(c, false); }, nullptr};
}

}  // namespace tensoropt::runtime::cpu
