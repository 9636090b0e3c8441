#include "graph/fuse.h"

#include <cmath>
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
};

}  // namespace

int fuse_activations(Graph& g) {
  Matcher m{g, g.consumers(), std::set<int>(g.outputs.begin(), g.outputs.end())};
  std::vector<bool> dead(g.nodes.size(), false);
  int fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& n = g.nodes[i];
    if (dead[i]) continue;
    if (n.op_type == "Erf") {
      // Walk Div -> Erf -> Add -> Mul(x) -> Mul(0.5).
      const Node* div = m.producer(n.inputs[0]);
      if (!div || div->op_type != "Div" || div->inputs.size() != 2 || !m.is_scalar(div->inputs[1], std::sqrt(2.0))) continue;
      int x = div->inputs[0];
      int e = n.outputs[0];
      int add_i = m.sole_reader(e);
      if (add_i < 0 || m.sole_reader(div->outputs[0]) != static_cast<int>(i)) continue;
      const Node& add = g.nodes[static_cast<size_t>(add_i)];
      if (add.op_type != "Add" || !m.is_scalar(Matcher::other(add, e), 1.0)) continue;
      int mul1_i = m.sole_reader(add.outputs[0]);
      if (mul1_i < 0) continue;
      const Node& mul1 = g.nodes[static_cast<size_t>(mul1_i)];
      if (mul1.op_type != "Mul" || Matcher::other(mul1, add.outputs[0]) != x) continue;
      int mul2_i = m.sole_reader(mul1.outputs[0]);
      if (mul2_i < 0) continue;
      Node& mul2 = g.nodes[static_cast<size_t>(mul2_i)];
      if (mul2.op_type != "Mul" || !m.is_scalar(Matcher::other(mul2, mul1.outputs[0]), 0.5)) continue;
      if (g.tensors[static_cast<size_t>(x)].shape != g.tensors[static_cast<size_t>(mul2.outputs[0])].shape) continue;
      // The last node becomes Gelu(x); the four before it go.
      int div_i = g.tensors[static_cast<size_t>(n.inputs[0])].producer;
      for (int d : {div_i, static_cast<int>(i), add_i, mul1_i}) dead[static_cast<size_t>(d)] = true;
      mul2.op_type = "Gelu";
      mul2.inputs = {x};
      mul2.attrs.clear();
      ++fused;
    } else if (n.op_type == "Sigmoid") {
      int x = n.inputs[0], s = n.outputs[0];
      int mul_i = m.sole_reader(s);
      if (mul_i < 0) continue;
      Node& mul = g.nodes[static_cast<size_t>(mul_i)];
      if (mul.op_type != "Mul" || Matcher::other(mul, s) != x) continue;
      if (g.tensors[static_cast<size_t>(x)].shape != g.tensors[static_cast<size_t>(mul.outputs[0])].shape) continue;
      dead[i] = true;
      mul.op_type = "Silu";
      mul.inputs = {x};
      ++fused;
    }
  }
  if (fused == 0) return 0;
  std::vector<Node> kept;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (dead[i]) {
      for (int o : g.nodes[i].outputs) {
        if (o >= 0) g.tensors[static_cast<size_t>(o)].producer = -1;
      }
      continue;
    }
    for (int o : g.nodes[i].outputs) {
      if (o >= 0) g.tensors[static_cast<size_t>(o)].producer = static_cast<int>(kept.size());
    }
    kept.push_back(std::move(g.nodes[i]));
  }
  g.nodes = std::move(kept);
  return fused;
}

}  // namespace tensoropt
