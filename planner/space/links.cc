// The strategy space's links (space.h "Links"): one per use of a tensor, producer or tensor
// variable -> reader, and the layouts a link's ends give and need.
#include <algorithm>
#include <vector>

#include "planner/space/space.h"

namespace tensoropt::planner {

bool StrategySpace::saves_output(int node, int slot) const {
  const int t = graph_->nodes[static_cast<size_t>(node)].outputs[static_cast<size_t>(slot)];
  return schedule_.nodes[static_cast<size_t>(node)].need_output[static_cast<size_t>(slot)] && schedule_.data_dependent[static_cast<size_t>(t)];
}

void StrategySpace::add_links(const Uses& uses) {
  add_reader_links();
  add_tensor_variable_links(uses);
  linked_.assign(graph_->tensors.size(), false);
  needed_.assign(graph_->tensors.size(), false);
  for (const Link& l : links_) {
    if (l.from_slot >= 0) linked_[static_cast<size_t>(l.tensor)] = true;
    if (l.from_keeps || l.to_keeps) needed_[static_cast<size_t>(l.tensor)] = true;
  }
}

void StrategySpace::add_reader_links() {
  const Graph& g = *graph_;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const Node& node = g.nodes[n];
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      int t = node.inputs[i];
      if (t < 0) continue;
      const Tensor& tensor = g.tensors[static_cast<size_t>(t)];
      Link l;
      l.to = static_cast<int>(n);
      l.to_slot = static_cast<int>(i);
      l.tensor = t;
      // What the reader's backward reads (graph/step_schedule.h): a data-dependent input it keeps,
      // model state it reads again.
      const NodeSchedule& reader = schedule_.nodes[n];
      l.gradient = reader.input_grad[i];
      l.state = !schedule_.data_dependent[static_cast<size_t>(t)];
      l.to_keeps = reader.need_input[i] && !l.state;
      l.to_rereads = reader.need_input[i] && l.state;
      if (tensor_var_[static_cast<size_t>(t)] >= 0) {
        l.from = tensor_var_[static_cast<size_t>(t)];
      } else if (tensor.kind == TensorKind::Activation) {
        l.from = tensor.producer;
      } else {
        continue;  // buffers and constants: charged at the reader
      }
      if (tensor.kind == TensorKind::Activation && l.from == tensor.producer) {
        const Node& p = g.nodes[static_cast<size_t>(tensor.producer)];
        l.from_slot = static_cast<int>(std::find(p.outputs.begin(), p.outputs.end(), t) - p.outputs.begin());
        l.from_keeps = saves_output(tensor.producer, l.from_slot);
      }
      links_.push_back(l);
    }
  }
}

void StrategySpace::add_tensor_variable_links(const Uses& uses) {
  // Producer -> tensor variable links.
  const Graph& g = *graph_;
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    int tv = tensor_var_[t];
    if (tv < 0 || vars_[static_cast<size_t>(tv)].kind != VarKind::Tensor) continue;
    int p = g.tensors[t].producer;
    const Node& pn = g.nodes[static_cast<size_t>(p)];
    Link l;
    l.from = p;
    l.from_slot = static_cast<int>(std::find(pn.outputs.begin(), pn.outputs.end(), static_cast<int>(t)) - pn.outputs.begin());
    l.to = tv;
    l.tensor = static_cast<int>(t);
    l.from_keeps = saves_output(p, l.from_slot);
    for (auto [n, i] : uses[t]) l.gradient = l.gradient || schedule_.nodes[static_cast<size_t>(n)].input_grad[static_cast<size_t>(i)];
    links_.push_back(l);
  }
}

const Layout& StrategySpace::from_layout(const Link& l, int config) const {
  const Variable& v = vars_[static_cast<size_t>(l.from)];
  const VarConfig& c = v.configs[static_cast<size_t>(config)];
  if (v.kind == VarKind::Op) return v.op_configs[static_cast<size_t>(c.op_config)].outputs[static_cast<size_t>(l.from_slot)];
  return c.layout;
}

const Layout& StrategySpace::to_layout(const Link& l, int config) const {
  const Variable& v = vars_[static_cast<size_t>(l.to)];
  const VarConfig& c = v.configs[static_cast<size_t>(config)];
  if (v.kind == VarKind::Op) return v.op_configs[static_cast<size_t>(c.op_config)].inputs[static_cast<size_t>(l.to_slot)];
  return c.layout;
}

bool StrategySpace::regathers(const Link& l, int from_config, int to_config) const {
  const Variable& from = vars_[static_cast<size_t>(l.from)];
  const Variable& to = vars_[static_cast<size_t>(l.to)];
  if (from.kind == VarKind::Op && to.kind == VarKind::Op && recomputes(l.from, from_config) &&
      (l.to_keeps || recomputes(l.to, to_config)))
    return true;  // regenerated in backward, then moved again for its reader
  if (!l.state || to.kind != VarKind::Op) return false;
  if (!(l.to_rereads || recomputes(l.to, to_config) || reruns_[static_cast<size_t>(to.node)])) return false;
  return from.kind == VarKind::Parameter || from.kind == VarKind::Op;
}

}  // namespace tensoropt::planner
