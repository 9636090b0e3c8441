#include "graph/fuse.h"

#include <array>
#include <cmath>
#include <map>
#include <optional>
#include <set>

namespace tensoropt {
namespace {

struct Matcher {
  Graph& g;
  std::vector<std::vector<int>> consumers;
  std::set<int> outputs;

  const Node* producer(int t) const {
    if (t < 0) return nullptr;
    int p = g.tensors[static_cast<size_t>(t)].producer;
    return p < 0 ? nullptr : &g.nodes[static_cast<size_t>(p)];
  }
  // The single node reading t, when t is an intermediate no one else sees.
  int sole_reader(int t) const {
    if (t < 0 || outputs.count(t)) return -1;
    const auto& c = consumers[static_cast<size_t>(t)];
    return c.size() == 1 ? c[0] : -1;
  }
  bool is_scalar(int t, double want) const {
    if (t < 0) return false;
    const Tensor& x = g.tensors[static_cast<size_t>(t)];
    return x.value && x.value->size() == 1 && std::fabs(x.value->real(0) - want) < 1e-4 * std::fabs(want);
  }
  // For a binary node, the input that is not `t` (or -1).
  static int other(const Node& n, int t) {
    if (n.inputs.size() != 2) return -1;
    return n.inputs[0] == t ? n.inputs[1] : n.inputs[1] == t ? n.inputs[0] : -1;
  }
  // The common end of both GELU forms, from t = erf(·) or tanh(·): Add(t, 1) -> Mul(x, ·) ->
  // Mul(·, 0.5). Returns the three nodes' indices, or nothing.
  std::optional<std::array<int, 3>> gelu_tail(int t, int x) const {
    int add_i = sole_reader(t);
    if (add_i < 0) return std::nullopt;
    const Node& add = g.nodes[static_cast<size_t>(add_i)];
    if (add.op_type != "Add" || !is_scalar(other(add, t), 1.0)) return std::nullopt;
    int mul_i = sole_reader(add.outputs[0]);
    if (mul_i < 0) return std::nullopt;
    const Node& mul = g.nodes[static_cast<size_t>(mul_i)];
    if (mul.op_type != "Mul" || other(mul, add.outputs[0]) != x) return std::nullopt;
    int half_i = sole_reader(mul.outputs[0]);
    if (half_i < 0) return std::nullopt;
    const Node& half = g.nodes[static_cast<size_t>(half_i)];
    if (half.op_type != "Mul" || !is_scalar(other(half, mul.outputs[0]), 0.5)) return std::nullopt;
    if (g.tensors[static_cast<size_t>(x)].shape != g.tensors[static_cast<size_t>(half.outputs[0])].shape) return std::nullopt;
    return std::array<int, 3>{add_i, mul_i, half_i};
  }
};

// Turns `n` into `type`(inputs) with the given attributes, keeping its outputs.
void rewrite(Node& n, const char* type, std::vector<int> inputs, std::map<std::string, Attribute> attrs = {}) {
  n.op_type = type;
  n.inputs = std::move(inputs);
  n.attrs = std::move(attrs);
}

Attribute int_attr(int64_t v) {
  Attribute a;
  a.kind = Attribute::Kind::Int;
  a.i = v;
  return a;
}

Attribute float_attr(double v) {
  Attribute a;
  a.kind = Attribute::Kind::Float;
  a.f = v;
  return a;
}

Attribute string_attr(const std::string& v) {
  Attribute a;
  a.kind = Attribute::Kind::String;
  a.s = v;
  return a;
}

// One function per pattern of graph/fuse.h: each fuses the pattern around node i, marks the nodes
// it replaces dead and returns true, or returns false (changing nothing) when it does not match.

// GELU, erf form.
bool fuse_gelu_erf(const Matcher& m, size_t i, std::vector<bool>& dead) {
  Graph& g = m.g;
  Node& n = g.nodes[i];
  // Walk Div -> Erf -> Add -> Mul(x) -> Mul(0.5).
  const Node* div = m.producer(n.inputs[0]);
  if (!div || div->op_type != "Div" || div->inputs.size() != 2 || !m.is_scalar(div->inputs[1], std::sqrt(2.0))) return false;
  int x = div->inputs[0];
  if (m.sole_reader(div->outputs[0]) != static_cast<int>(i)) return false;
  auto tail = m.gelu_tail(n.outputs[0], x);
  if (!tail) return false;
  // The last node becomes Gelu(x); the four before it go.
  int div_i = g.tensors[static_cast<size_t>(n.inputs[0])].producer;
  for (int d : {div_i, static_cast<int>(i), (*tail)[0], (*tail)[1]}) dead[static_cast<size_t>(d)] = true;
  rewrite(g.nodes[static_cast<size_t>((*tail)[2])], "Gelu", {x});
  return true;
}

// Mish, given n = Tanh reading a Softplus.
bool fuse_mish(const Matcher& m, size_t i, std::vector<bool>& dead) {
  Graph& g = m.g;
  Node& n = g.nodes[i];
  // Mish: Softplus(x) -> Tanh -> Mul(x, ·).
  const Node* sp = m.producer(n.inputs[0]);
  int x = sp->inputs[0];
  int mul_i = m.sole_reader(n.outputs[0]);
  if (m.sole_reader(n.inputs[0]) != static_cast<int>(i) || mul_i < 0) return false;
  Node& mul = g.nodes[static_cast<size_t>(mul_i)];
  if (mul.op_type != "Mul" || Matcher::other(mul, n.outputs[0]) != x) return false;
  dead[static_cast<size_t>(g.tensors[static_cast<size_t>(n.inputs[0])].producer)] = true;
  dead[i] = true;
  rewrite(mul, "Mish", {x});
  return true;
}

// GELU, tanh form.
bool fuse_gelu_tanh(const Matcher& m, size_t i, std::vector<bool>& dead) {
  Graph& g = m.g;
  Node& n = g.nodes[i];
  // Walk x·x -> ·x -> ·0.044715 -> +x -> ·√(2/π) -> Tanh -> +1 -> ·x -> ·0.5.
  auto only = [&](int t, const char* op) -> const Node* {
    const Node* p = m.producer(t);
    return p && p->op_type == op && m.sole_reader(t) >= 0 ? p : nullptr;
  };
  const Node* scale = only(n.inputs[0], "Mul");
  if (!scale) return false;
  const double root = std::sqrt(2 / M_PI);
  int a = m.is_scalar(scale->inputs[0], root) ? scale->inputs[1] : m.is_scalar(scale->inputs[1], root) ? scale->inputs[0] : -1;
  const Node* add = only(a, "Add");
  if (!add) return false;
  // One operand of the Add is x, the other 0.044715·x³.
  int x = -1, cube_scaled = -1;
  for (int k = 0; k < 2; ++k) {
    const Node* c = only(add->inputs[static_cast<size_t>(k)], "Mul");
    if (c && (m.is_scalar(c->inputs[0], 0.044715) || m.is_scalar(c->inputs[1], 0.044715))) {
      cube_scaled = add->inputs[static_cast<size_t>(k)];
      x = add->inputs[static_cast<size_t>(1 - k)];
    }
  }
  if (x < 0) return false;
  const Node* c = m.producer(cube_scaled);
  int cube = m.is_scalar(c->inputs[0], 0.044715) ? c->inputs[1] : c->inputs[0];
  const Node* mul3 = only(cube, "Mul");
  if (!mul3 || Matcher::other(*mul3, x) < 0) return false;
  int sq = Matcher::other(*mul3, x);
  const Node* mul2 = only(sq, "Mul");
  if (!mul2 || mul2->inputs[0] != x || mul2->inputs[1] != x) return false;
  auto tail = m.gelu_tail(n.outputs[0], x);
  if (!tail) return false;
  for (int t : {sq, cube, cube_scaled, a, n.inputs[0]}) dead[static_cast<size_t>(g.tensors[static_cast<size_t>(t)].producer)] = true;
  for (int d : {static_cast<int>(i), (*tail)[0], (*tail)[1]}) dead[static_cast<size_t>(d)] = true;
  rewrite(g.nodes[static_cast<size_t>((*tail)[2])], "Gelu", {x}, {{"approximate", string_attr("tanh")}});
  return true;
}

// LayerNorm as exported before opset 17.
bool fuse_layer_norm(const Matcher& m, size_t i, std::vector<bool>& dead) {
  Graph& g = m.g;
  Node& n = g.nodes[i];
  // Opset < 17 LayerNorm: x - mean(x) -> ^2 -> mean -> +eps -> sqrt -> (x - mean) / · -> ·w -> +b.
  auto last_axis_mean = [&](const Node& r) {
    auto axes = r.attr_ints("axes");
    int rank = static_cast<int>(g.tensors[static_cast<size_t>(r.inputs[0])].shape.size());
    return r.inputs.size() == 1 && axes && axes->size() == 1 && ((*axes)[0] == -1 || (*axes)[0] == rank - 1) &&
           r.attr_int("keepdims", 1) == 1;
  };
  if (!last_axis_mean(n)) return false;
  int x = n.inputs[0];
  int sub_i = m.sole_reader(n.outputs[0]);
  if (sub_i < 0) return false;
  const Node& sub = g.nodes[static_cast<size_t>(sub_i)];
  if (sub.op_type != "Sub" || sub.inputs[0] != x || sub.inputs[1] != n.outputs[0]) return false;
  int d = sub.outputs[0];
  const auto& readers = m.consumers[static_cast<size_t>(d)];
  if (readers.size() != 2 || m.outputs.count(d)) return false;
  int pow_i = g.nodes[static_cast<size_t>(readers[0])].op_type == "Pow" ? readers[0] : readers[1];
  int div_i = pow_i == readers[0] ? readers[1] : readers[0];
  const Node& pw = g.nodes[static_cast<size_t>(pow_i)];
  const Node& dv = g.nodes[static_cast<size_t>(div_i)];
  if (pw.op_type != "Pow" || pw.inputs[0] != d || !m.is_scalar(pw.inputs[1], 2.0) || dv.op_type != "Div" || dv.inputs[0] != d) return false;
  int var_i = m.sole_reader(pw.outputs[0]);
  if (var_i < 0 || g.nodes[static_cast<size_t>(var_i)].op_type != "ReduceMean" || !last_axis_mean(g.nodes[static_cast<size_t>(var_i)])) return false;
  int eps_i = m.sole_reader(g.nodes[static_cast<size_t>(var_i)].outputs[0]);
  if (eps_i < 0) return false;
  const Node& eps = g.nodes[static_cast<size_t>(eps_i)];
  int eps_t = eps.op_type == "Add" ? Matcher::other(eps, g.nodes[static_cast<size_t>(var_i)].outputs[0]) : -1;
  const Tensor* eps_v = eps_t >= 0 ? &g.tensors[static_cast<size_t>(eps_t)] : nullptr;
  if (!eps_v || !eps_v->value || eps_v->value->size() != 1) return false;
  int sqrt_i = m.sole_reader(eps.outputs[0]);
  if (sqrt_i < 0 || g.nodes[static_cast<size_t>(sqrt_i)].op_type != "Sqrt") return false;
  if (m.sole_reader(g.nodes[static_cast<size_t>(sqrt_i)].outputs[0]) != div_i || dv.inputs[1] != g.nodes[static_cast<size_t>(sqrt_i)].outputs[0]) return false;
  int mul_i = m.sole_reader(dv.outputs[0]);
  if (mul_i < 0) return false;
  const Node& mul = g.nodes[static_cast<size_t>(mul_i)];
  int w = mul.op_type == "Mul" ? Matcher::other(mul, dv.outputs[0]) : -1;
  int last = static_cast<int>(g.tensors[static_cast<size_t>(x)].shape.back());
  auto is_vector_param = [&](int t) {
    return t >= 0 && g.tensors[static_cast<size_t>(t)].kind == TensorKind::Parameter &&
           g.tensors[static_cast<size_t>(t)].shape == Shape{last};
  };
  if (!is_vector_param(w)) return false;
  int add_i = m.sole_reader(mul.outputs[0]);
  if (add_i < 0) return false;
  Node& add = g.nodes[static_cast<size_t>(add_i)];
  int b = add.op_type == "Add" ? Matcher::other(add, mul.outputs[0]) : -1;
  if (!is_vector_param(b)) return false;
  for (int k : {static_cast<int>(i), sub_i, pow_i, var_i, eps_i, sqrt_i, div_i, mul_i}) dead[static_cast<size_t>(k)] = true;
  rewrite(add, "LayerNormalization", {x, w, b}, {{"axis", int_attr(-1)}, {"epsilon", float_attr(eps_v->value->real(0))}});
  return true;
}

// Pad into the Conv or AveragePool that reads it.
bool fuse_pad_into_conv_or_pool(const Matcher& m, size_t i, std::vector<bool>& dead) {
  Graph& g = m.g;
  Node& n = g.nodes[i];
  // A zero constant Pad of the spatial axes feeding Conv or AveragePool becomes its pads.
  if (n.attr_string("mode", "constant") != "constant" || n.inputs.size() < 2 || n.attr("pads")) return false;
  if (n.inputs.size() > 3 && n.inputs[3] >= 0) return false;  // opset 18 axes
  if (n.inputs.size() > 2 && n.inputs[2] >= 0 && !m.is_scalar(n.inputs[2], 0.0)) {
    const Tensor& c = g.tensors[static_cast<size_t>(n.inputs[2])];
    if (!(c.value && c.value->size() == 1 && c.value->real(0) == 0.0)) return false;
  }
  const Tensor& pads_t = g.tensors[static_cast<size_t>(n.inputs[1])];
  int reader = m.sole_reader(n.outputs[0]);
  if (!pads_t.value || reader < 0) return false;
  Node& r = g.nodes[static_cast<size_t>(reader)];
  size_t rank = g.tensors[static_cast<size_t>(n.inputs[0])].shape.size();
  const Value& pv = *pads_t.value;
  if (rank < 3 || pv.size() != static_cast<int64_t>(2 * rank) || r.inputs.empty() || r.inputs[0] != n.outputs[0]) return false;
  bool ok = pv.integer(0) == 0 && pv.integer(1) == 0 && pv.integer(static_cast<int64_t>(rank)) == 0 &&
            pv.integer(static_cast<int64_t>(rank) + 1) == 0;
  for (int64_t k = 0; k < pv.size(); ++k) ok = ok && pv.integer(k) >= 0;
  bool avg = r.op_type == "AveragePool";
  if (!ok || (r.op_type != "Conv" && !avg) || r.attr_string("auto_pad", "NOTSET") != "NOTSET") return false;
  size_t sp = rank - 2;
  std::vector<int64_t> pads = r.attr_ints("pads").value_or(std::vector<int64_t>(2 * sp, 0));
  if (pads.size() != 2 * sp) return false;
  bool had_pads = false;
  for (int64_t q : pads) had_pads = had_pads || q != 0;
  if (avg && had_pads && r.attr_int("count_include_pad", 0) == 0) return false;
  for (size_t k = 0; k < sp; ++k) {
    pads[k] += pv.integer(static_cast<int64_t>(2 + k));
    pads[k + sp] += pv.integer(static_cast<int64_t>(rank + 2 + k));
  }
  r.attrs["pads"].kind = Attribute::Kind::Ints;
  r.attrs["pads"].ints = pads;
  if (avg) r.attrs["count_include_pad"] = int_attr(1);
  r.inputs[0] = n.inputs[0];
  dead[i] = true;
  return true;
}

// GroupNorm from its InstanceNormalization.
bool fuse_group_norm(const Matcher& m, size_t i, std::vector<bool>& dead) {
  Graph& g = m.g;
  Node& n = g.nodes[i];
  // GroupNorm as exported: Reshape(x, [N, G, -1]) -> InstanceNormalization(·, 1, 0) ->
  // Reshape(·, shape(x)) -> Mul(·, w) -> Add(·, b), with w and b per channel.
  auto constant_all = [&](int t, double want) {
    if (t < 0) return false;
    const Tensor& c = g.tensors[static_cast<size_t>(t)];
    if (!c.value || c.value->size() == 0) return false;
    for (int64_t k = 0; k < c.value->size(); ++k) {
      if (c.value->real(k) != want) return false;
    }
    return true;
  };
  if (n.inputs.size() != 3 || !constant_all(n.inputs[1], 1.0) || !constant_all(n.inputs[2], 0.0)) return false;
  const Node* flat = m.producer(n.inputs[0]);
  if (!flat || flat->op_type != "Reshape" || m.sole_reader(n.inputs[0]) != static_cast<int>(i)) return false;
  int x = flat->inputs[0];
  const Shape& xs = g.tensors[static_cast<size_t>(x)].shape;
  const Shape& fs = g.tensors[static_cast<size_t>(n.inputs[0])].shape;
  if (xs.size() < 3 || fs.size() != 3 || fs[0] != xs[0] || fs[1] <= 0 || xs[1] % fs[1] != 0) return false;
  int back_i = m.sole_reader(n.outputs[0]);
  if (back_i < 0 || g.nodes[static_cast<size_t>(back_i)].op_type != "Reshape") return false;
  const Node& back = g.nodes[static_cast<size_t>(back_i)];
  if (g.tensors[static_cast<size_t>(back.outputs[0])].shape != xs) return false;
  int mul_i = m.sole_reader(back.outputs[0]);
  if (mul_i < 0 || g.nodes[static_cast<size_t>(mul_i)].op_type != "Mul") return false;
  const Node& mul = g.nodes[static_cast<size_t>(mul_i)];
  int add_i = m.sole_reader(mul.outputs[0]);
  if (add_i < 0 || g.nodes[static_cast<size_t>(add_i)].op_type != "Add") return false;
  Node& add = g.nodes[static_cast<size_t>(add_i)];
  // The per-channel parameter behind w (or b), looking through an Unsqueeze to [C,1,...].
  auto channel_param = [&](int t) {
    const Node* u = m.producer(t);
    if (u && u->op_type == "Unsqueeze") t = u->inputs[0];
    const Tensor& p = g.tensors[static_cast<size_t>(t)];
    return p.kind == TensorKind::Parameter && p.shape == Shape{xs[1]} ? t : -1;
  };
  int w = channel_param(Matcher::other(mul, back.outputs[0]));
  int b = channel_param(Matcher::other(add, mul.outputs[0]));
  if (w < 0 || b < 0) return false;
  int flat_i = g.tensors[static_cast<size_t>(n.inputs[0])].producer;
  for (int k : {flat_i, static_cast<int>(i), back_i, mul_i}) dead[static_cast<size_t>(k)] = true;
  rewrite(add, "GroupNormalization", {x, w, b},
          {{"num_groups", int_attr(fs[1])}, {"epsilon", float_attr(n.attr_float("epsilon", 1e-5))}});
  return true;
}

// SiLU: Sigmoid(x) -> Mul(x, ·).
bool fuse_silu(const Matcher& m, size_t i, std::vector<bool>& dead) {
  Graph& g = m.g;
  Node& n = g.nodes[i];
  int x = n.inputs[0], s = n.outputs[0];
  int mul_i = m.sole_reader(s);
  if (mul_i < 0) return false;
  Node& mul = g.nodes[static_cast<size_t>(mul_i)];
  if (mul.op_type != "Mul" || Matcher::other(mul, s) != x) return false;
  if (g.tensors[static_cast<size_t>(x)].shape != g.tensors[static_cast<size_t>(mul.outputs[0])].shape) return false;
  dead[i] = true;
  rewrite(mul, "Silu", {x});
  return true;
}

}  // namespace

int fuse_activations(Graph& g) {
  Matcher m{g, g.consumers(), std::set<int>(g.outputs.begin(), g.outputs.end())};
  std::vector<bool> dead(g.nodes.size(), false);
  int fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (dead[i]) continue;
    bool hit = false;
    if (n.op_type == "Erf") {
      hit = fuse_gelu_erf(m, i, dead);
    } else if (n.op_type == "Tanh" && m.producer(n.inputs[0]) && m.producer(n.inputs[0])->op_type == "Softplus") {
      hit = fuse_mish(m, i, dead);
    } else if (n.op_type == "Tanh") {
      hit = fuse_gelu_tanh(m, i, dead);
    } else if (n.op_type == "ReduceMean") {
      hit = fuse_layer_norm(m, i, dead);
    } else if (n.op_type == "Pad") {
      hit = fuse_pad_into_conv_or_pool(m, i, dead);
    } else if (n.op_type == "InstanceNormalization") {
      hit = fuse_group_norm(m, i, dead);
    } else if (n.op_type == "Sigmoid") {
      hit = fuse_silu(m, i, dead);
    }
    if (hit) ++fused;
  }
  return fused;
}

}  // namespace tensoropt
