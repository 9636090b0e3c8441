// What the executor spends around its kernels (docs/profile.md "What is timed"): a few one-device
// training steps of the model (forward, loss, backward; no optimizer) with the kernel timer on;
// the step's time less its kernels' time, over the kernel calls, is the time each call costs
// beyond its kernel (values and gradients kept and freed, gradients summed where a tensor has
// several readers, the loss). The median over the steps after the first: `steps` of them, or as
// many as half a second holds (at most 50) when steps are short.
// Errors: InputError for a model the runtime refuses (with cross-entropy and with MSE alike);
// OutOfMemory. Not thread-safe.
#pragma once

#include <optional>
#include <string>

#include "graph/ir.h"
#include "launcher/runtime/backend.h"

namespace tensoropt::profiler {

struct StepOverhead {
  double per_call_s = 0;
  int steps = 0;
};

// `model_path`: where the weights are (absent ones are initialised); nullopt when the runtime
// trains the model with neither loss.
std::optional<StepOverhead> time_step_overhead(const Graph& g, const std::string& model_path, runtime::Backend& backend, int threads,
                                               bool bf16, int steps);

}  // namespace tensoropt::profiler
