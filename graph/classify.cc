// Which graph inputs and initializers are data, trainable parameters, buffers or constants.
//
// Rules, in order (docs/import.md explains why):
//  1. Data: when some graph input has a dynamic axis, the graph inputs with one; otherwise (a
//     fixed-batch export) the graph inputs not in a weight position whose axis 0 equals that of
//     the first such input (the exporter lists the user's inputs first), so a weightless export's
//     buffers (Swin's relative_position_index [2401], a causal mask [1,1,T,T]) are not data.
//  2. Any other integer or bool tensor is a buffer (a graph input) or a constant (an initializer).
//  3. A float tensor that reaches a weight position of an op (Conv W and B, Gemm B and C,
//     BatchNormalization scale and bias, LayerNormalization scale and bias, a Gather table),
//     directly or through ops that only re-lay it out (Transpose, Reshape, Cast, ...), is a
//     parameter; one that reaches a buffer position (BatchNormalization mean and variance) is a
//     buffer.
//  4. A float initializer is a parameter when the graph's outputs are differentiable with respect
//     to it (a path to an output through inputs that take a gradient: not a Where condition, an
//     Equal, a shape or a Resize scale), unless it holds at most one element (the exporter's
//     folded scalars: "onnx::Div_12", a 1/sqrt(d)). This covers weights reached through a
//     Transpose in training-mode exports and the folded, renamed weights of eval-mode exports
//     ("onnx::MatMul_301"). A float buffer used as data (a sinusoidal table, an additive mask)
//     cannot be told from a weight: --frozen names it.
//  5. A float graph input is a parameter when it is combined with data by an op, in an input that
//     takes a gradient, and the outputs are differentiable with respect to it; otherwise a buffer.
//  6. Anything else: an initializer is a constant.
//  7. Parameters whose names match a --frozen pattern become buffers (kept, never trained).
#include <fnmatch.h>

#include <optional>
#include <set>

#include "graph/error.h"
#include "graph/import_steps.h"
#include "graph/op_catalogue.h"
#include "graph/ops/helpers.h"

namespace tensoropt {
namespace {

bool relayout_op(const std::string& type) {
  static const std::set<std::string> ops = {"Transpose", "Reshape", "Cast", "Identity", "Unsqueeze",
                                            "Squeeze", "Flatten", "Expand"};
  return ops.count(type) > 0;
}

bool contains(const std::vector<int>& v, int x) {
  for (int y : v) {
    if (y == x) return true;
  }
  return false;
}

enum class Use { None, Weight, Buffer };

// Ops whose outputs carry no gradient back to any input: comparisons, logic, shapes, indices.
bool blocks_gradient(const Node& n) {
  static const std::set<std::string> ops = {"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "Not",
                                            "And", "Or", "Xor", "IsNaN", "IsInf", "Shape", "Size", "ArgMax",
                                            "ArgMin", "NonZero", "Sign", "Round", "Floor", "Ceil"};
  if (ops.count(n.op_type)) return true;
  if (n.op_type == "Cast") {
    const Attribute* a = n.attr("to");
    if (!a || a->kind != Attribute::Kind::Int) return false;  // inference refuses it, naming the node
    auto to = dtype_from_onnx(static_cast<int>(a->i));
    return !to || !dtype_is_float(*to);
  }
  return false;
}

// reaches[t]: some graph output is differentiable with respect to tensor t.
std::vector<bool> reaches_outputs(const Graph& g) {
  std::vector<bool> reaches(g.tensors.size(), false);
  for (int t : g.outputs) reaches[static_cast<size_t>(t)] = true;
  for (size_t i = g.nodes.size(); i-- > 0;) {
    const Node& n = g.nodes[i];
    bool any = false;
    for (int o : n.outputs) any = any || (o >= 0 && reaches[static_cast<size_t>(o)]);
    if (!any || blocks_gradient(n)) continue;
    const OpDef* def = find_op(n.op_type);
    for (size_t pos = 0; pos < n.inputs.size(); ++pos) {
      int t = n.inputs[pos];
      if (t >= 0 && !(def && contains(def->nondiff_inputs, static_cast<int>(pos)))) reaches[static_cast<size_t>(t)] = true;
    }
  }
  return reaches;
}

// `t` and every tensor made from it by re-layout ops alone.
std::vector<int> relayouts_of(const Graph& g, const std::vector<std::vector<int>>& consumers, int t) {
  std::vector<int> out{t};
  std::set<int> seen{t};
  for (size_t k = 0; k < out.size(); ++k) {
    for (int n : consumers[static_cast<size_t>(out[k])]) {
      const Node& node = g.nodes[static_cast<size_t>(n)];
      if (!relayout_op(node.op_type) || node.inputs.empty() || node.inputs[0] != out[k]) continue;
      for (int o : node.outputs) {
        if (o >= 0 && seen.insert(o).second) out.push_back(o);
      }
    }
  }
  return out;
}

// The weight or buffer position, if any, that `t` finally feeds.
Use weight_use(const Graph& g, const std::vector<std::vector<int>>& consumers, int t) {
  Use use = Use::None;
  for (int cur : relayouts_of(g, consumers, t)) {
    for (int n : consumers[static_cast<size_t>(cur)]) {
      const Node& node = g.nodes[static_cast<size_t>(n)];
      const OpDef* def = find_op(node.op_type);
      if (!def) continue;
      for (size_t pos = 0; pos < node.inputs.size(); ++pos) {
        if (node.inputs[pos] != cur) continue;
        if (contains(def->weight_inputs, static_cast<int>(pos))) use = Use::Weight;
        else if (contains(def->buffer_inputs, static_cast<int>(pos)) && use == Use::None) use = Use::Buffer;
      }
    }
  }
  return use;
}

void freeze(Graph& g, const std::vector<std::string>& patterns) {
  for (const std::string& p : patterns) {
    int matched = 0;
    std::string example;
    for (Tensor& x : g.tensors) {
      if (x.kind != TensorKind::Parameter && !x.frozen) continue;
      if (example.empty()) example = x.name;
      if (fnmatch(p.c_str(), x.name.c_str(), 0) != 0) continue;
      x.kind = TensorKind::Buffer;
      x.frozen = true;
      ++matched;
    }
    if (matched == 0) {
      throw InputError(g.source_path + ": --frozen '" + p + "' matches no trainable parameter" +
                       (example.empty() ? std::string(" (the model has none left)") : " (they are named like '" + example + "')"));
    }
  }
}

}  // namespace

void classify_inputs(Graph& g, const std::vector<std::string>& frozen) {
  auto consumers = g.consumers();
  const size_t nt = g.tensors.size();
  auto dynamic = [](const Tensor& x) {
    for (int64_t d : x.shape) {
      if (d < 0) return true;
    }
    return false;
  };
  // Rules 1 and 2: which graph inputs are data.
  std::vector<bool> data(nt, false);
  bool any_dynamic = false;
  for (int t : g.inputs) any_dynamic = any_dynamic || dynamic(g.tensors[static_cast<size_t>(t)]);
  if (any_dynamic) {
    for (int t : g.inputs) data[static_cast<size_t>(t)] = dynamic(g.tensors[static_cast<size_t>(t)]);
  } else {
    std::optional<int64_t> b0;
    for (int t : g.inputs) {
      const Tensor& x = g.tensors[static_cast<size_t>(t)];
      if (x.shape.empty() || weight_use(g, consumers, t) != Use::None) continue;
      if (!b0) b0 = x.shape[0];
      data[static_cast<size_t>(t)] = x.shape[0] == *b0;
    }
  }
  std::vector<int> candidates;  // float tensors still to decide
  for (size_t t = 0; t < nt; ++t) {
    Tensor& x = g.tensors[t];
    if (x.producer >= 0 || data[t]) continue;
    bool is_input = x.kind == TensorKind::Input;
    if (!dtype_is_float(x.dtype)) {
      x.kind = is_input ? TensorKind::Buffer : TensorKind::Constant;
      continue;
    }
    Use use = weight_use(g, consumers, static_cast<int>(t));  // rule 3
    if (use == Use::Weight) x.kind = TensorKind::Parameter;
    else if (use == Use::Buffer) x.kind = TensorKind::Buffer;
    else candidates.push_back(static_cast<int>(t));
  }
  // A tensor meets data when it enters a differentiable input of an op that also reads data
  // (Resize's scales or Clip's bounds never get a gradient, so they are no parameters).
  std::vector<bool> meets_data(nt, false);
  for (const Node& n : g.nodes) {
    bool any = false;
    for (int i : n.inputs) any = any || (i >= 0 && data[static_cast<size_t>(i)]);
    if (!any) continue;
    const OpDef* def = find_op(n.op_type);
    for (size_t pos = 0; pos < n.inputs.size(); ++pos) {
      int i = n.inputs[pos];
      if (i >= 0 && !(def && contains(def->nondiff_inputs, static_cast<int>(pos)))) meets_data[static_cast<size_t>(i)] = true;
    }
    for (int o : n.outputs) {
      if (o >= 0) data[static_cast<size_t>(o)] = true;
    }
  }
  std::vector<bool> reaches = reaches_outputs(g);
  for (int t : candidates) {
    Tensor& x = g.tensors[static_cast<size_t>(t)];
    bool trainable = reaches[static_cast<size_t>(t)];
    if (x.kind == TensorKind::Input) {  // rule 5
      bool meets = false;
      for (int r : relayouts_of(g, consumers, t)) meets = meets || meets_data[static_cast<size_t>(r)];
      x.kind = meets && trainable ? TensorKind::Parameter : TensorKind::Buffer;
    } else if (trainable && x.elements() > 1) {  // rule 4
      x.kind = TensorKind::Parameter;
    }
  }
  freeze(g, frozen);  // rule 7
  // Parameters and buffers carry no value the importer may fold: they change during training.
  g.inputs.clear();
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    Tensor& x = g.tensors[t];
    if (x.kind == TensorKind::Parameter || x.kind == TensorKind::Buffer) x.value.reset();
    if (x.kind == TensorKind::Input) g.inputs.push_back(static_cast<int>(t));
  }
}

void specialise_batch(Graph& g, std::optional<int64_t> batch) {
  if (batch && *batch <= 0) throw InputError("--batch must be a positive integer, got " + std::to_string(*batch));
  for (int t : g.inputs) {
    Tensor& x = g.tensors[static_cast<size_t>(t)];
    for (size_t a = 0; a < x.shape.size(); ++a) {
      if (x.shape[a] >= 0 || a == 0) continue;
      throw InputError(g.source_path + ": input '" + x.name + "' axis " + std::to_string(a) +
                       " is dynamic; only the batch axis (0) can be set, with --batch");
    }
    if (x.shape.empty()) continue;
    if (x.shape[0] < 0 && !batch) {
      throw InputError(g.source_path + ": input '" + x.name + "' has a dynamic batch axis; pass --batch B");
    }
    if (batch) x.shape[0] = *batch;
    x.batch_axis = 0;
    if (g.batch == 0) g.batch = x.shape[0];
  }
  if (g.batch == 0 && batch) g.batch = *batch;
  for (const Tensor& x : g.tensors) {
    if (x.producer >= 0) continue;  // node outputs get their shapes from inference
    for (int64_t d : x.shape) {
      if (d < 0) throw InputError(g.source_path + ": tensor '" + x.name + "' has a dynamic dimension");
    }
    try {
      ops::checked_numel(x.shape);
    } catch (const OpError& e) {
      throw InputError(g.source_path + ": tensor '" + x.name + "': " + e.what());
    }
  }
}

}  // namespace tensoropt
