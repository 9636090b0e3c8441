// Unary elementwise kernels (graph/ops/elementwise.cc unary()): maths and activations as one
// table. Each row: the forward y = f(x) and the backward dx = dy · f'(s), where s is the input x
// or the output y as the catalogue saves it (its Keep), both as Eigen array expressions over a
// contiguous chunk so exp, tanh, erf and friends vectorise. Shapes: x, y, dy, dx all [N].
// float32; Relu, Neg, Abs, Sign, Floor, Ceil and Round also take int64 and int32 (as the
// catalogue folds them), forward only. Plus IsNaN and IsInf (float in, bool out, no gradient).
// Numerics follow PyTorch: Softplus is max(x,0) + log1p(exp(-|x|)), Elu and Celu use expm1, Relu
// keeps NaN, the derivatives at kinks are PyTorch's (Abs: 0 at 0; HardSigmoid: 0 at the ends).
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

// What backward reads besides dy, as the catalogue's Keep for the op; None: no gradient at all
// (comparisons of the zero-gradient ops Floor, Ceil, Round, Sign go here: nothing flows back).
enum class Grad : uint8_t { FromInput, FromOutput, FromNothing, None };

struct Unary {
  std::function<void(const In& x, Out& y)> forward;
  std::function<void(const In& s, const In& dy, Out& dx)> backward;  // s: x, y or dy (FromNothing)
};

struct Entry {
  const char* type;
  Grad grad;
  Unary (*make)(const Node& node);      // reads the node's attributes
  int64_t (*integer)(int64_t) = nullptr;  // the int64/int32 forward, where the catalogue has one
};

float attr(const Node& n, const char* key, double fallback) { return static_cast<float>(n.attr_float(key, fallback)); }

int64_t wrap_neg(int64_t v) { return static_cast<int64_t>(0 - static_cast<uint64_t>(v)); }

constexpr float kSqrt1_2 = 0.70710678118654752f;      // 1/√2
constexpr float kInvSqrt2Pi = 0.39894228040143268f;   // 1/√(2π)
constexpr float k2InvSqrtPi = 1.12837916709551257f;   // 2/√π
constexpr float kSqrt2_Pi = 0.79788456080286536f;     // √(2/π)
constexpr float kGeluKappa = 0.044715f;

// softplus(x) = log(1 + e^x), computed without overflow.
auto softplus(const In& x) { return x.max(0.0f) + (-x.abs()).exp().log1p(); }

const Entry kTable[] = {
    // Relu: y = max(x, 0) (NaN stays NaN); dx = dy where y > 0.
    {"Relu", Grad::FromOutput, [](const Node&) -> Unary {
       return {[](const In& x, Out& y) { y = (x < 0.0f).select(0.0f, x); },
               [](const In& y, const In& dy, Out& dx) { dx = (y > 0.0f).select(dy, 0.0f); }};
     }, [](int64_t v) { return v < 0 ? int64_t{0} : v; }},
    // LeakyRelu(alpha = 0.01): y = x > 0 ? x : alpha·x; dx = dy or alpha·dy.
    {"LeakyRelu", Grad::FromInput, [](const Node& n) -> Unary {
       float a = attr(n, "alpha", 0.01);
       return {[a](const In& x, Out& y) { y = (x > 0.0f).select(x, a * x); },
               [a](const In& x, const In& dy, Out& dx) { dx = (x > 0.0f).select(dy, a * dy); }};
     }},
    // Sigmoid: y = 1 / (1 + e^-x); dx = dy·y·(1 - y).
    {"Sigmoid", Grad::FromOutput, [](const Node&) -> Unary {
       return {[](const In& x, Out& y) { y = x.logistic(); },
               [](const In& y, const In& dy, Out& dx) { dx = dy * y * (1.0f - y); }};
     }},
    // Tanh: dx = dy·(1 - y²).
    {"Tanh", Grad::FromOutput, [](const Node&) -> Unary {
       return {[](const In& x, Out& y) { y = x.tanh(); },
               [](const In& y, const In& dy, Out& dx) { dx = dy * (1.0f - y.square()); }};
     }},
    // Erf: dx = dy·2/√π·e^(-x²).
    {"Erf", Grad::FromInput, [](const Node&) -> Unary {
       return {[](const In& x, Out& y) { y = x.erf(); },
               [](const In& x, const In& dy, Out& dx) { dx = dy * k2InvSqrtPi * (-x.square()).exp(); }};
     }},
    // Exp: dx = dy·y.
    {"Exp", Grad::FromOutput, [](const Node&) -> Unary {
       return {[](const In& x, Out& y) { y = x.exp(); },
               [](const In& y, const In& dy, Out& dx) { dx = dy * y; }};
     }},
    // Log: dx = dy / x.
    {"Log", Grad::FromInput, [](const Node&) -> Unary {
       return {[](const In& x, Out& y) { y = x.log(); },
               [](const In& x, const In& dy, Out& dx) { dx = dy / x; }};
     }},
    // Sqrt: dx = dy / (2y).
    {"Sqrt", Grad::FromOutput, [](const Node&) -> Unary {
       return {[](const In& x, Out& y) { y = x.sqrt(); },
               [](const In& y, const In& dy, Out& dx) { dx = dy / (2.0f * y); }};
     }},
    // Reciprocal: y = 1/x; dx = -dy·y².
    {"Reciprocal", Grad::FromOutput, [](const Node&) -> Unary {
       return {[](const In& x, Out& y) { y = x.inverse(); },
               [](const In& y, const In& dy, Out& dx) { dx = -dy * y.square(); }};
     }},
    // Neg: dx = -dy.
    {"Neg", Grad::FromNothing, [](const Node&) -> Unary {
       return {[](const In& x, Out& y) { y = -x; },
               [](const In&, const In& dy, Out& dx) { dx = -dy; }};
     }, wrap_neg},
    // Abs: dx = dy·sign(x) (0 at 0).
    {"Abs", Grad::FromInput, [](const Node&) -> Unary {
       return {[](const In& x, Out& y) { y = x.abs(); },
               [](const In& x, const In& dy, Out& dx) { dx = dy * x.sign(); }};
     }, [](int64_t v) { return v < 0 ? wrap_neg(v) : v; }},
    // Floor, Ceil, Round (half to even), Sign: zero gradient, so none flows back.
    {"Floor", Grad::None, [](const Node&) -> Unary { return {[](const In& x, Out& y) { y = x.floor(); }, nullptr}; },
     [](int64_t v) { return v; }},
    {"Ceil", Grad::None, [](const Node&) -> Unary { return {[](const In& x, Out& y) { y = x.ceil(); }, nullptr}; },
     [](int64_t v) { return v; }},
    {"Round", Grad::None, [](const Node&) -> Unary { return {[](const In& x, Out& y) { y = x.rint(); }, nullptr}; },
     [](int64_t v) { return v; }},
    {"Sign", Grad::None, [](const Node&) -> Unary { return {[](const In& x, Out& y) { y = x.sign(); }, nullptr}; },
     [](int64_t v) { return int64_t{(v > 0) - (v < 0)}; }},
    // Softplus: y = log(1 + e^x); dx = dy·sigmoid(x).
    {"Softplus", Grad::FromInput, [](const Node&) -> Unary {
       return {[](const In& x, Out& y) { y = softplus(x); },
               [](const In& x, const In& dy, Out& dx) { dx = dy * x.logistic(); }};
     }},
    // Elu(alpha = 1): y = x > 0 ? x : alpha·(e^x - 1); dx = y > 0 ? dy : dy·(y + alpha).
    {"Elu", Grad::FromOutput, [](const Node& n) -> Unary {
       float a = attr(n, "alpha", 1.0);
       return {[a](const In& x, Out& y) { y = (x > 0.0f).select(x, a * x.expm1()); },
               [a](const In& y, const In& dy, Out& dx) { dx = (y > 0.0f).select(dy, dy * (y + a)); }};
     }},
    // Selu(alpha, gamma): y = gamma·(x > 0 ? x : alpha·(e^x - 1));
    // dx = y > 0 ? gamma·dy : dy·(y + gamma·alpha).
    {"Selu", Grad::FromOutput, [](const Node& n) -> Unary {
       float a = attr(n, "alpha", 1.67326319217681884765625), g = attr(n, "gamma", 1.05070102214813232421875);
       return {[a, g](const In& x, Out& y) { y = g * (x > 0.0f).select(x, a * x.expm1()); },
               [a, g](const In& y, const In& dy, Out& dx) { dx = (y > 0.0f).select(g * dy, dy * (y + g * a)); }};
     }},
    // HardSigmoid(alpha = 0.2, beta = 0.5): y = clamp(alpha·x + beta, 0, 1);
    // dx = alpha·dy strictly inside (0, 1), else 0.
    {"HardSigmoid", Grad::FromInput, [](const Node& n) -> Unary {
       float a = attr(n, "alpha", 0.2), b = attr(n, "beta", 0.5);
       return {[a, b](const In& x, Out& y) { y = (a * x + b).max(0.0f).min(1.0f); },
               [a, b](const In& x, const In& dy, Out& dx) {
                 dx = (a * x + b > 0.0f && a * x + b < 1.0f).select(a * dy, 0.0f);
               }};
     }},
    // HardSwish: y = x·clamp(x/6 + 1/2, 0, 1); dx = 0 below -3, dy·(x/3 + 1/2) up to 3, dy above.
    {"HardSwish", Grad::FromInput, [](const Node&) -> Unary {
       return {[](const In& x, Out& y) { y = x * (x * (1.0f / 6) + 0.5f).max(0.0f).min(1.0f); },
               [](const In& x, const In& dy, Out& dx) {
                 dx = (x < -3.0f).select(0.0f, (x <= 3.0f).select(dy * (x * (1.0f / 3) + 0.5f), dy));
               }};
     }},
    // Sin: dx = dy·cos(x).  Cos: dx = -dy·sin(x).
    {"Sin", Grad::FromInput, [](const Node&) -> Unary {
       return {[](const In& x, Out& y) { y = x.sin(); },
               [](const In& x, const In& dy, Out& dx) { dx = dy * x.cos(); }};
     }},
    {"Cos", Grad::FromInput, [](const Node&) -> Unary {
       return {[](const In& x, Out& y) { y = x.cos(); },
               [](const In& x, const In& dy, Out& dx) { dx = -dy * x.sin(); }};
     }},
    // Softsign: y = x / (1 + |x|); dx = dy / (1 + |x|)².
    {"Softsign", Grad::FromInput, [](const Node&) -> Unary {
       return {[](const In& x, Out& y) { y = x / (1.0f + x.abs()); },
               [](const In& x, const In& dy, Out& dx) { dx = dy / (1.0f + x.abs()).square(); }};
     }},
    // Celu(alpha = 1): y = x > 0 ? x : alpha·(e^(x/alpha) - 1); dx = x > 0 ? dy : dy·e^(x/alpha).
    {"Celu", Grad::FromInput, [](const Node& n) -> Unary {
       float a = attr(n, "alpha", 1.0);
       return {[a](const In& x, Out& y) { y = (x > 0.0f).select(x, a * (x / a).expm1()); },
               [a](const In& x, const In& dy, Out& dx) { dx = (x > 0.0f).select(dy, dy * (x / a).exp()); }};
     }},
    // ThresholdedRelu(alpha = 1): y = x > alpha ? x : 0; dx likewise from dy.
    {"ThresholdedRelu", Grad::FromInput, [](const Node& n) -> Unary {
       float a = attr(n, "alpha", 1.0);
       return {[a](const In& x, Out& y) { y = (x > a).select(x, 0.0f); },
               [a](const In& x, const In& dy, Out& dx) { dx = (x > a).select(dy, 0.0f); }};
     }},
    // Mish: y = x·tanh(softplus(x)); dx = dy·(t + x·sigmoid(x)·(1 - t²)), t = tanh(softplus(x)).
    {"Mish", Grad::FromInput, [](const Node&) -> Unary {
       return {[](const In& x, Out& y) { y = x * softplus(x).tanh(); },
               [](const In& x, const In& dy, Out& dx) {
                 Vec t = softplus(x).tanh();
                 dx = dy * (t + x * x.logistic() * (1.0f - t.square()));
               }};
     }},
    // Shrink(bias = 0, lambd = 0.5): y = x < -lambd ? x + bias : x > lambd ? x - bias : 0;
    // dx = dy outside [-lambd, lambd], else 0.
    {"Shrink", Grad::FromInput, [](const Node& n) -> Unary {
       float b = attr(n, "bias", 0.0), l = attr(n, "lambd", 0.5);
       return {[b, l](const In& x, Out& y) { y = (x < -l).select(x + b, (x > l).select(x - b, 0.0f)); },
               [l](const In& x, const In& dy, Out& dx) { dx = (x < -l || x > l).select(dy, 0.0f); }};
     }},
    // Tan: dx = dy·(1 + y²).
    {"Tan", Grad::FromOutput, [](const Node&) -> Unary {
       return {[](const In& x, Out& y) { y = x.tan(); },
               [](const In& y, const In& dy, Out& dx) { dx = dy * (1.0f + y.square()); }};
     }},
    // Atan: dx = dy / (1 + x²).  Asin: dx = dy / √(1 - x²).  Acos: dx = -dy / √(1 - x²).
    {"Atan", Grad::FromInput, [](const Node&) -> Unary {
       return {[](const In& x, Out& y) { y = x.atan(); },
               [](const In& x, const In& dy, Out& dx) { dx = dy / (1.0f + x.square()); }};
     }},
    {"Asin", Grad::FromInput, [](const Node&) -> Unary {
       return {[](const In& x, Out& y) { y = x.asin(); },
               [](const In& x, const In& dy, Out& dx) { dx = dy * (1.0f - x.square()).rsqrt(); }};
     }},
    {"Acos", Grad::FromInput, [](const Node&) -> Unary {
       return {[](const In& x, Out& y) { y = x.acos(); },
               [](const In& x, const In& dy, Out& dx) { dx = -dy * (1.0f - x.square()).rsqrt(); }};
     }},
    // Sinh: dx = dy·cosh(x).  Cosh: dx = dy·sinh(x).
    {"Sinh", Grad::FromInput, [](const Node&) -> Unary {
       return {[](const In& x, Out& y) { y = x.sinh(); },
               [](const In& x, const In& dy, Out& dx) { dx = dy * x.cosh(); }};
     }},
    {"Cosh", Grad::FromInput, [](const Node&) -> Unary {
       return {[](const In& x, Out& y) { y = x.cosh(); },
               [](const In& x, const In& dy, Out& dx) { dx = dy * x.sinh(); }};
     }},
    // Gelu(approximate = "none"): y = x·Φ(x), Φ(x) = (1 + erf(x/√2))/2; dx = dy·(Φ(x) + x·φ(x)).
    // approximate = "tanh" (PyTorch's): y = x/2·(1 + tanh(u)), u = √(2/π)·(x + 0.044715·x³);
    // dx = dy·((1 + t)/2 + x/2·(1 - t²)·√(2/π)·(1 + 3·0.044715·x²)), t = tanh(u).
    {"Gelu", Grad::FromInput, [](const Node& n) -> Unary {
       std::string mode = n.attr_string("approximate", "none");
       if (mode == "tanh") {
         return {[](const In& x, Out& y) { y = 0.5f * x * (1.0f + (kSqrt2_Pi * (x + kGeluKappa * x.cube())).tanh()); },
                 [](const In& x, const In& dy, Out& dx) {
                   Vec t = (kSqrt2_Pi * (x + kGeluKappa * x.cube())).tanh();
                   dx = dy * (0.5f * (1.0f + t) +
                              0.5f * x * (1.0f - t.square()) * kSqrt2_Pi * (1.0f + 3.0f * kGeluKappa * x.square()));
                 }};
       }
       if (mode != "none") kernel_error(n, "Gelu approximate='" + mode + "' is not 'none' or 'tanh'");
       return {[](const In& x, Out& y) { y = 0.5f * x * (1.0f + (x * kSqrt1_2).erf()); },
               [](const In& x, const In& dy, Out& dx) {
                 dx = dy * (0.5f * (1.0f + (x * kSqrt1_2).erf()) + x * kInvSqrt2Pi * (-0.5f * x.square()).exp());
               }};
     }},
    // Silu: y = x·sigmoid(x); dx = dy·s·(1 + x·(1 - s)), s = sigmoid(x).
    {"Silu", Grad::FromInput, [](const Node&) -> Unary {
       return {[](const In& x, Out& y) { y = x * x.logistic(); },
               [](const In& x, const In& dy, Out& dx) {
                 Vec s = x.logistic();
                 dx = dy * s * (1.0f + x * (1.0f - s));
               }};
     }},
};

constexpr int64_t kUnaryGrain = 1 << 13;

template <class T>
void integer_forward(const OpCall& c, int64_t (*f)(int64_t)) {
  const T* x = c.in[0]->data<T>();
  T* y = c.out[0]->data<T>();
  parallel_for(c.out[0]->numel(), kElementwiseGrain, c.ctx.threads, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) y[i] = static_cast<T>(f(x[i]));
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
  parallel_for(x.numel(), kUnaryGrain, c.ctx.threads, [&](int64_t lo, int64_t hi) {
    Out y(py + lo, hi - lo);
    u.forward(In(px + lo, hi - lo), y);
  });
}

void unary_backward(const GradCall& c, const Entry& e) {
  Unary u = e.make(c.node);
  const float* dy = c.dout[0]->data<float>();
  const float* s = e.grad == Grad::FromInput ? c.in[0]->data<float>()
                   : e.grad == Grad::FromOutput ? c.out[0]->data<float>()
                                                : dy;
  float* dx = c.din[0]->data<float>();
  parallel_for(c.din[0]->numel(), kUnaryGrain, c.ctx.threads, [&](int64_t lo, int64_t hi) {
    Out d(dx + lo, hi - lo);
    u.backward(In(s + lo, hi - lo), In(dy + lo, hi - lo), d);
  });
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
