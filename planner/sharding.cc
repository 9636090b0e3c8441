#include "planner/sharding.h"

#include "graph/error.h"

namespace tensoropt::planner {

ShardingTable sharding_table(const StrategySpace& space) {
  ShardingTable table;
  table.mesh_axes = space.mesh().ndim();
  table.variables.reserve(space.variables().size());
  for (const Variable& var : space.variables()) {
    ShardingVariable sv;
    if (var.kind == VarKind::Op) sv.node = var.node;
    else sv.tensor = var.tensor;
    for (const VarConfig& c : var.configs) {
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
      sv.choices.push_back(std::move(choice));
    }
    table.variables.push_back(std::move(sv));
  }
  return table;
}

ShardingPlan sharding_plan(const StrategySpace& space, const std::vector<int>& assignment) {
  TO_CHECK(assignment.size() == space.variables().size());
  return resolve_sharding(sharding_table(space), space.graph(), assignment, "strategy space " + space.mesh().str());
}

}  // namespace tensoropt::planner
