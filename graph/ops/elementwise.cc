// Elementwise ops: unary maths, binary arithmetic with broadcasting, comparisons and logic,
// Where, Cast, Identity and Dropout. N = elements of the output.
#include <cmath>
#include <limits>

#include "graph/ops/helpers.h"

namespace tensoropt::ops {
namespace {

enum class Keep { Nothing, Input, Output };

std::vector<int> all_inputs(const OpView& v) {
  std::vector<int> idx;
  for (int i = 0; i < v.num_inputs(); ++i) idx.push_back(i);
  return idx;
}

SavedFn keep(Keep k) {
  return [k](const OpView& v, const std::vector<bool>& g) -> std::vector<Saved> {
    if (!g[0] || k == Keep::Nothing) return {};
    return k == Keep::Input ? save_inputs(v, {0}) : save_outputs(v, {0});
  };
}

std::string per_elem(double f) {
  std::string s = std::to_string(f);
  s.erase(s.find_last_not_of('0') + 1);
  if (s.back() == '.') s.pop_back();
  return s == "0" ? "0" : s + "·N";
}

OpDef unary(const std::string& type, double fwd, double bwd, Keep saves, RealFn real,
            IntFn integer = nullptr) {
  OpDef d;
  d.type = type;
  d.family = "elementwise";
  d.flops_doc = per_elem(fwd) + " / " + per_elem(bwd);
  d.saves_doc = saves == Keep::Input ? "input" : saves == Keep::Output ? "output" : "nothing";
  d.infer = [](const OpView& v) {
    if (!v.has_input(0)) throw OpError("missing input");
    return std::vector<OutType>{{v.in(0).dtype, v.in_shape(0)}};
  };
  if (real || integer) {
    d.fold = [real, integer](const OpView& v) {
      RealFn r = real ? RealFn([real](const std::vector<double>& a) { return real({a[0]}); }) : nullptr;
      return std::vector<Value>{eval_elementwise(v, v.in(0).dtype, integer, r, 0, 1)};
    };
  }
  d.space = [](const OpView& v) { return elementwise_space(v, {0}); };
  d.fwd_flops = [fwd](const OpView& v) { return fwd * out_elems(v); };
  d.bwd_flops = [bwd](const OpView& v, const std::vector<bool>& g) { return g[0] ? bwd * out_elems(v) : 0.0; };
  d.saved = keep(saves);
  return d;
}

// A step function (Floor, Ceil, Round, Sign): its gradient is zero wherever it is defined, so, as
// PyTorch's zero gradient adds nothing, no gradient flows back through it: the planner charges no
// backward and the runtime runs none (graph/step_schedule.h).
OpDef zero_gradient(OpDef d) {
  d.flops_doc = "1·N / 0 (zero gradient: none flows back)";
  d.nondiff_inputs = {0};
  return d;
}

// A binary (or variadic) arithmetic op with broadcasting. `bwd_a`/`bwd_b` are the FLOPs per
// output element of each operand's gradient; a broadcast operand's gradient also sums over the
// broadcast axes (N - elements(operand) additions). `saves_for_a`/`saves_for_b` list which
// inputs the gradient of a / of b needs.
OpDef binary(const std::string& type, double fwd, double bwd_a, double bwd_b,
             std::vector<int> saves_for_a, std::vector<int> saves_for_b, RealFn real, IntFn integer) {
  OpDef d;
  d.type = type;
  d.family = "elementwise";
  d.flops_doc = per_elem(fwd) + " / " + per_elem(bwd_a) + " (a) + " + per_elem(bwd_b) +
                " (b), plus the sum over broadcast axes";
  auto names = [](const std::vector<int>& v) {
    std::string s;
    for (int i : v) s += std::string(s.empty() ? "" : ",") + (i == 0 ? "a" : "b");
    return s.empty() ? std::string("nothing") : s;
  };
  d.saves_doc = saves_for_a.empty() && saves_for_b.empty()
                    ? "nothing"
                    : "for grad a: " + names(saves_for_a) + "; for grad b: " + names(saves_for_b);
  d.infer = [](const OpView& v) {
    std::vector<Shape> shapes;
    for (int i = 0; i < v.num_inputs(); ++i) {
      if (!v.has_input(i)) throw OpError("missing input " + std::to_string(i));
      shapes.push_back(v.in_shape(i));
    }
    if (shapes.size() < 2) throw OpError("needs two inputs");
    return std::vector<OutType>{{v.in(0).dtype, broadcast(shapes)}};
  };
  d.fold = [real, integer](const OpView& v) {
    return std::vector<Value>{eval_elementwise(v, v.in(0).dtype, integer, real)};
  };
  d.space = [](const OpView& v) { return elementwise_space(v, all_inputs(v)); };
  d.fwd_flops = [fwd](const OpView& v) { return fwd * out_elems(v) * (v.num_inputs() - 1); };
  d.bwd_flops = [bwd_a, bwd_b](const OpView& v, const std::vector<bool>& g) {
    double n = out_elems(v), f = 0;
    for (int i = 0; i < v.num_inputs(); ++i) {
      if (!g[static_cast<size_t>(i)]) continue;
      f += (i == 0 ? bwd_a : bwd_b) * n + (n - in_elems(v, i));
    }
    return f;
  };
  d.saved = [saves_for_a, saves_for_b](const OpView& v, const std::vector<bool>& g) {
    std::vector<int> pos;
    if (g[0]) pos.insert(pos.end(), saves_for_a.begin(), saves_for_a.end());
    if (v.num_inputs() > 1 && g[1]) pos.insert(pos.end(), saves_for_b.begin(), saves_for_b.end());
    return save_inputs(v, pos);
  };
  return d;
}

// Comparisons and logic: bool output, no gradient.
OpDef predicate(const std::string& type, int arity, IntFn integer, RealFn real) {
  OpDef d;
  d.type = type;
  d.family = "elementwise";
  d.flops_doc = "1·N / 0 (no gradient)";
  d.saves_doc = "nothing";
  for (int i = 0; i < arity; ++i) d.nondiff_inputs.push_back(i);
  d.infer = [arity](const OpView& v) {
    std::vector<Shape> shapes;
    for (int i = 0; i < arity; ++i) {
      if (!v.has_input(i)) throw OpError("missing input " + std::to_string(i));
      shapes.push_back(v.in_shape(i));
    }
    return std::vector<OutType>{{DType::Bool, broadcast(shapes)}};
  };
  d.fold = [integer, real](const OpView& v) {
    return std::vector<Value>{eval_elementwise(v, DType::Bool, integer, real)};
  };
  d.space = [](const OpView& v) { return elementwise_space(v, all_inputs(v)); };
  d.fwd_flops = [](const OpView& v) { return out_elems(v); };
  d.bwd_flops = [](const OpView&, const std::vector<bool>&) { return 0.0; };
  d.saved = [](const OpView&, const std::vector<bool>&) { return std::vector<Saved>{}; };
  return d;
}

int64_t int_div(int64_t a, int64_t b) {
  if (b == 0) throw OpError("integer division by zero");
  if (a == std::numeric_limits<int64_t>::min() && b == -1) throw OpError("integer overflow in division");
  return a / b;
}

int64_t int_mod(int64_t a, int64_t b) {
  if (b == 0) throw OpError("integer modulo by zero");
  if (b == -1) return 0;
  int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

int64_t wrap_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
int64_t wrap_sub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
int64_t wrap_mul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

using V = std::vector<double>;
using I = std::vector<int64_t>;

// Unary maths: activations, exponentials, roots, rounding, trigonometry.
void register_unary_math(std::vector<OpDef>& ops) {
  ops.push_back(unary("Relu", 1, 1, Keep::Output, [](const V& a) { return std::max(a[0], 0.0); },
                      [](const I& a) { return std::max<int64_t>(a[0], 0); }));
  ops.push_back(unary("LeakyRelu", 2, 1, Keep::Input, nullptr));
  ops.push_back(unary("Sigmoid", 3, 2, Keep::Output, [](const V& a) { return 1 / (1 + std::exp(-a[0])); }));
  ops.push_back(unary("Tanh", 1, 2, Keep::Output, [](const V& a) { return std::tanh(a[0]); }));
  ops.push_back(unary("Erf", 1, 3, Keep::Input, [](const V& a) { return std::erf(a[0]); }));
  ops.push_back(unary("Exp", 1, 1, Keep::Output, [](const V& a) { return std::exp(a[0]); }));
  ops.push_back(unary("Log", 1, 1, Keep::Input, [](const V& a) { return std::log(a[0]); }));
  ops.push_back(unary("Sqrt", 1, 2, Keep::Output, [](const V& a) { return std::sqrt(a[0]); }));
  ops.push_back(unary("Reciprocal", 1, 2, Keep::Output, [](const V& a) { return 1 / a[0]; }));
  ops.push_back(unary("Neg", 1, 1, Keep::Nothing, [](const V& a) { return -a[0]; },
                      [](const I& a) { return wrap_sub(0, a[0]); }));
  ops.push_back(unary("Abs", 1, 1, Keep::Input, [](const V& a) { return std::fabs(a[0]); },
                      [](const I& a) { return a[0] < 0 ? wrap_sub(0, a[0]) : a[0]; }));
  ops.push_back(zero_gradient(unary("Floor", 1, 0, Keep::Nothing, [](const V& a) { return std::floor(a[0]); },
                                    [](const I& a) { return a[0]; })));
  ops.push_back(zero_gradient(unary("Ceil", 1, 0, Keep::Nothing, [](const V& a) { return std::ceil(a[0]); },
                                    [](const I& a) { return a[0]; })));
  ops.push_back(unary("Softplus", 3, 3, Keep::Input, [](const V& a) { return std::log1p(std::exp(a[0])); }));
  ops.push_back(unary("Elu", 3, 2, Keep::Output, nullptr));
  ops.push_back(unary("Selu", 4, 2, Keep::Output, nullptr));
  ops.push_back(unary("HardSigmoid", 3, 2, Keep::Input, nullptr));
  ops.push_back(unary("HardSwish", 4, 3, Keep::Input, nullptr));
  ops.push_back(unary("Sin", 1, 2, Keep::Input, [](const V& a) { return std::sin(a[0]); }));
  ops.push_back(unary("Cos", 1, 2, Keep::Input, [](const V& a) { return std::cos(a[0]); }));
  ops.push_back(unary("Softsign", 3, 3, Keep::Input, nullptr));
  ops.push_back(unary("Celu", 4, 2, Keep::Input, nullptr));
  ops.push_back(unary("ThresholdedRelu", 1, 1, Keep::Input, nullptr));
  ops.push_back(unary("Mish", 5, 6, Keep::Input, nullptr));
  ops.push_back(unary("Shrink", 2, 1, Keep::Input, nullptr));
  ops.push_back(unary("Tan", 1, 2, Keep::Output, [](const V& a) { return std::tan(a[0]); }));
  ops.push_back(unary("Atan", 1, 3, Keep::Input, [](const V& a) { return std::atan(a[0]); }));
  ops.push_back(unary("Asin", 1, 3, Keep::Input, [](const V& a) { return std::asin(a[0]); }));
  ops.push_back(unary("Acos", 1, 3, Keep::Input, [](const V& a) { return std::acos(a[0]); }));
  ops.push_back(unary("Sinh", 1, 2, Keep::Input, [](const V& a) { return std::sinh(a[0]); }));
  ops.push_back(unary("Cosh", 1, 2, Keep::Input, [](const V& a) { return std::cosh(a[0]); }));
  // Gelu (ONNX opset 20, and what graph/fuse.cc makes of the erf form older exports spell out):
  // 0.5·x·(1 + erf(x/√2)), or with approximate="tanh" the tanh form. Saves its input, as PyTorch.
  ops.push_back(unary("Gelu", 5, 8, Keep::Input, nullptr));
  // Silu: x·sigmoid(x). Not an ONNX op: graph/fuse.cc makes it from Sigmoid -> Mul(x, ·).
  ops.push_back(unary("Silu", 4, 5, Keep::Input, nullptr));
  ops.push_back(zero_gradient(unary("Sign", 1, 0, Keep::Nothing, [](const V& a) { return double((a[0] > 0) - (a[0] < 0)); },
                                    [](const I& a) { return int64_t{(a[0] > 0) - (a[0] < 0)}; })));
  ops.push_back(zero_gradient(unary("Round", 1, 0, Keep::Nothing, [](const V& a) { return std::nearbyint(a[0]); },
                                    [](const I& a) { return a[0]; })));
}

// IsNaN, IsInf: bool output, no gradient.
OpDef float_class_test(const char* type) {
  OpDef d = unary(type, 1, 0, Keep::Nothing, nullptr);
  d.flops_doc = "1·N / 0 (no gradient)";
  d.nondiff_inputs = {0};
  d.infer = [](const OpView& v) { return std::vector<OutType>{{DType::Bool, v.in_shape(0)}}; };
  return d;
}

// PRelu(x, slope): slope is a learned weight broadcast against x.
OpDef prelu() {
  OpDef d = binary("PRelu", 2, 1, 2, {1}, {0}, nullptr, nullptr);
  d.weight_inputs = {1};
  d.fold = nullptr;
  return d;
}

// Variadic sums; Mean adds one division per output element.
OpDef variadic_sum(const char* type) {
  bool mean = std::string(type) == "Mean";
  OpDef d = binary(type, 1, mean ? 1 : 0, mean ? 1 : 0, {}, {}, [](const V& a) {
    double t = 0;
    for (double x : a) t += x;
    return t;
  }, nullptr);
  if (mean) d.fold = nullptr;
  d.flops_doc = mean ? "(inputs)·N / 1·N per input needing a gradient" : "(inputs - 1)·N / 0, plus the sum over broadcast axes";
  d.infer = [](const OpView& v) {
    std::vector<Shape> shapes;
    for (int i = 0; i < v.num_inputs(); ++i) {
      if (!v.has_input(i)) throw OpError("missing input " + std::to_string(i));
      shapes.push_back(v.in_shape(i));
    }
    if (shapes.empty()) throw OpError("needs at least one input");
    return std::vector<OutType>{{v.in(0).dtype, broadcast(shapes)}};
  };
  d.fwd_flops = [mean](const OpView& v) { return out_elems(v) * (v.num_inputs() - (mean ? 0 : 1)); };
  return d;
}

// Clip(x, min?, max?): min and max are constants (inputs from opset 11, attributes before).
OpDef clip() {
  OpDef d = unary("Clip", 2, 1, Keep::Input, nullptr);
  d.nondiff_inputs = {1, 2};
  return d;
}

OpDef logical_not() {
  OpDef d = unary("Not", 1, 0, Keep::Nothing, nullptr, [](const I& a) { return int64_t{a[0] == 0}; });
  d.flops_doc = "1·N / 0 (no gradient)";
  d.nondiff_inputs = {0};
  d.infer = [](const OpView& v) { return std::vector<OutType>{{DType::Bool, v.in_shape(0)}}; };
  return d;
}

// Binary arithmetic with broadcasting; integer overflow wraps, as in two's complement.
void register_binary_arithmetic(std::vector<OpDef>& ops) {
  ops.push_back(binary("Add", 1, 0, 0, {}, {}, [](const V& a) { return a[0] + a[1]; },
                       [](const I& a) { return wrap_add(a[0], a[1]); }));
  ops.push_back(binary("Sub", 1, 0, 1, {}, {}, [](const V& a) { return a[0] - a[1]; },
                       [](const I& a) { return wrap_sub(a[0], a[1]); }));
  ops.push_back(binary("Mul", 1, 1, 1, {1}, {0}, [](const V& a) { return a[0] * a[1]; },
                       [](const I& a) { return wrap_mul(a[0], a[1]); }));
  ops.push_back(binary("Div", 1, 1, 3, {1}, {0, 1}, [](const V& a) { return a[0] / a[1]; },
                       [](const I& a) { return int_div(a[0], a[1]); }));
  ops.push_back(binary("Pow", 1, 3, 3, {0, 1}, {0, 1}, [](const V& a) { return std::pow(a[0], a[1]); },
                       [](const I& a) { return saturate_to_int64(std::pow(static_cast<double>(a[0]), static_cast<double>(a[1]))); }));
  ops.push_back(binary("Min", 1, 1, 1, {0, 1}, {0, 1}, [](const V& a) { return std::min(a[0], a[1]); },
                       [](const I& a) { return std::min(a[0], a[1]); }));
  ops.push_back(binary("Max", 1, 1, 1, {0, 1}, {0, 1}, [](const V& a) { return std::max(a[0], a[1]); },
                       [](const I& a) { return std::max(a[0], a[1]); }));
  ops.push_back(binary("Mod", 1, 0, 0, {}, {}, [](const V& a) { return std::fmod(a[0], a[1]); },
                       [](const I& a) { return int_mod(a[0], a[1]); }));
}

// Comparisons and logic.
void register_comparisons_and_logic(std::vector<OpDef>& ops) {
  ops.push_back(predicate("Equal", 2, [](const I& a) { return int64_t{a[0] == a[1]}; },
                          [](const V& a) { return double(a[0] == a[1]); }));
  ops.push_back(predicate("Less", 2, [](const I& a) { return int64_t{a[0] < a[1]}; },
                          [](const V& a) { return double(a[0] < a[1]); }));
  ops.push_back(predicate("LessOrEqual", 2, [](const I& a) { return int64_t{a[0] <= a[1]}; },
                          [](const V& a) { return double(a[0] <= a[1]); }));
  ops.push_back(predicate("Greater", 2, [](const I& a) { return int64_t{a[0] > a[1]}; },
                          [](const V& a) { return double(a[0] > a[1]); }));
  ops.push_back(predicate("GreaterOrEqual", 2, [](const I& a) { return int64_t{a[0] >= a[1]}; },
                          [](const V& a) { return double(a[0] >= a[1]); }));
  ops.push_back(predicate("And", 2, [](const I& a) { return int64_t{a[0] && a[1]}; }, nullptr));
  ops.push_back(predicate("Or", 2, [](const I& a) { return int64_t{a[0] || a[1]}; }, nullptr));
  ops.push_back(predicate("Xor", 2, [](const I& a) { return int64_t{(a[0] != 0) != (a[1] != 0)}; }, nullptr));
}

// Where(cond, x, y): the gradient selects between x and y by the saved condition.
OpDef where() {
  OpDef d;
  d.type = "Where";
  d.family = "elementwise";
  d.flops_doc = "1·N / 1·N per operand needing a gradient";
  d.saves_doc = "the condition";
  d.nondiff_inputs = {0};
  d.infer = [](const OpView& v) {
    for (int i = 0; i < 3; ++i) {
      if (!v.has_input(i)) throw OpError("missing input " + std::to_string(i));
    }
    return std::vector<OutType>{{v.in(1).dtype, broadcast({v.in_shape(0), v.in_shape(1), v.in_shape(2)})}};
  };
  d.fold = [](const OpView& v) {
    return std::vector<Value>{eval_elementwise(
        v, v.in(1).dtype, [](const I& a) { return a[0] ? a[1] : a[2]; },
        [](const V& a) { return a[0] != 0 ? a[1] : a[2]; })};
  };
  d.space = [](const OpView& v) { return elementwise_space(v, {0, 1, 2}); };
  d.fwd_flops = [](const OpView& v) { return out_elems(v); };
  d.bwd_flops = [](const OpView& v, const std::vector<bool>& g) {
    return out_elems(v) * (double(g[1]) + double(g[2]));
  };
  d.saved = [](const OpView& v, const std::vector<bool>& g) {
    return g[1] || g[2] ? save_inputs(v, {0}) : std::vector<Saved>{};
  };
  return d;
}

OpDef cast() {
  OpDef d = unary("Cast", 0, 0, Keep::Nothing, nullptr);
  d.flops_doc = "0 / 0 (a conversion: bytes only)";
  d.infer = [](const OpView& v) {
    auto t = dtype_from_onnx(static_cast<int>(v.node.attr_int("to", 0)));
    if (!t || *t == DType::Undefined || *t == DType::String) throw OpError("unsupported target type 'to'");
    return std::vector<OutType>{{*t, v.in_shape(0)}};
  };
  d.fold = [](const OpView& v) {
    auto t = *dtype_from_onnx(static_cast<int>(v.node.attr_int("to", 0)));
    return std::vector<Value>{eval_elementwise(v, t, [](const I& a) { return a[0]; },
                                               [](const V& a) { return a[0]; }, 0, 1)};
  };
  return d;
}

OpDef identity() {
  OpDef d = unary("Identity", 0, 0, Keep::Nothing, [](const V& a) { return a[0]; },
                  [](const I& a) { return a[0]; });
  d.flops_doc = "0 / 0";
  return d;
}

// Dropout(data, ratio?, training_mode?) -> (output, mask?). Active when training_mode is a
// constant true (opset 12+) and the ratio (default 0.5) is above zero; otherwise the output is
// the input itself, as PyTorch returns it for p = 0 or in eval mode.
bool dropout_training(const OpView& v) {
  if (!v.has_input(2)) return false;
  const Value* t = v.in_value(2);
  if (!t) throw OpError("training_mode input is not a constant");
  if (t->size() == 0 || t->integer(0) == 0) return false;
  if (!v.has_input(1)) return true;
  const Value* r = v.in_value(1);
  if (!r) throw OpError("ratio input is not a constant");
  return r->size() > 0 && r->real(0) > 0;
}

OpDef dropout() {
  OpDef d = unary("Dropout", 2, 1, Keep::Nothing, nullptr);
  d.flops_doc = "active: 2·N / 1·N; inactive: 0 / 0";
  d.saves_doc = "active: the mask (1 byte per element)";
  d.nondiff_inputs = {1, 2};
  d.infer = [](const OpView& v) {
    if (!v.has_input(0)) throw OpError("missing input");
    // Whether it is active decides its cost and its saved mask: refuse the model here, naming
    // the node, when training_mode or ratio is computed at run time.
    (void)dropout_training(v);
    std::vector<OutType> out{{v.in(0).dtype, v.in_shape(0)}};
    if (v.num_outputs() > 1) out.push_back({DType::Bool, v.in_shape(0)});
    return out;
  };
  d.fwd_flops = [](const OpView& v) { return dropout_training(v) ? 2 * out_elems(v) : 0.0; };
  d.bwd_flops = [](const OpView& v, const std::vector<bool>& g) {
    return g[0] && dropout_training(v) ? out_elems(v) : 0.0;
  };
  d.saved = [](const OpView& v, const std::vector<bool>& g) {
    if (!g[0] || !dropout_training(v)) return std::vector<Saved>{};
    return std::vector<Saved>{{-1, v.in(0).elements()}};
  };
  return d;
}

}  // namespace

void register_elementwise(std::vector<OpDef>& ops) {
  register_unary_math(ops);
  for (const char* type : {"IsNaN", "IsInf"}) ops.push_back(float_class_test(type));
  ops.push_back(prelu());
  for (const char* type : {"Sum", "Mean"}) ops.push_back(variadic_sum(type));
  ops.push_back(clip());
  ops.push_back(logical_not());
  register_binary_arithmetic(ops);
  register_comparisons_and_logic(ops);
  ops.push_back(where());
  ops.push_back(cast());
  ops.push_back(identity());
  ops.push_back(dropout());
}

}  // namespace tensoropt::ops
