// The key of one op shard in a profile database (docs/profile.md "The file"): what the op computes
// on one device, written so that two shards with the same key cost the same kernel calls.
//   OP|ATTRIBUTES|INPUTS|OUTPUTS|grad MASK
// ATTRIBUTES: name=value in name order joined by ','; INPUTS and OUTPUTS: dtype[shape] joined by
// ';' ('-' for an omitted one), a constant input of at most 8 elements followed by =v,v,...; the
// dtype is the storage dtype (bfloat16 for float tensors under mixed precision); MASK: one digit
// per input, 1 where it takes a gradient, or '-' when none does (no backward is timed).
// Pure functions; thread-safe.
#pragma once

#include <string>

#include "planner/compute_model.h"
#include "planner/training.h"

namespace tensoropt::profiler {

// REQUIRES: work.graph and work.node set (the strategy space sets them).
std::string shard_signature(const planner::ShardWork& work, planner::Precision precision);

// The storage dtype of tensor `t` under `precision`: float tensors are bfloat16 under bf16.
DType storage_dtype(const Tensor& t, planner::Precision precision);

}  // namespace tensoropt::profiler
