// The step's schedule as step_peak() reads it (space.h "workspace()"): where each variable's
// holdings are freed, where each link's redistribution runs, which gradients are in flight across
// which ops, the transient of each op's backward and of each parameter's gradient
// synchronisation, and the bytes all of these come to per configuration.
#include <algorithm>
#include <vector>

#include "planner/parallel/kernel_workspace.h"
#include "planner/space/space.h"

namespace tensoropt::planner {

void StrategySpace::build_schedule() {
  // The step's schedule (step_peak): where each variable's holdings are freed, where each link's
  // redistribution runs, and which gradients are in flight across which ops.
  position_.assign(vars_.size(), -1);
  for (size_t i = 0; i < vars_.size(); ++i) {
    const Variable& v = vars_[i];
    if (v.kind == VarKind::Op) position_[i] = v.node;
    if (v.kind == VarKind::Tensor) position_[i] = graph_->tensors[static_cast<size_t>(v.tensor)].producer;
  }
  link_position_.assign(links_.size(), -1);
  for (size_t e = 0; e < links_.size(); ++e) {
    const Link& l = links_[e];
    const Variable& to = vars_[static_cast<size_t>(l.to)];
    link_position_[e] = to.kind == VarKind::Op ? to.node : position_[static_cast<size_t>(l.from)];
    const Variable& from = vars_[static_cast<size_t>(l.from)];
    int& first = position_[static_cast<size_t>(l.from)];
    if (from.kind == VarKind::Parameter && to.kind == VarKind::Op) first = first < 0 ? to.node : std::min(first, to.node);
  }
  add_gradient_flights();
  add_regenerated_flights();
  add_parameter_flights();
  // Bytes that step_peak reads for every strategy, per configuration: each link's tensor in its
  // writer's and its reader's layout, each flight's gradient (step_peak runs once per frontier
  // point, so these are looked up rather than recomputed from shapes).
  link_from_bytes_.resize(links_.size());
  link_to_bytes_.resize(links_.size());
  for (size_t e = 0; e < links_.size(); ++e) {
    const Link& l = links_[e];
    for (size_t k = 0; k < vars_[static_cast<size_t>(l.from)].configs.size(); ++k)
      link_from_bytes_[e].push_back(static_cast<double>(local_bytes(l.tensor, from_layout(l, static_cast<int>(k)))));
    for (size_t k = 0; k < vars_[static_cast<size_t>(l.to)].configs.size(); ++k)
      link_to_bytes_[e].push_back(static_cast<double>(local_bytes(l.tensor, to_layout(l, static_cast<int>(k)))));
  }
  flight_bytes_.resize(flights_.size());
  for (size_t f = 0; f < flights_.size(); ++f)
    for (size_t k = 0; k < vars_[static_cast<size_t>(flights_[f].var)].configs.size(); ++k)
      flight_bytes_[f].push_back(flight_bytes_of(flights_[f], static_cast<int>(k)));
}

void StrategySpace::add_gradient_flights() {
  const Graph& g = *graph_;
  for (size_t node = 0; node < g.nodes.size(); ++node) {
    const std::vector<int>& outs = g.nodes[node].outputs;
    for (size_t o = 0; o < outs.size(); ++o) {
      const int t = outs[o];
      if (t < 0 || !requires_grad_[static_cast<size_t>(t)]) continue;
      // From its first addend (graph/step_schedule.h; the loss makes a graph output's, after the
      // last node) to its producer's backward.
      const int last = is_output_[static_cast<size_t>(t)] ? static_cast<int>(g.nodes.size()) : schedule_.gradient_start[static_cast<size_t>(t)];
      if (last > static_cast<int>(node) + 1) flights_.push_back({static_cast<int>(node), static_cast<int>(o), t, static_cast<int>(node) + 1, last});
    }
  }
}

void StrategySpace::add_regenerated_flights() {
  // Regenerated outputs of ops that may recompute: made again at the first backward that reads one
  // (a reader that keeps it, or the op's own), held until the op's backward.
  const Graph& g = *graph_;
  std::vector<int> regenerated_flight(g.tensors.size(), -1);  // per tensor, one link pass below
  for (size_t node = 0; node < g.nodes.size(); ++node) {
    if (!vars_[node].may_recompute) continue;
    const std::vector<int>& outs = g.nodes[node].outputs;
    for (size_t o = 0; o < outs.size(); ++o) {
      if (outs[o] < 0) continue;
      regenerated_flight[static_cast<size_t>(outs[o])] = static_cast<int>(flights_.size());
      flights_.push_back({static_cast<int>(node), static_cast<int>(o), outs[o], static_cast<int>(node), static_cast<int>(node) + 1, true});
    }
  }
  for (const Link& l : links_) {
    const int f = l.from_slot < 0 ? -1 : regenerated_flight[static_cast<size_t>(l.tensor)];
    if (f < 0 || !l.to_keeps || vars_[static_cast<size_t>(l.to)].kind != VarKind::Op) continue;
    int& last = flights_[static_cast<size_t>(f)].last;
    last = std::max(last, vars_[static_cast<size_t>(l.to)].node + 1);
  }
}

void StrategySpace::add_parameter_flights() {
  param_flight_.assign(vars_.size(), -1);
  for (size_t i = 0; i < vars_.size(); ++i) {
    if (vars_[i].kind != VarKind::Parameter) continue;
    // From its first addend to the reader where it is complete (graph/step_schedule.h).
    const auto t = static_cast<size_t>(vars_[i].tensor);
    const int first = schedule_.gradient_done[t], last = schedule_.gradient_start[t];
    if (last > first) {
      param_flight_[i] = static_cast<int>(flights_.size());
      flights_.push_back({static_cast<int>(i), -1, vars_[i].tensor, first, last});
    }
  }
}

double StrategySpace::flight_bytes(const Flight& f, int config) const {
  return flight_bytes_[static_cast<size_t>(&f - flights_.data())][static_cast<size_t>(config)];
}

double StrategySpace::flight_bytes_of(const Flight& f, int config) const {
  const Variable& v = vars_[static_cast<size_t>(f.var)];
  const VarConfig& c = v.configs[static_cast<size_t>(config)];
  if (f.regenerated && !c.recompute) return 0;
  if (v.kind == VarKind::Op) return static_cast<double>(local_bytes(f.tensor, v.op_configs[static_cast<size_t>(c.op_config)].outputs[static_cast<size_t>(f.slot)]));
  if (c.zero < 2 || gradient_layout(c.layout) == c.layout) return 0;  // accumulated into the stored gradient
  const Tensor& t = graph_->tensors[static_cast<size_t>(f.tensor)];
  return static_cast<double>(numel(max_local_shape(t.shape, c.layout, mesh_)) * options_.training.gradient_bytes());
}

double StrategySpace::op_workspace(size_t var, int config) const {
  const Variable& v = vars_[var];
  if (v.kind != VarKind::Op) return 0;
  const NodeCost& nc = node_costs_[static_cast<size_t>(v.node)];
  const OpConfig& oc = v.op_configs[static_cast<size_t>(v.configs[static_cast<size_t>(config)].op_config)];
  const Node& node = graph_->nodes[static_cast<size_t>(v.node)];
  double w = 0;
  bool backward = false;
  for (size_t k = 0; k < node.inputs.size(); ++k) {
    if (node.inputs[k] >= 0 && nc.input_grad[k]) {
      w += static_cast<double>(local_bytes(node.inputs[k], oc.inputs[k]));
      backward = true;
    }
  }
  if (!backward) return 0;
  for (size_t o = 0; o < node.outputs.size(); ++o)
    if (node.outputs[o] >= 0 && requires_grad_[static_cast<size_t>(node.outputs[o])])
      w += static_cast<double>(local_bytes(node.outputs[o], oc.outputs[o]));
  if ((node.op_type == "Conv" || node.op_type == "ConvTranspose") && node.inputs.size() >= 2 && node.inputs[1] >= 0 &&
      node.outputs[0] >= 0) {
    auto local = [&](int t, const Layout& l) { return max_local_shape(graph_->tensors[static_cast<size_t>(t)].shape, l, mesh_); };
    w += static_cast<double>(conv_backward_workspace(node, local(node.inputs[0], oc.inputs[0]), local(node.inputs[1], oc.inputs[1]),
                                                     local(node.outputs[0], oc.outputs[0]), nc.input_grad[1], options_.kernel_threads));
  }
  return w;
}

double StrategySpace::parameter_workspace(const Variable& v, const VarConfig& c) const {
  const Tensor& t = graph_->tensors[static_cast<size_t>(v.tensor)];
  const Training& tr = options_.training;
  const Layout grad = gradient_layout(c.layout);
  if (grad == c.layout) return 0;  // nothing replicates it: no synchronisation
  if (c.zero < 2) return static_cast<double>(transient_bytes(redistribute(t.shape, tr.gradient_bytes(), grad, c.layout, mesh_), mesh_, true));
  // ZeRO-2: the whole local gradient, from its first addend to the reduce-scatter onto the chunk,
  // and the reduce-scatter's own; then the gather of the updated chunks.
  const int64_t n = numel(max_local_shape(t.shape, c.layout, mesh_));
  const ZeroFlat z = zero_flat(c.layout);
  const auto scatter = static_cast<double>(n * tr.gradient_bytes() + transient_bytes(redistribute({n}, tr.gradient_bytes(), z.gradient, z.chunk, mesh_), mesh_, true));
  const auto gather = static_cast<double>(transient_bytes(redistribute({n}, tr.weight_bytes(), z.chunk, z.whole, mesh_), mesh_));
  return std::max(scatter, gather);
}

}  // namespace tensoropt::planner
