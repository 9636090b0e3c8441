#include "graph/step_schedule.h"

#include <algorithm>

#include "graph/error.h"
#include "graph/op_catalogue.h"
#include "graph/summary.h"

namespace tensoropt {
namespace {

bool listed(const std::vector<int>& v, int x) { return std::find(v.begin(), v.end(), x) != v.end(); }

}  // namespace

StepSchedule step_schedule(const Graph& g, bool input_gradients, const std::vector<bool>& recompute) {
  TO_CHECK(recompute.empty() || recompute.size() == g.nodes.size());
  const size_t nt = g.tensors.size();
  StepSchedule s;
  s.requires_grad = requires_grad(g, input_gradients);
  for (size_t t = 0; t < nt; ++t) {
    const TensorKind kind = g.tensors[t].kind;
    if (s.requires_grad[t] && (kind == TensorKind::Parameter || kind == TensorKind::Input)) s.roots.push_back(static_cast<int>(t));
  }
  s.nodes.assign(g.nodes.size(), {});
  s.producer.assign(nt, -1);
  s.last_forward_use.assign(nt, -1);
  s.last_backward_use.assign(nt, -1);
  s.earliest_need.assign(nt, -1);
  s.gradient_done.assign(nt, -1);
  s.gradient_start.assign(nt, -1);
  s.data_dependent = data_dependent(g);
  const std::vector<bool>& reads_data_at = s.data_dependent;
  auto producer_recomputes = [&](int t) {
    const int u = s.producer[static_cast<size_t>(t)];
    return u >= 0 && s.nodes[static_cast<size_t>(u)].recompute;
  };
  auto first = [](int& slot, size_t i) {
    if (slot < 0) slot = static_cast<int>(i);
  };
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    const OpDef* def = find_op(n.op_type);
    TO_CHECK(def != nullptr);
    NodeSchedule& p = s.nodes[i];
    bool reads_data = false;
    for (int t : n.inputs) reads_data = reads_data || (t >= 0 && reads_data_at[static_cast<size_t>(t)]);
    p.recompute = (!recompute.empty() && recompute[i]) || !reads_data;
    for (int o : n.outputs)
      if (o >= 0) s.producer[static_cast<size_t>(o)] = static_cast<int>(i);
    p.input_grad.assign(n.inputs.size(), false);
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      const int t = n.inputs[k];
      if (t < 0) continue;
      s.last_forward_use[static_cast<size_t>(t)] = static_cast<int>(i);
      p.input_grad[k] = s.requires_grad[static_cast<size_t>(t)] && !listed(def->nondiff_inputs, static_cast<int>(k));
      p.backward = p.backward || p.input_grad[k];
      if (p.input_grad[k]) {
        first(s.gradient_done[static_cast<size_t>(t)], i);
        s.gradient_start[static_cast<size_t>(t)] = static_cast<int>(i);
      }
    }
    p.need_input.assign(n.inputs.size(), false);
    p.need_output.assign(n.outputs.size(), false);
    p.keep_input.assign(n.inputs.size(), false);
    p.keep_output.assign(n.outputs.size(), false);
    if (p.backward) {
      OpView view(g, n);
      for (const Saved& sv : def->saved(view, p.input_grad)) {
        if (sv.tensor < 0) continue;  // op extras live in the kernel's OpState
        for (size_t k = 0; k < n.inputs.size(); ++k) p.need_input[k] = p.need_input[k] || n.inputs[k] == sv.tensor;
        for (size_t k = 0; k < n.outputs.size(); ++k) p.need_output[k] = p.need_output[k] || n.outputs[k] == sv.tensor;
      }
    }
    // A recomputing node keeps its inputs (backward or not: a reader may need its output
    // regenerated) instead of what it saves; nobody keeps what a recomputing producer wrote.
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      p.keep_input[k] = n.inputs[k] >= 0 && keeps_input(p.need_input[k], p.recompute, producer_recomputes(n.inputs[k]));
    }
    for (size_t k = 0; k < n.outputs.size(); ++k) p.keep_output[k] = keeps_output(p.need_output[k], p.recompute);
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      const int t = n.inputs[k];
      if (t >= 0 && (p.need_input[k] || p.recompute)) first(s.earliest_need[static_cast<size_t>(t)], i);
      // Backward runs in reverse order: a kept tensor is last needed by the earliest node keeping it.
      if (p.keep_input[k]) first(s.last_backward_use[static_cast<size_t>(t)], i);
    }
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      const int t = n.outputs[k];
      if (t >= 0 && p.need_output[k]) first(s.earliest_need[static_cast<size_t>(t)], i);
      if (p.keep_output[k]) first(s.last_backward_use[static_cast<size_t>(t)], i);
    }
  }
  return s;
}

}  // namespace tensoropt
