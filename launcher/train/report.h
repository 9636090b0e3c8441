// What the one-device run (train.h) and the workers (worker.h) share: human units, the cluster a
// CPU worker is costed on, the step line, and the closing table of measured against predicted.
#pragma once

#include <array>
#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "graph/units.h"  // bytes_human
#include "launcher/runtime/allocator.h"
#include "launcher/runtime/backend.h"
#include "launcher/train/settings.h"
#include "planner/parallel/cluster.h"
#include "planner/space/space.h"

namespace tensoropt {

std::string human_seconds(double s);  // "36.9 ms", "1.250 s"

// The cluster preset (or .json) `name`; for the `cpu` preset, a worker with `threads` threads is
// costed as that many of its cores (and up to 4 cores' memory bandwidth).
planner::Cluster worker_cluster(const std::string& name, int threads);

// "step 3     loss 4.16337    time 125.1 ms        32.0 samples/s   memory 439.92 KiB (peak 817.92 KiB)"
std::string step_line(int64_t step, double loss, double seconds, int64_t batch, double live_bytes, double peak_bytes);

// "model    m.onnx, batch 4, adam lr 0.001, cross-entropy, fp32\n": what a run trains, as both
// runs print it first.
std::string model_line(const TrainSettings& s, int64_t batch, bool bf16);

// The report's opening objects, as both runs write them: "model", then "device" (the backend,
// `workers` for a group's worker (0: the one-device run), threads, the backend's facts, the cluster predicted on)
// and "optimizer" (docs/runtime.md "--report JSON"); the caller adds "strategy" between.
nlohmann::ordered_json report_model(const TrainSettings& s, int64_t batch);
nlohmann::ordered_json report_device(const runtime::Backend& backend, int workers, int threads, const std::string& cluster);
nlohmann::ordered_json report_optimizer(const TrainSettings& s);

// One worker's figures for the closing table: its median step, its allocator's peak and each
// memory kind's bytes at the moment of that peak (MemoryStats::at_peak).
struct Measured {
  double time = 0, peak = 0;
  // Seconds a step spent blocked in collectives (the most of any worker's median); negative when
  // the run has no communicator (one device): then no collectives row.
  double collectives = -1;
  std::array<double, runtime::kMemoryKinds> at_peak{};
};

// Prints "predicted / measured / measured/predicted" rows: time per step, the collectives (the
// plan's communication terms, which add up without overlap, against the time blocked in them,
// and each as a share of its step) when measured, peak memory, then the
// memory kinds (parameters, gradients, optimizer state, activations, data inputs, buffers,
// transients against the planner's workspace term). Returns the report's "predicted" and
// "measured" objects (time, peak, memory by kind; docs/runtime.md "--report JSON").
struct ReportPair {
  nlohmann::ordered_json predicted, measured;
};
ReportPair print_against_predicted(std::ostream& out, const planner::Cost& predicted, const planner::Breakdown& breakdown,
                                   const Measured& measured);

// The report's closing objects, "dtype", "steps", "predicted" and "measured", added to `report`,
// which is then written to `path` whole (write_report).
// run --kernel-times: the timer's rows per step (its steps: every step but the first) as a table of
// the largest first, each with its share of the measured step time; returns them as the report's
// "kernel_times" ([{"kernels", "calls_per_step", "ms_per_step", "share_of_step"}, ...]).
nlohmann::ordered_json print_kernel_times(std::ostream& out, runtime::KernelTimer& timer, const std::vector<double>& step_seconds);

void finish_report(nlohmann::ordered_json& report, std::string_view dtype, const nlohmann::ordered_json& steps, const ReportPair& against,
                   const std::string& path);

// Writes `report` to `path` whole or not at all (a temporary beside it, renamed). InputError when
// it cannot be written.
void write_report(const std::string& path, const nlohmann::ordered_json& report);

}  // namespace tensoropt
