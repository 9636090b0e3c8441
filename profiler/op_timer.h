// Timing one op shard with the runtime's own kernels (docs/profile.md "What is timed"): the op of
// a ShardWork (the strategy space's description of what one device does for one op under one
// configuration) runs on arrays of its local shapes, forward as the executors call it
// (runtime::forward_call) and backward as they call it (saved tensors, output gradients, the input
// gradients it writes allocated). What is timed is the kernel alone, on the backend's kernel timer
// (the host clock on CPU, whose kernels return when done; CUDA events on the GPU's stream), as
// `run --kernel-times` times it: what the executor does around it is the executor's figure
// (step_timer.h). Each direction: 2 warm-up calls, then `repeats` calls; the medians.
// Inputs: floats uniform in [0.5, 1.5) from a fixed seed; integers and bools 0 (valid on every
// axis), constants their values where the shard is the whole constant. The device at mesh
// coordinate 0: every shard offset is 0.
// Errors: whatever the kernel throws (InputError for a kernel that refuses the op); OutOfMemory.
// Not thread-safe (the backend is not).
#pragma once

#include "launcher/runtime/backend.h"
#include "planner/compute_model.h"
#include "planner/training.h"

namespace tensoropt::profiler {

struct OpTiming {
  double forward_s = 0, backward_s = 0;  // backward_s: 0 without backward
};

OpTiming time_op_shard(const planner::ShardWork& work, planner::Precision precision, runtime::Backend& backend, int threads,
                       int repeats);

}  // namespace tensoropt::profiler
