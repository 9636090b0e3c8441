// The strategy space's variables (space.h "Variables"): one per op, parameter, data input and
// multi-use activation, each with its configurations, and their unique names.
#include <algorithm>
#include <string>

#include "graph/error.h"
#include "planner/space/space.h"

namespace tensoropt::planner {

int Variable::find_config(const std::string& config_name) const {
  for (size_t k = 0; k < configs.size(); ++k)
    if (configs[k].name == config_name) return static_cast<int>(k);
  return -1;
}

namespace {

void add_unique(std::vector<Layout>& layouts, const Layout& l) {
  if (std::find(layouts.begin(), layouts.end(), l) == layouts.end()) layouts.push_back(l);
}

}  // namespace

void StrategySpace::add_op_variables(const Uses& uses) {
  for (size_t n = 0; n < graph_->nodes.size(); ++n) vars_.push_back(op_variable(n, uses));
}

// Its configurations come later (add_op_configs), once the links say whether it may recompute.
Variable StrategySpace::op_variable(size_t n, const Uses& uses) const {
  const Graph& g = *graph_;
  const Node& node = g.nodes[n];
  Variable v;
  v.kind = VarKind::Op;
  v.node = static_cast<int>(n);
  // Appended piece by piece: GCC 12 at -O3 reports a false -Wrestrict on "literal" + std::string&&.
  v.name = "op:";
  if (node.name.empty()) v.name.append("#").append(std::to_string(n));
  else v.name.append(node.name);
  v.space = op_space(OpView(g, node));
  if (v.space.inputs.size() != node.inputs.size() || v.space.outputs.size() != node.outputs.size())
    throw InternalError(node.label() + ": iteration space has " + std::to_string(v.space.inputs.size()) + " inputs, " + std::to_string(v.space.outputs.size()) + " outputs");
  std::vector<bool> used(node.outputs.size(), false);
  for (size_t o = 0; o < node.outputs.size(); ++o) {
    int t = node.outputs[o];
    used[o] = t >= 0 && (!uses[static_cast<size_t>(t)].empty() || is_output_[static_cast<size_t>(t)]);
  }
  v.op_configs = enumerate_configs(v.space, mesh_, used);
  std::vector<Shape> in_shapes, out_shapes;
  for (int t : node.inputs) in_shapes.push_back(t >= 0 ? g.tensors[static_cast<size_t>(t)].shape : Shape{});
  for (int t : node.outputs) out_shapes.push_back(t >= 0 ? g.tensors[static_cast<size_t>(t)].shape : Shape{});
  std::erase_if(v.op_configs, [&](const OpConfig& c) { return !whole_shards(c, in_shapes, out_shapes, mesh_); });
  TO_CHECK(!v.op_configs.empty());
  return v;
}

void StrategySpace::add_tensor_variables(const Uses& uses) {
  const Graph& g = *graph_;
  tensor_var_.assign(g.tensors.size(), -1);
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    const Tensor& tensor = g.tensors[t];
    const Reads& u = uses[t];
    Variable v;
    if (tensor.kind == TensorKind::Parameter && !u.empty()) {
      v = parameter_variable(t, u);
    } else if (tensor.kind == TensorKind::Input && !u.empty()) {
      v = input_variable(t, u);
    } else if (tensor.kind == TensorKind::Activation && u.size() + (is_output_[t] ? 1 : 0) > 1) {
      v = tensor_variable(t, u);
    } else {
      continue;
    }
    tensor_var_[t] = static_cast<int>(vars_.size());
    vars_.push_back(std::move(v));
  }
}

Variable StrategySpace::parameter_variable(size_t t, const Reads& reads) const {
  const Tensor& tensor = graph_->tensors[t];
  std::vector<Layout> layouts;
  add_reader_layouts(layouts, reads, /*source=*/true);
  if (numel(tensor.shape) < options_.param_persistence) {
    layouts.assign(1, Layout::replicated(mesh_.ndim()));
  }
  Variable v;
  v.kind = VarKind::Parameter;
  v.tensor = static_cast<int>(t);
  v.name = "param:" + tensor.name;
  v.configs = layout_configs(layouts, options_.zero && mesh_.size() > 1 && !tensor.shape.empty());
  return v;
}

Variable StrategySpace::input_variable(size_t t, const Reads& reads) const {
  std::vector<Layout> layouts;
  add_reader_layouts(layouts, reads, /*source=*/true);
  Variable v;
  v.kind = VarKind::Input;
  v.tensor = static_cast<int>(t);
  v.name = "input:" + graph_->tensors[t].name;
  v.configs = layout_configs(layouts, /*zero=*/false);
  return v;
}

Variable StrategySpace::tensor_variable(size_t t, const Reads& reads) const {
  const Tensor& tensor = graph_->tensors[t];
  std::vector<Layout> layouts;
  const Node& p = graph_->nodes[static_cast<size_t>(tensor.producer)];
  int slot = static_cast<int>(std::find(p.outputs.begin(), p.outputs.end(), static_cast<int>(t)) - p.outputs.begin());
  for (const auto& c : vars_[static_cast<size_t>(tensor.producer)].op_configs) add_unique(layouts, c.outputs[static_cast<size_t>(slot)]);
  add_reader_layouts(layouts, reads, /*source=*/false);
  Variable v;
  v.kind = VarKind::Tensor;
  v.tensor = static_cast<int>(t);
  v.name = "tensor:" + tensor.name;
  v.configs = layout_configs(layouts, /*zero=*/false);
  return v;
}

void StrategySpace::add_reader_layouts(std::vector<Layout>& layouts, const Reads& reads, bool source) const {
  // A parameter or data input is stored whole or split, never as partial sums: a reader that
  // needs its share of the sum (a bias added after a split reduction) takes it from a replicated
  // copy (LocalPartial, free).
  for (auto [n, i] : reads) {
    for (const auto& c : vars_[static_cast<size_t>(n)].op_configs) {
      std::vector<Placement> p = c.inputs[static_cast<size_t>(i)].placements();
      if (source) std::replace_if(p.begin(), p.end(), [](const Placement& x) { return x.is_partial(); }, Placement::replicate());
      add_unique(layouts, Layout(p));
    }
  }
}

std::vector<VarConfig> StrategySpace::layout_configs(const std::vector<Layout>& layouts, bool zero_offered) const {
  std::vector<VarConfig> configs;
  for (const Layout& l : layouts) {
    bool replicated_axis = std::any_of(l.placements().begin(), l.placements().end(),
                                       [](const Placement& p) { return p.is_replicate(); });
    // ZeRO-1 is not offered: under this model it moves what ZeRO-2 moves and keeps more.
    bool zero = zero_offered && replicated_axis;
    for (int z : zero ? std::vector<int>{0, 2} : std::vector<int>{0}) {
      VarConfig c;
      c.layout = l;
      c.zero = z;
      c.name = l.str() + (z ? " zero-" + std::to_string(z) : "");
      configs.push_back(c);
    }
  }
  return configs;
}

void StrategySpace::add_op_configs() {
  // Recompute: ops whose outputs all go straight to op readers (selective: and that keep something
  // themselves; all: outputs nobody reads allowed too, except BatchNormalization's running
  // statistics, which a second forward would update again).
  const Graph& g = *graph_;
  std::vector<int> direct_readers(g.tensors.size(), 0);
  for (const Link& l : links_)
    if (l.from_slot >= 0 && vars_[static_cast<size_t>(l.to)].kind == VarKind::Op) ++direct_readers[static_cast<size_t>(l.tensor)];
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    Variable& v = vars_[n];
    bool keeps = options_.recompute_all, direct = true;
    for (const Saved& s : node_costs_[n].saved) {
      bool is_output = std::find(g.nodes[n].outputs.begin(), g.nodes[n].outputs.end(), s.tensor) != g.nodes[n].outputs.end();
      keeps = keeps || s.tensor < 0 || is_output;
    }
    const bool side_effects = g.nodes[n].op_type == "BatchNormalization";
    for (int t : g.nodes[n].outputs) {
      if (t < 0) continue;
      const size_t ut = static_cast<size_t>(t);
      const bool unused = !is_output_[ut] && tensor_var_[ut] < 0 && direct_readers[ut] == 0;
      if (options_.recompute_all && unused && !side_effects) continue;
      direct = direct && !is_output_[ut] && tensor_var_[ut] < 0 && direct_readers[ut] > 0;
    }
    v.may_recompute = options_.recompute && keeps && direct;
    for (size_t k = 0; k < v.op_configs.size(); ++k) {
      for (int r = 0; r < (v.may_recompute ? 2 : 1); ++r) {
        VarConfig c;
        c.op_config = static_cast<int>(k);
        c.recompute = r == 1;
        c.name = v.op_configs[k].str(v.space) + (r ? " recompute" : "");
        v.configs.push_back(c);
      }
    }
  }
}

void StrategySpace::name_variables() {
  for (size_t i = 0; i < vars_.size(); ++i) {
    if (!by_name_.emplace(vars_[i].name, static_cast<int>(i)).second) {
      // Duplicate node names: disambiguate by index, keeping names unique and stable.
      vars_[i].name.append("#").append(std::to_string(i));
      by_name_.emplace(vars_[i].name, static_cast<int>(i));
    }
  }
}

int StrategySpace::find_variable(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? -1 : it->second;
}

bool StrategySpace::recomputes(int var, int config) const {
  const Variable& v = vars_[static_cast<size_t>(var)];
  return v.kind == VarKind::Op && v.configs[static_cast<size_t>(config)].recompute;
}

}  // namespace tensoropt::planner
