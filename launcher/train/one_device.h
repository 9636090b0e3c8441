// `tensoropt run` on one device: import, load or initialise the weights, train for a number of
// steps with the runtime (launcher/runtime/), print one line per step, and set the measured step
// time and peak memory against what the planner predicts for the same one-device strategy
// (docs/runtime.md). With a plan, the point's strategy runs (its recompute choices) and is the one
// predicted. The workers of a group (worker.h) run the same loop (loop.h).
//
// Errors: InputError for everything the user can fix (flags, files, a model op without a kernel),
// raised before the first step where possible; nothing is written half (checkpoints are written
// to FILE.part and renamed).
#pragma once

#include <iosfwd>

#include "launcher/train/settings.h"

namespace tensoropt {

int run_training(const TrainSettings& s, std::ostream& out, std::ostream& err);

}  // namespace tensoropt
