#include "planner/sharding.h"

#include "graph/error.h"

namespace tensoropt::planner {

namespace {

// What configuration c of `var` asks of the runtime.
ShardingChoice choice_of(const Variable& var, const VarConfig& c) {
  ShardingChoice choice;
  if (var.kind == VarKind::Op) {
    const OpConfig& oc = var.op_configs.at(static_cast<size_t>(c.op_config));
    choice.in = oc.inputs;
    choice.out = oc.outputs;
    choice.recompute = c.recompute;
  } else {
    choice.layout = c.layout;
    choice.zero = var.kind == VarKind::Parameter && c.zero == 2;
  }
  return choice;
}

// `var`'s node or tensor, with no choices yet.
ShardingVariable sharding_variable(const Variable& var) {
  ShardingVariable sv;
  if (var.kind == VarKind::Op) sv.node = var.node;
  else sv.tensor = var.tensor;
  return sv;
}

}  // namespace

ShardingTable sharding_table(const StrategySpace& space) {
  ShardingTable table;
  table.mesh_axes = space.mesh().ndim();
  table.variables.reserve(space.variables().size());
  for (const Variable& var : space.variables()) {
    ShardingVariable sv = sharding_variable(var);
    for (const VarConfig& c : var.configs) sv.choices.push_back(choice_of(var, c));
    table.variables.push_back(std::move(sv));
  }
  return table;
}

ShardingPlan sharding_plan(const StrategySpace& space, const std::vector<int>& assignment) {
  TO_CHECK(assignment.size() == space.variables().size());
  // A table of the chosen configurations alone, each its variable's configuration 0.
  ShardingTable chosen;
  chosen.mesh_axes = space.mesh().ndim();
  for (size_t v = 0; v < assignment.size(); ++v) {
    const Variable& var = space.variables()[v];
    ShardingVariable sv = sharding_variable(var);
    sv.choices.push_back(choice_of(var, var.configs.at(static_cast<size_t>(assignment[v]))));
    chosen.variables.push_back(std::move(sv));
  }
  return resolve_sharding(chosen, space.graph(), std::vector<int>(assignment.size(), 0), "strategy space " + space.mesh().str());
}

}  // namespace tensoropt::planner
