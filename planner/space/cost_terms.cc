// The strategy space's cost terms (space.h "Cost terms"): each variable's configuration (an op,
// a parameter, a tensor variable, a graph output as the loss holds it) and each link's pair of
// configurations, as a Breakdown; the saved activations each one charges (space.h "Saved
// activations").
#include <algorithm>
#include <utility>
#include <vector>

#include "planner/parallel/collectives.h"
#include "planner/space/space.h"

namespace tensoropt::planner {

namespace {

bool has_partial(const Layout& l) {
  return std::any_of(l.placements().begin(), l.placements().end(), [](const Placement& p) { return p.is_partial(); });
}

}  // namespace

Breakdown StrategySpace::loss_terms(int tensor, const Layout& layout) const {
  // The loss reads the output whole on every device of an axis holding partial sums.
  Breakdown b;
  std::vector<Placement> reduced = layout.placements();
  for (auto& p : reduced)
    if (p.is_partial()) p = Placement::replicate();
  if (Layout(reduced) != layout) {
    CommCost c = transition(tensor, layout, Layout(reduced), requires_grad_[static_cast<size_t>(tensor)]);
    add_comm(b, Purpose::Forward, c.forward);
    add_comm(b, Purpose::Backward, c.backward);
  }
  b[Term::Activations] += static_cast<double>(local_bytes(tensor, Layout(reduced)));
  // The runtime sums the loss and its count over every device: one all-reduce of two doubles a
  // step, on the slowest level the mesh spans.
  if (tensor == graph_->outputs.front() && mesh_.size() > 1) {
    int inter = -1;
    for (int a = 0; a < mesh_.ndim(); ++a)
      if (mesh_.axis(a).inter_node) inter = a;
    b[comm_term(Purpose::Forward, StepKind::AllReduce)] +=
        collective_time(StepKind::AllReduce, 16, mesh_.size(), mesh_.axis(inter >= 0 ? inter : 0).link);
  }
  return b;
}

Breakdown StrategySpace::op_terms(const Variable& v, const VarConfig& c) const {
  const Graph& g = *graph_;
  const Node& node = g.nodes[static_cast<size_t>(v.node)];
  const NodeCost& nc = node_costs_[static_cast<size_t>(v.node)];
  const OpConfig& oc = v.op_configs[static_cast<size_t>(c.op_config)];
  Breakdown b;
  double parts = 1;
  for (size_t a = 0; a < oc.axis_dim.size(); ++a)
    if (oc.axis_dim[a] >= 0) parts *= mesh_.axis(static_cast<int>(a)).size;

  ShardWork w;
  w.graph = &g;
  w.node = &node;
  w.input_grad = nc.input_grad;
  w.tensor_core = is_tensor_core_op(node.op_type);
  w.fwd_flops = nc.fwd_flops / parts;
  w.bwd_flops = nc.bwd_flops / parts;
  w.has_backward = std::any_of(nc.input_grad.begin(), nc.input_grad.end(), [](bool x) { return x; });
  double local_io = 0;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    int t = node.inputs[i];
    if (t < 0) {
      w.local_inputs.emplace_back();
      continue;
    }
    const Tensor& tensor = g.tensors[static_cast<size_t>(t)];
    w.local_inputs.push_back(max_local_shape(tensor.shape, oc.inputs[i], mesh_));
    double bytes = static_cast<double>(local_bytes(t, oc.inputs[i]));
    local_io += bytes;
    if (tensor.kind == TensorKind::Buffer) b[Term::Buffers] += bytes;
    if (constant_reader_[static_cast<size_t>(t)] == std::pair<int, int>{v.node, static_cast<int>(i)}) {
      b[Term::Buffers] += static_cast<double>(local_bytes(t, Layout::replicated(mesh_.ndim())));
    }
  }
  for (size_t o = 0; o < node.outputs.size(); ++o) {
    const int t = node.outputs[o];
    w.local_outputs.push_back(t < 0 ? Shape{} : max_local_shape(g.tensors[static_cast<size_t>(t)].shape, oc.outputs[o], mesh_));
    if (t >= 0) local_io += static_cast<double>(local_bytes(t, oc.outputs[o]));
  }
  // Global bytes: each sum fits in int64 alone, not always together.
  double global_io = static_cast<double>(nc.bytes.fwd_read) + static_cast<double>(nc.bytes.fwd_write);
  w.fwd_bytes = local_io;
  double global_bwd = static_cast<double>(nc.bytes.bwd_read) + static_cast<double>(nc.bytes.bwd_write);
  w.bwd_bytes = global_io > 0 ? global_bwd * local_io / global_io : 0;
  OpTime time = compute_->op_time(w);
  b[Term::ComputeForward] = time.forward;
  b[Term::ComputeBackward] = time.backward;
  if (c.recompute || reruns_[static_cast<size_t>(v.node)]) b[Term::Recompute] = time.forward;

  if (!c.recompute) {
    for (const Saved& s : nc.saved) {
      if (s.tensor < 0) {
        b[Term::Activations] += static_cast<double>(s.bytes) / parts;
        continue;
      }
      // A kept input is charged at its link; a kept output at its links, or here if it has none.
      auto out = std::find(node.outputs.begin(), node.outputs.end(), s.tensor);
      bool is_input = std::find(node.inputs.begin(), node.inputs.end(), s.tensor) != node.inputs.end();
      if (out == node.outputs.end()) {
        if (!is_input) {
          const Tensor& kept = g.tensors[static_cast<size_t>(s.tensor)];
          b[Term::Activations] += static_cast<double>(kept.elements() * options_.training.element_bytes(kept)) / parts;
        }
        continue;
      }
      if (!linked_[static_cast<size_t>(s.tensor)] && !is_output_[static_cast<size_t>(s.tensor)])
        b[Term::Activations] += static_cast<double>(local_bytes(s.tensor, oc.outputs[static_cast<size_t>(out - node.outputs.begin())]));
    }
  }
  // Graph outputs not read by any op: held by the loss (once, covering the producer's own keep).
  for (size_t o = 0; o < node.outputs.size(); ++o) {
    int t = node.outputs[o];
    if (t >= 0 && is_output_[static_cast<size_t>(t)] && tensor_var_[static_cast<size_t>(t)] < 0) b += loss_terms(t, oc.outputs[o]);
  }
  return b;
}

Breakdown StrategySpace::parameter_terms(const Variable& v, const VarConfig& c) const {
  const Tensor& t = graph_->tensors[static_cast<size_t>(v.tensor)];
  const Training& tr = options_.training;
  Breakdown b;
  double elements = static_cast<double>(numel(max_local_shape(t.shape, c.layout, mesh_)));
  int replicas = 1;
  for (int a = 0; a < mesh_.ndim(); ++a)
    if (c.layout[a].is_replicate()) replicas *= mesh_.axis(a).size;
  double grad_div = c.zero >= 2 ? replicas : 1;
  double state_div = c.zero >= 1 ? replicas : 1;
  b[Term::Weights] = elements * tr.weight_bytes();
  b[Term::Gradients] = elements * tr.gradient_bytes() / grad_div;
  b[Term::OptimizerState] = elements * tr.optimizer_state_bytes() / state_div;
  double updated = elements / state_div;
  b[Term::OptimizerStep] = compute_->optimizer_time(updated, tr);
  if (replicas > 1) {
    Layout grad = gradient_layout(c.layout);
    if (c.zero == 0) {
      add_plan(b, Purpose::Gradient, redistribute(t.shape, tr.gradient_bytes(), grad, c.layout, mesh_));
    } else {
      // ZeRO shards the flat gradient buffer, as DeepSpeed does: each all-reduce of plain data
      // parallelism becomes a reduce-scatter of the gradient and, after the sharded update, an
      // all-gather of the updated weights, on the same axis and of the same bytes (weights and
      // gradients have one element size, Training). The runtime runs them per parameter, not in
      // buckets (launcher/runtime/sharded_executor.h), so each pays its whole latency: ZeRO-2
      // moves the bytes data parallelism moves, in more messages.
      RedistributePlan zero = redistribute(t.shape, tr.gradient_bytes(), grad, c.layout, mesh_);
      std::vector<Step> steps;
      for (const Step& s : zero.steps) {
        if (s.kind != StepKind::AllReduce) {
          steps.push_back(s);
          continue;
        }
        Step scatter = s;
        scatter.kind = StepKind::ReduceScatter;
        scatter.bytes_out = s.bytes_in / s.group_size;
        Step gather = s;
        gather.kind = StepKind::AllGather;
        gather.bytes_in = scatter.bytes_out;
        steps.push_back(scatter);
        steps.push_back(gather);
      }
      zero.steps = std::move(steps);
      add_plan(b, Purpose::Gradient, zero, /*bucketed=*/false);
    }
  }
  return b;
}

Breakdown StrategySpace::tensor_terms(const Variable& v, const VarConfig& c) const {
  Breakdown b;
  bool needed = needed_[static_cast<size_t>(v.tensor)];
  bool partial = has_partial(c.layout);
  if (is_output_[static_cast<size_t>(v.tensor)]) {
    b += loss_terms(v.tensor, c.layout);  // the loss holds the reduced copy; a partial one is another
    if (needed && partial) b[Term::Activations] += static_cast<double>(local_bytes(v.tensor, c.layout));
  } else if (needed) {
    b[Term::Activations] += static_cast<double>(local_bytes(v.tensor, c.layout));
  }
  return b;
}

Breakdown StrategySpace::variable_terms(int var, int config) const {
  return var_terms_.at(static_cast<size_t>(var)).at(static_cast<size_t>(config));
}

Breakdown StrategySpace::link_terms(int link, int from_config, int to_config) const {
  Breakdown b;
  add_link_terms(b, link, from_config, to_config);
  return b;
}

void StrategySpace::add_link_terms(Breakdown& b, int link, int from_config, int to_config) const {
  const int32_t ci = comm_link_[link_pair(static_cast<size_t>(link), from_config, to_config)];
  const bool same = ci < 0;  // the two layouts are equal
  CommCost comm;
  if (!same) {
    comm = comm_values_[static_cast<size_t>(ci)];
    add_comm(b, Purpose::Forward, comm.forward);
    add_comm(b, Purpose::Backward, comm.backward);
  }
  const auto [at_from, at_to] = link_held_[link_pair(static_cast<size_t>(link), from_config, to_config)];
  b[Term::Activations] += at_from + at_to;
  // Moved again in backward (regathers(), charged in comm.backward, its copy in the link's
  // backward transient): a tensor its producer's recompute regenerates, and a parameter gathered
  // from its shards (ZeRO-3 / FSDP style) or a tensor computed from weights alone where the
  // reader's backward reads it again; neither is held from forward. A local slice of a replicated
  // parameter is a view.
}

std::pair<double, double> StrategySpace::link_activations(int link, int from_config, int to_config, bool same) const {
  const Link& l = links_[static_cast<size_t>(link)];
  const Variable& from = vars_[static_cast<size_t>(l.from)];
  const Variable& to = vars_[static_cast<size_t>(l.to)];
  const bool to_needs = l.to_keeps || recomputes(l.to, to_config);
  const double from_bytes = link_from_bytes_[static_cast<size_t>(link)][static_cast<size_t>(from_config)];
  const double to_bytes = link_to_bytes_[static_cast<size_t>(link)][static_cast<size_t>(to_config)];
  if (from.kind == VarKind::Op && to.kind == VarKind::Op) {
    // The schedule's keep rules (graph/step_schedule.h), for this pair of configurations; one copy
    // when writer and reader keep the same layout.
    const bool producer_recomputes = recomputes(l.from, from_config);
    const bool writer_keeps = tensoropt::keeps_output(l.from_keeps, producer_recomputes);
    const bool reader_keeps = tensoropt::keeps_input(l.to_keeps, recomputes(l.to, to_config), producer_recomputes);
    return {writer_keeps ? from_bytes : 0, reader_keeps && !(writer_keeps && same) ? to_bytes : 0};
  }
  if (from.kind == VarKind::Op) return {l.from_keeps && !same ? from_bytes : 0, 0};  // -> tensor variable
  if (from.kind == VarKind::Parameter) return {0, 0};
  // Input or tensor variable -> reader.
  if (to_needs && !same) return {0, to_bytes};
  if (to_needs && from.kind == VarKind::Tensor && !needed_[static_cast<size_t>(l.tensor)] &&
      !(is_output_[static_cast<size_t>(l.tensor)] && !has_partial(to_layout(l, to_config)))) {
    // A recomputing reader needs the variable's own copy, which nobody else keeps (a graph
    // output's is the loss's, unless partial): charged here, once per such reader and slot (two
    // of them in the same layout are counted twice: conservative).
    return {0, to_bytes};
  }
  return {0, 0};
}

}  // namespace tensoropt::planner
