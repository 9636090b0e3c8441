// The training loop both runs share (train.h: one device; worker.h: one worker of a group): step
// after step on the data source's batches, each timed from its batch to its updated weights, with
// the step line and the report's per-step entry; and what is measured from the steps.
// Not thread-safe (one loop per process).
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "launcher/runtime/allocator.h"
#include "launcher/runtime/data.h"
#include "launcher/runtime/kernel.h"

namespace tensoropt {

// One training step on `batch`: forward, loss, backward and the optimizer's update. Returns the loss.
using TrainStep = std::function<double(runtime::Batch batch, const runtime::StepContext& ctx)>;

struct LoopOptions {
  int64_t first = 1, count = 1;  // steps first .. first + count - 1 (the data source's step numbers)
  int64_t batch = 1;             // global batch, for samples/s
  std::ostream* out = nullptr;   // the step lines, where this process prints them
  bool memory_in_report = true;  // the per-step entries carry the allocator's live and peak bytes
  // Seconds this process has spent blocked in collectives so far (empty: no communicator).
  std::function<double()> blocked_clock;
  // run --kernel-times: times every node's kernels, from the second step on (the first pays for
  // first touches, as steady_median leaves it out).
  runtime::KernelTimer* timer = nullptr;
  // Asked after each step (its number, loss and seconds); true ends the loop there (an elastic
  // job's resize).
  std::function<bool(int64_t step, double loss, double seconds)> stop_after;
};

struct LoopResult {
  std::vector<double> seconds;  // per step
  std::vector<double> blocked;  // per step, when there is a blocked_clock
  nlohmann::ordered_json steps = nlohmann::ordered_json::array();  // the report's "steps"
};

// Runs the steps with `ctx` (its step set to each step's number), allocating from `allocator`.
LoopResult run_steps(runtime::DataSource& data, runtime::Allocator& allocator, runtime::StepContext ctx, const TrainStep& step,
                     const LoopOptions& options);

// The median of the steps after the first (which pays for first touches and warms the
// communicator up); of the one step when there is only one. REQUIRES: v is not empty.
double steady_median(const std::vector<double>& v);

}  // namespace tensoropt
