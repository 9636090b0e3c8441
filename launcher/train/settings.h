// What `tensoropt run` was asked to do (its flags), shared by the one-device run
// (launcher/train/one_device.h), the workers (worker.h) and the local launcher
// (launcher/launch/local.h). A plain value.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "launcher/runtime/executor.h"
#include "launcher/runtime/optimizer.h"

namespace tensoropt {

struct TrainSettings {
  std::string model;
  std::optional<int64_t> batch;      // global batch; default: the plan's, 8
  int64_t steps = 10;
  runtime::OptimizerSettings optimizer;
  runtime::LossKind loss = runtime::LossKind::CrossEntropy;
  uint64_t seed = 0;
  std::string device = "cpu";        // a backend of runtime/backend_registry.h
  int threads = 0;                   // 0: kernel_threads() decides
  std::string cluster;               // for the prediction; "" until the CLI resolves it (default_cluster)
  std::optional<std::string> profile;  // a profile database (docs/profile.md) pricing the prediction
  std::vector<std::string> frozen;
  std::optional<std::string> dtype;  // "fp32" or "bf16" (mixed precision); default: the plan's, fp32
  std::optional<std::string> data, labels;   // .npy files
  std::optional<std::string> save, resume;   // checkpoints
  std::optional<std::string> report;         // JSON (docs/runtime.md)
  bool kernel_times = false;                 // time every node's kernels (the lead worker's)
  // A plan file (or strategy file) for one device, and its point (default: the chosen one): its
  // recompute choices run, and its strategy is the one predicted.
  std::optional<std::string> plan;
  std::optional<int> point;
  // run --elastic (docs/runtime.md "Elastic jobs"): the worker count may change while the job
  // runs, between min_gpus and max_gpus, on `tensoropt resize CONTROL --gpus N`.
  struct Elastic {
    bool on = false;
    int min_gpus = 1, max_gpus = 0;  // 0: --gpus
    std::string control;             // the control directory (launcher/elastic/control.h)
    // Where the job's groups meet (--rendezvous file:DIR or redis://HOST:PORT); empty: the file
    // store CONTROL/elastic-store, which machines sharing the control directory share too.
    std::string store;
    // Every this many steps the job writes DIR/checkpoint.onnx, from which it goes on when a
    // worker is lost; 0: never (a lost worker ends the job); -1: automatic (launcher/elastic/worker.h).
    int64_t checkpoint_every = -1;
    // Left with fewer workers than min_gpus, how long the job waits for a resize before it stops.
    double rejoin_seconds = 60;
  } elastic;
};

// Kernel threads of each of `workers` processes on this machine: --threads when given; else
// OMP_NUM_THREADS, per process as PyTorch and torchrun read it (InputError naming it when it is not a
// positive count); else the cores shared evenly among the processes.
int kernel_threads(const TrainSettings& s, int workers = 1);

// Before anything trains: --save names a file that can be written and --resume one that can be
// read; InputError otherwise (the one-device run and the launcher, before any worker starts).
void check_checkpoint_paths(const TrainSettings& s);

}  // namespace tensoropt
