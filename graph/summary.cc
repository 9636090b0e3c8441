#include "graph/summary.h"

#include <algorithm>
#include <set>

#include "graph/error.h"
#include "graph/op_catalogue.h"

namespace tensoropt {

std::vector<bool> requires_grad(const Graph& g, bool input_gradients) {
  std::vector<bool> rg(g.tensors.size(), false);
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    const Tensor& x = g.tensors[t];
    rg[t] = x.kind == TensorKind::Parameter || (input_gradients && x.kind == TensorKind::Input && dtype_is_float(x.dtype));
  }
  for (const Node& n : g.nodes) {
    const OpDef* def = find_op(n.op_type);
    TO_CHECK(def != nullptr);
    bool any = false;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      int t = n.inputs[i];
      bool nondiff = std::find(def->nondiff_inputs.begin(), def->nondiff_inputs.end(), static_cast<int>(i)) !=
                     def->nondiff_inputs.end();
      any = any || (t >= 0 && !nondiff && rg[static_cast<size_t>(t)]);
    }
    for (int o : n.outputs) {
      if (o >= 0) rg[static_cast<size_t>(o)] = any && dtype_is_float(g.tensors[static_cast<size_t>(o)].dtype);
    }
  }
  return rg;
}

std::vector<bool> data_dependent(const Graph& g) {
  std::vector<bool> dd(g.tensors.size(), false);
  for (int t : g.inputs) dd[static_cast<size_t>(t)] = true;
  for (const Node& n : g.nodes) {
    bool any = false;
    for (int t : n.inputs) any = any || (t >= 0 && dd[static_cast<size_t>(t)]);
    for (int o : n.outputs) {
      if (o >= 0) dd[static_cast<size_t>(o)] = any;
    }
  }
  return dd;
}

int storage_of(const Graph& g, int t) {
  for (;;) {
    int p = g.tensors[static_cast<size_t>(t)].producer;
    if (p < 0) return t;
    const Node& n = g.nodes[static_cast<size_t>(p)];
    static const std::set<std::string> views = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"};
    if (!views.count(n.op_type) || n.inputs.empty() || n.inputs[0] < 0) return t;
    t = n.inputs[0];
  }
}

std::vector<NodeCost> node_costs(const Graph& g) {
  std::vector<bool> rg = requires_grad(g);
  std::vector<bool> dd = data_dependent(g);
  std::vector<NodeCost> costs;
  costs.reserve(g.nodes.size());
  for (const Node& n : g.nodes) {
    const OpDef* def = find_op(n.op_type);
    TO_CHECK(def != nullptr);
    OpView v(g, n);
    NodeCost c;
    c.input_grad.resize(n.inputs.size());
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      bool nondiff = std::find(def->nondiff_inputs.begin(), def->nondiff_inputs.end(), static_cast<int>(i)) !=
                     def->nondiff_inputs.end();
      c.input_grad[i] = n.inputs[i] >= 0 && !nondiff && rg[static_cast<size_t>(n.inputs[i])];
    }
    try {
      c.fwd_flops = def->fwd_flops(v);
      c.bwd_flops = def->bwd_flops(v, c.input_grad);
      // Saved parameters, constants and tensors computed from them alone (a transposed weight, a
      // causal mask) are held anyway as model state; only data-dependent tensors are activations.
      c.saved = def->saved(v, c.input_grad);
    } catch (const OpError& e) {
      // A catalogue check the node's inference did not make: still the model's fault.
      throw InputError(g.source_path + ": node " + n.label() + ": " + e.what());
    }
    const auto state = [&](const Saved& sv) { return sv.tensor >= 0 && !dd[static_cast<size_t>(sv.tensor)]; };
    for (const Saved& sv : c.saved)
      if (state(sv)) c.state_read.push_back(sv.tensor);
    std::erase_if(c.saved, state);
    for (const Saved& sv : c.saved) {
      if (__builtin_add_overflow(c.saved_bytes, sv.bytes, &c.saved_bytes)) {
        throw InputError(g.source_path + ": node " + n.label() + " saves more than 2^63 bytes for backward");
      }
    }
    c.bytes = op_bytes(v, c.input_grad, c.saved);
    costs.push_back(std::move(c));
  }
  return costs;
}

ModelSummary summarize(const Graph& g) {
  // Each tensor's elements and bytes fit in int64 (ops::kMaxElements); the totals are checked.
  auto add = [&](int64_t& total, int64_t n, const char* what) {
    if (__builtin_add_overflow(total, n, &total)) throw InputError(g.source_path + ": the model's " + what + " exceed 2^63");
  };
  ModelSummary s;
  std::set<int> used;
  for (const Node& n : g.nodes) {
    ++s.op_counts[n.op_type];
    for (int t : n.inputs) {
      if (t >= 0) used.insert(t);
    }
  }
  s.nodes = static_cast<int64_t>(g.nodes.size());
  for (int t : used) {
    const Tensor& x = g.tensors[static_cast<size_t>(t)];
    if (x.kind == TensorKind::Parameter) {
      add(s.trainable_parameters, x.elements(), "parameters");
      add(s.parameter_bytes, x.bytes(), "parameter bytes");
      ++s.parameter_tensors;
    } else if (x.kind == TensorKind::Buffer) {
      add(s.buffer_elements, x.elements(), "buffer elements");
      add(s.buffer_bytes, x.bytes(), "buffer bytes");
      if (x.frozen) add(s.frozen_parameters, x.elements(), "frozen parameters");
    } else if (x.kind == TensorKind::Constant) {
      add(s.constant_bytes, x.bytes(), "constant bytes");
    }
  }
  std::vector<NodeCost> costs = node_costs(g);
  std::set<int> saved;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const NodeCost& c = costs[i];
    s.fwd_flops += c.fwd_flops;
    s.bwd_flops += c.bwd_flops;
    s.fwd_flops_by_op[g.nodes[i].op_type] += c.fwd_flops;
    add(s.fwd_bytes, c.bytes.fwd_read, "forward bytes moved");
    add(s.fwd_bytes, c.bytes.fwd_write, "forward bytes moved");
    add(s.bwd_bytes, c.bytes.bwd_read, "backward bytes moved");
    add(s.bwd_bytes, c.bytes.bwd_write, "backward bytes moved");
    for (const Saved& sv : c.saved) {
      if (sv.tensor < 0 || saved.insert(storage_of(g, sv.tensor)).second) add(s.activation_bytes, sv.bytes, "activation bytes");
    }
  }
  return s;
}

}  // namespace tensoropt
