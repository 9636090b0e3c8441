// What the one-device run (train.h) and the workers (worker.h) share: human units, the cluster a
// CPU worker is costed on, and the step line.
#pragma once

#include <cstdint>
#include <string>

#include "planner/parallel/cluster.h"

namespace tensoropt {

std::string human_bytes(double b);    // "1.25 GiB", "512 B"
std::string human_seconds(double s);  // "36.9 ms", "1.250 s"

// The cluster preset (or .json) `name`; for the `cpu` preset, a worker with `threads` threads is
// costed as that many of its cores (and up to 4 cores' memory bandwidth).
planner::Cluster worker_cluster(const std::string& name, int threads);

// "step 3     loss 4.16337    time 125.1 ms        32.0 samples/s   memory 439.92 KiB (peak 817.92 KiB)"
std::string step_line(int64_t step, double loss, double seconds, int64_t batch, double live_bytes, double peak_bytes);

}  // namespace tensoropt
