// The sharding data of a strategy space (planner/parallel/sharding_plan.h): what each variable's
// configurations ask of the runtime, read off the space once, so that plan files carry it and the
// runtime never reads the search.
// Thread-safe (reads an immutable space).
#pragma once

#include <vector>

#include "planner/parallel/sharding_plan.h"
#include "planner/space/space.h"

namespace tensoropt::planner {

// Per variable of `space`, per configuration: an op's input and output layouts and recompute
// choice; a parameter's, input's or shared tensor's layout and ZeRO-2 choice.
ShardingTable sharding_table(const StrategySpace& space);

// The plan of one strategy of `space` (one configuration per variable).
ShardingPlan sharding_plan(const StrategySpace& space, const std::vector<int>& assignment);

}  // namespace tensoropt::planner
