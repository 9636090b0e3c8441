// infer_static, cross_check and finish_static (graph/import_steps.h): type inference, constant
// folding, dead-node removal and batch-axis propagation over a graph whose inputs already have
// static shapes.
#include <set>
#include <vector>

#include "graph/error.h"
#include "graph/fuse.h"
#include "graph/unmerge_batch.h"
#include "graph/import_steps.h"
#include "graph/op_catalogue.h"
#include "graph/ops/helpers.h"
#include "graph/rebatch.h"

namespace tensoropt {
namespace {

void infer_node(Graph& g, size_t ni) {
  const Node& node = g.nodes[ni];
  const std::string where = g.source_path + ": node " + node.label();
  if (!node.domain.empty()) {
    throw InputError(where + ": domain '" + node.domain + "' is not supported (only the default ONNX domain)");
  }
  const OpDef* def = find_op(node.op_type);
  if (!def) {
    throw InputError(where + ": op type '" + node.op_type + "' is not supported; supported: " + supported_op_list());
  }
  OpView view(g, node);
  std::vector<OutType> outs;
  try {
    outs = def->infer(view);
    for (const OutType& o : outs) ops::checked_numel(o.shape);
  } catch (const OpError& e) {
    throw InputError(where + ": " + e.what());
  }
  if (outs.size() < node.outputs.size()) {
    bool extra_present = false;
    for (size_t o = outs.size(); o < node.outputs.size(); ++o) extra_present = extra_present || node.outputs[o] >= 0;
    if (extra_present) throw InputError(where + ": has " + std::to_string(node.outputs.size()) + " outputs, expected " + std::to_string(outs.size()));
  }
  bool small = true;
  for (size_t o = 0; o < node.outputs.size(); ++o) {
    int t = node.outputs[o];
    if (t < 0) continue;
    Tensor& x = g.tensors[static_cast<size_t>(t)];
    x.dtype = outs[o].dtype;
    x.shape = outs[o].shape;
    small = small && x.elements() <= kMaxFoldElements;
  }
  bool inputs_known = true;
  for (int i : node.inputs) inputs_known = inputs_known && (i < 0 || g.tensors[static_cast<size_t>(i)].value);
  if (!def->fold || !(small || def->folds_always) || !(inputs_known || def->folds_from_shapes)) return;
  std::vector<Value> values;
  try {
    values = def->fold(view);
  } catch (const OpError& e) {
    throw InputError(where + ": " + e.what());
  }
  for (size_t o = 0; o < node.outputs.size() && o < values.size(); ++o) {
    int t = node.outputs[o];
    if (t < 0) continue;
    Tensor& x = g.tensors[static_cast<size_t>(t)];
    values[o].shape = x.shape;
    values[o].dtype = x.dtype;
    // A Constant's value is not held where the model stores it as external data or it is large
    // (tensor_value, graph/import_steps.h): a constant tensor without a value, as such an
    // initializer is, which the runtime reads from the file.
    const bool held = values[o].size() == x.elements();
    TO_CHECK(held || (def->folds_always && values[o].size() == 0));
    if (held) x.value = std::move(values[o]);
    x.kind = TensorKind::Constant;
    x.producer = -1;
  }
}

bool folded(const Graph& g, const Node& n) {
  for (int o : n.outputs) {
    if (o >= 0 && g.tensors[static_cast<size_t>(o)].kind != TensorKind::Constant) return false;
  }
  return true;
}

// Keeps the nodes that are not folded and that some graph output depends on; renumbers producers.
void prune(Graph& g) {
  std::vector<bool> needed(g.tensors.size(), false);
  for (int t : g.outputs) needed[static_cast<size_t>(t)] = true;
  std::vector<bool> keep(g.nodes.size(), false);
  for (size_t i = g.nodes.size(); i-- > 0;) {
    const Node& n = g.nodes[i];
    if (folded(g, n)) continue;
    bool any = false;
    for (int o : n.outputs) any = any || (o >= 0 && needed[static_cast<size_t>(o)]);
    if (!any) continue;
    keep[i] = true;
    for (int t : n.inputs) {
      if (t >= 0) needed[static_cast<size_t>(t)] = true;
    }
  }
  std::vector<Node> kept;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!keep[i]) continue;
    for (int o : g.nodes[i].outputs) {
      if (o >= 0) g.tensors[static_cast<size_t>(o)].producer = static_cast<int>(kept.size());
    }
    kept.push_back(std::move(g.nodes[i]));
  }
  g.nodes = std::move(kept);
  // Outputs of dropped dead nodes stay in the tensor table, unread and without a producer.
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    Tensor& x = g.tensors[t];
    if (x.kind == TensorKind::Activation && x.producer >= 0 && !needed[t]) x.producer = -1;
  }
}

void propagate_batch_axes(Graph& g) {
  for (const Node& n : g.nodes) {
    OpView view(g, n);
    IterSpace s = op_space(view);
    for (size_t o = 0; o < n.outputs.size() && o < s.outputs.size(); ++o) {
      int t = n.outputs[o];
      if (t < 0) continue;
      int axis = -1;
      for (size_t a = 0; a < s.outputs[o].size(); ++a) {
        int d = s.outputs[o][a];
        if (d >= 0 && s.dims[static_cast<size_t>(d)].role == DimRole::Batch) {
          axis = static_cast<int>(a);
          break;
        }
      }
      g.tensors[static_cast<size_t>(t)].batch_axis = axis;
    }
  }
}

}  // namespace

void infer_static(Graph& g, const ShapeRewrites* rewrites, int64_t batch) {
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (rewrites) apply_shape_rewrites(g, i, *rewrites, batch);
    infer_node(g, i);
  }
}

void cross_check(const Graph& g, const std::map<std::string, Shape>& reference) {
  // libonnx 1.12 sizes a ceil_mode pooling without the rule that the last window starts inside
  // the input or its left padding (PyTorch's, and newer ONNX's); ours follows PyTorch. Where the
  // two differ (there, or at a Split below), ONNX's shapes of everything computed from that output differ too: those are not
  // compared (nodes are in topological order).
  std::vector<bool> diverged(g.tensors.size(), false);
  for (const Node& n : g.nodes) {
    bool from_diverged = false;
    for (int t : n.inputs) from_diverged = from_diverged || (t >= 0 && diverged[static_cast<size_t>(t)]);
    const bool ceil_pool = (n.op_type == "MaxPool" || n.op_type == "AveragePool") && n.attr_int("ceil_mode", 0) != 0;
    // libonnx 1.12 also splits evenly where a Split's sizes come as an input it does not read
    // (sizes [3,5] of 8 inferred as [4,4]); ours reads them.
    const bool split_sizes = n.op_type == "Split" && n.inputs.size() > 1 && n.inputs[1] >= 0;
    if (from_diverged || ceil_pool || split_sizes) {
      for (int t : n.outputs) {
        if (t < 0) continue;
        auto ref = reference.find(g.tensors[static_cast<size_t>(t)].name);
        diverged[static_cast<size_t>(t)] = from_diverged || (ref != reference.end() && ref->second != g.tensors[static_cast<size_t>(t)].shape);
      }
      continue;
    }
    for (int t : n.outputs) {
      if (t < 0) continue;
      const Tensor& x = g.tensors[static_cast<size_t>(t)];
      auto ref = reference.find(x.name);
      if (ref != reference.end() && ref->second != x.shape) {
        throw InternalError(g.source_path + ": node " + n.label() + ": output '" + x.name + "' inferred as " +
                            shape_str(x.shape) + " but ONNX shape inference says " + shape_str(ref->second));
      }
    }
  }
}

void finish_static(Graph& g) {
  prune(g);
  if (fuse_activations(g) > 0) prune(g);
  if (unmerge_batch_products(g) > 0) prune(g);
  try {
    propagate_batch_axes(g);
  } catch (const OpError& e) {
    throw InternalError(g.source_path + ": iteration space: " + e.what());
  }
}

}  // namespace tensoropt
