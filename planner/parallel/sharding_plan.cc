#include "planner/parallel/sharding_plan.h"

#include <string>

#include "graph/error.h"

namespace tensoropt::planner {
namespace {

// InputError unless `l` has one placement per mesh axis and shards only axes tensor t has.
void check_fits(const Layout& l, const Graph& g, int t, int mesh_axes, const std::string& where) {
  if (l.size() != mesh_axes) {
    throw InputError(where + ": layout " + l.str() + " has " + std::to_string(l.size()) + " placements on a mesh of " +
                     std::to_string(mesh_axes) + " axes");
  }
  if (t < 0) return;
  const Tensor& tensor = g.tensors[static_cast<size_t>(t)];
  for (const Placement& p : l.placements()) {
    if (p.is_shard() && p.dim() >= static_cast<int>(tensor.shape.size())) {
      throw InputError(where + ": layout " + l.str() + " splits axis " + std::to_string(p.dim()) + " of tensor '" + tensor.name +
                       "', which has " + std::to_string(tensor.shape.size()));
    }
  }
}

void apply_op(ShardingPlan& s, const Graph& g, int node, const ShardingChoice& c, const std::string& where) {
  const Node& n = g.nodes[static_cast<size_t>(node)];
  if (c.in.size() != n.inputs.size() || c.out.size() != n.outputs.size()) {
    throw InputError(where + ": node " + n.label() + " has " + std::to_string(n.inputs.size()) + " inputs and " +
                     std::to_string(n.outputs.size()) + " outputs, its configuration " + std::to_string(c.in.size()) + " and " +
                     std::to_string(c.out.size()));
  }
  for (size_t q = 0; q < c.in.size(); ++q) check_fits(c.in[q], g, n.inputs[q], s.mesh_axes, where);
  for (size_t o = 0; o < c.out.size(); ++o) check_fits(c.out[o], g, n.outputs[o], s.mesh_axes, where);
  s.in[static_cast<size_t>(node)] = c.in;
  s.out[static_cast<size_t>(node)] = c.out;
  s.recompute[static_cast<size_t>(node)] = c.recompute;
}

}  // namespace

ShardingPlan resolve_sharding(const ShardingTable& table, const Graph& g, const std::vector<int>& configs, const std::string& where) {
  if (configs.size() != table.variables.size()) {
    throw InputError(where + ": " + std::to_string(configs.size()) + " configurations for " + std::to_string(table.variables.size()) +
                     " variables");
  }
  const int axes = table.mesh_axes;
  ShardingPlan s;
  s.mesh_axes = axes;
  s.in.resize(g.nodes.size());
  s.out.resize(g.nodes.size());
  s.home.assign(g.tensors.size(), Layout::replicated(axes));
  s.zero.assign(g.tensors.size(), false);
  s.recompute.assign(g.nodes.size(), false);
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    s.in[n].assign(g.nodes[n].inputs.size(), Layout::replicated(axes));
    s.out[n].assign(g.nodes[n].outputs.size(), Layout::replicated(axes));
  }
  std::vector<bool> has_variable(g.tensors.size(), false);
  for (size_t v = 0; v < configs.size(); ++v) {
    const ShardingVariable& var = table.variables[v];
    if (configs[v] < 0 || configs[v] >= static_cast<int>(var.choices.size())) {
      throw InputError(where + ": configuration " + std::to_string(configs[v]) + " of variable " + std::to_string(v) + " is out of range");
    }
    const ShardingChoice& c = var.choices[static_cast<size_t>(configs[v])];
    if (var.node >= 0 && var.node < static_cast<int>(g.nodes.size())) {
      apply_op(s, g, var.node, c, where);
    } else if (var.node < 0 && var.tensor >= 0 && var.tensor < static_cast<int>(g.tensors.size())) {
      check_fits(c.layout, g, var.tensor, axes, where);
      s.home[static_cast<size_t>(var.tensor)] = c.layout;
      s.zero[static_cast<size_t>(var.tensor)] = c.zero;
      has_variable[static_cast<size_t>(var.tensor)] = true;
    } else {
      throw InputError(where + ": variable " + std::to_string(v) + " names no node or tensor of the model");
    }
  }
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const Node& node = g.nodes[n];
    for (size_t o = 0; o < node.outputs.size(); ++o) {
      const int t = node.outputs[o];
      if (t >= 0 && !has_variable[static_cast<size_t>(t)]) s.home[static_cast<size_t>(t)] = s.out[n][o];
    }
  }
  return s;
}

}  // namespace tensoropt::planner
