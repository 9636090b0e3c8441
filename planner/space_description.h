// A strategy space's variables described for a person writing a strategy by hand
// (`plan --dump-space`, docs/plan-format.md "spaces[]"): per variable what it stands for (node
// name and op type with its output shapes, batch axes, iteration dims and weights; or the
// tensor's shape and batch axis) and, per configuration, in words what each mesh axis does with
// it ("mesh axis 0 (2): splits n (parallel, 3072) = output axis 2, weight 'h.0.mlp.c_fc.weight'
// axis 1"), so that rules (planner/strategy_rules.h) can be written from it.
// The configuration names are not repeated here: describe_variable adds to the object that
// already holds "name" and "configs". Thread-safe (reads an immutable space).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "planner/space/space.h"

namespace tensoropt::planner {

// Adds to `out`: "kind"; for ops "node", "op", "outputs" [{"shape", "batch_axis"}], "dims"
// [{"name", "size", "role"}], "weights" [{"name", "shape", "input"}]; for the others "tensor",
// "shape", "batch_axis" (-1: none); and for every variable "meaning", one line per configuration.
void describe_variable(const StrategySpace& space, const Variable& v, nlohmann::ordered_json& out);

// The line "meaning" holds for configuration k of v.
std::string config_meaning(const StrategySpace& space, const Variable& v, size_t k);

}  // namespace tensoropt::planner
