// `evaluate --by-layer` / `--by-node` output: planner/explain.h's rows as a table or JSON, with
// totals that are evaluate's time and memory (docs/cli.md "evaluate --by-layer").
#pragma once

#include <ostream>
#include <vector>

#include "planner/explain.h"

namespace tensoropt::cli {

void print_explanation_text(const planner::StrategySpace& space, const std::vector<int>& assignment,
                            const planner::Explanation& e, bool by_node, std::ostream& out);
void print_explanation_json(const planner::StrategySpace& space, const std::vector<int>& assignment,
                            const planner::Explanation& e, bool by_node, std::ostream& out);

}  // namespace tensoropt::cli
