// A ShardingTable (planner/parallel/sharding_plan.h) in a plan file's `spaces[]` entry
// (docs/plan-format.md "Sharding"): the space's distinct layouts once, as "layouts", and per
// variable its node or tensor index and, per configuration, what it asks of the runtime as indices
// into "layouts":
//   op variable     {"node": n, "sharding": [[[in...], [out...], recompute], ...]}
//   other variables {"tensor": t, "sharding": [[layout, zero], ...]}        (recompute, zero: 0 or 1)
// Errors: InputError naming `where` and the field for anything malformed.
// Thread-safe.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "planner/parallel/sharding_plan.h"

namespace tensoropt::planner {

// Adds "layouts" to `space` and "node"/"tensor" and "sharding" to each of space["variables"]
// (one per variable of `table`, in order; REQUIRES: they are there).
void add_sharding_json(nlohmann::ordered_json& space, const ShardingTable& table);

// The table add_sharding_json wrote into `space`, or nullopt when it holds none (a plan file
// written before plans carried their sharding).
std::optional<ShardingTable> read_sharding_json(const nlohmann::ordered_json& space, const std::string& where);

}  // namespace tensoropt::planner
