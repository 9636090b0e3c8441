#include "launcher/train/one_device.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <thread>

#include <malloc.h>

#include <nlohmann/json.hpp>

#include "graph/error.h"
#include "graph/import.h"
#include "launcher/runtime/checkpoint.h"
#include "launcher/runtime/backend_registry.h"
#include "launcher/runtime/data.h"
#include "launcher/runtime/weights.h"
#include "launcher/train/loop.h"
#include "launcher/train/prediction.h"
#include "launcher/train/report.h"
#include "planner/compute_model.h"
#include "planner/parallel/cluster.h"
#include "planner/plan_file.h"
#include "planner/space/space.h"

namespace tensoropt {
namespace {

using runtime::MemoryKind;

// The planner's cost of the strategy that runs: a plan's point, or else the one strategy a single
// device has (every op replicated, nothing recomputed). A CPU worker with T threads is costed as
// T of the preset's cores.
struct Prediction {
  double time = 0, memory = 0;
  planner::Breakdown breakdown;
  std::vector<bool> recompute;  // per node
  std::string where;            // the plan point, or empty
};

Prediction predict(const Graph& g, const TrainSettings& s, const profiler::ProfileCosts& costs, planner::Precision precision,
                   int threads, const planner::StoredStrategy* stored) {
  planner::SpaceOptions so;
  so.training.optimizer = planned_optimizer(s.optimizer);
  so.training.precision = precision;
  so.recompute = stored != nullptr;
  so.recompute_all = stored != nullptr;  // resolves any point's names; the point fixes what runs
  so.zero = stored != nullptr;
  so.kernel_threads = threads;
  const PointPrediction pp = predict_point(g, costs, {1}, so, stored);
  Prediction p;
  p.time = pp.cost.time;
  p.memory = pp.cost.memory;
  p.breakdown = pp.at_peak;
  p.recompute = pp.sharding.recompute;
  if (stored) p.where = stored->where;
  return p;
}

// The plan point to run, checked against the model and the flags: a plan made for another model
// file, batch, frozen set or optimizer, or for more than one device, is refused.
std::optional<planner::StoredStrategy> stored_point(const TrainSettings& s) {
  if (!s.plan) {
    if (s.point) throw InputError("--point needs --plan");
    return std::nullopt;
  }
  planner::StoredStrategy stored = planner::read_strategy(*s.plan, 1, s.point);
  if (!stored.settings) {  // a strategy file: for one device, at its batch if it gives one
    int64_t devices = 1;
    for (int x : stored.mesh) devices *= x;
    if (devices != 1) throw InputError(*s.plan + ": the strategy is for " + std::to_string(devices) + " GPUs; run it with --gpus " + std::to_string(devices));
    if (s.batch && stored.batch && *s.batch != *stored.batch) {
      throw InputError("--batch " + std::to_string(*s.batch) + " differs from the strategy's batch " + std::to_string(*stored.batch) + " (" +
                       *s.plan + "): leave it out, or change the file");
    }
  }
  if (stored.settings) {
    const planner::PlanSettings& ps = *stored.settings;
    planner::check_plan_model(ps, s.model);
    if (s.batch && *s.batch != ps.batch) {
      throw InputError("--batch " + std::to_string(*s.batch) + " differs from the plan's batch " + std::to_string(ps.batch) +
                       " (" + *s.plan + "): leave it out, or plan again with it");
    }
    if (!s.frozen.empty() && s.frozen != ps.frozen) {
      throw InputError("--frozen differs from the plan's frozen parameters (" + *s.plan + "): leave it out, or plan again with it");
    }
    if (s.dtype && planner::parse_precision(*s.dtype) != ps.training.precision) {
      throw InputError("--dtype " + *s.dtype + " differs from the plan's dtype " +
                       std::string(planner::precision_name(ps.training.precision)) + " (" + *s.plan +
                       "): leave it out, or plan again with it");
    }
  }
  return stored;
}

}  // namespace

void check_checkpoint_paths(const TrainSettings& s) {
  if (s.resume && !std::ifstream(*s.resume, std::ios::binary)) throw InputError(*s.resume + ": cannot be read (--resume)");
  if (s.save) {
    std::ofstream probe(*s.save + ".part", std::ios::binary | std::ios::trunc);
    if (!probe) throw InputError(*s.save + ": cannot be written");
    probe.close();
    std::filesystem::remove(*s.save + ".part");
  }
}

int run_training(const TrainSettings& s, std::ostream& out, std::ostream& err) {
  if (s.steps < 1) throw InputError("--steps must be at least 1");
  if (s.data.has_value() != s.labels.has_value()) throw InputError("--data and --labels go together");
  const int threads = kernel_threads(s);
  const std::optional<planner::StoredStrategy> stored = stored_point(s);
  ImportOptions io;
  io.batch = s.batch.value_or(stored && stored->settings ? stored->settings->batch : stored && stored->batch ? *stored->batch : 8);
  io.frozen = stored && stored->settings ? stored->settings->frozen : s.frozen;
  Graph g = import_onnx_file(s.model, io);
  const planner::Precision precision = s.dtype ? planner::parse_precision(*s.dtype)
                                       : stored && stored->settings ? stored->settings->training.precision
                                                                    : planner::Precision::Fp32;
  const std::unique_ptr<runtime::Backend> device = runtime::make_backend(s.device, runtime::BackendOptions{threads});
  runtime::Backend& backend = *device;
  const profiler::ProfileCosts costs = run_costs(s, precision, 1, threads, &backend);
  if (!costs.warning.empty()) err << "warning: " << costs.warning << "\n";
  Prediction predicted = predict(g, s, costs, precision, threads, stored ? &*stored : nullptr);

  const runtime::DeviceFacts facts = backend.facts();
  runtime::LoadedState loaded = runtime::load_state(g, s.model, backend, s.seed);
  // The parsed model file (hundreds of MiB with inline weights) is gone: give its pages back.
  malloc_trim(0);
  std::map<int, runtime::Array>& weights = loaded.arrays;
  runtime::ExecutorOptions eo;
  eo.loss = s.loss;
  eo.recompute = predicted.recompute;
  eo.bf16 = precision == planner::Precision::Bf16;
  runtime::Executor ex(g, backend, weights, eo);
  runtime::Optimizer optimizer(s.optimizer, backend, weights, ex.gradient_tensors());
  std::unique_ptr<runtime::DataSource> data =
      s.data ? runtime::npy_data(g, s.loss, *s.data, *s.labels, backend) : runtime::synthetic_data(g, s.loss, s.seed, backend);
  if (s.resume) {
    bool had_state = runtime::load_checkpoint(*s.resume, g, backend, weights, optimizer);
    err << "resumed from " << *s.resume << " at step " << optimizer.steps()
        << (had_state ? "" : " (no optimizer state beside it: the optimizer starts fresh)") << "\n";
  } else if (!loaded.initialised.empty()) {
    err << "note: " << loaded.initialised.size() << " weight tensor(s) have no values in " << s.model
        << " (first: '" << loaded.initialised.front() << "'): initialised as PyTorch initialises their layers, seed " << s.seed << "\n";
  }
  check_checkpoint_paths(s);

  out << model_line(s, g.batch, eo.bf16);
  out << "device   " << backend.name() << ", " << threads << " thread(s), " << facts.line << "; predicted by "
      << (costs.profiled ? "the " + costs.source + " and" : std::string("")) << " the analytic model of cluster '" << s.cluster << "'\n";
  out << costs_line(costs);
  if (stored) {
    const auto n = std::count(predicted.recompute.begin(), predicted.recompute.end(), true);
    out << "strategy " << predicted.where << (n ? ", recompute " + std::to_string(n) + " ops" : std::string()) << "\n";
  }
  LoopOptions lo;
  lo.first = optimizer.steps() + 1;
  lo.count = s.steps;
  lo.batch = g.batch;
  lo.out = &out;
  const std::unique_ptr<runtime::KernelTimer> timer = s.kernel_times ? backend.kernel_timer() : nullptr;
  lo.timer = timer.get();
  const LoopResult loop = run_steps(*data, backend.allocator(), runtime::StepContext{&backend.allocator(), true, s.seed, 0, threads},
                                    [&](runtime::Batch batch, const runtime::StepContext& ctx) {
                                      const double loss = ex.train_step(batch.inputs, batch.target, ctx);
                                      optimizer.step(ex);
                                      backend.synchronize();
                                      return loss;
                                    },
                                    lo);
  const double measured_time = steady_median(loop.seconds);
  runtime::MemoryStats ms = backend.allocator().stats();

  Measured m;
  m.time = measured_time;
  m.peak = static_cast<double>(ms.peak_total);
  for (int k = 0; k < runtime::kMemoryKinds; ++k) m.at_peak[static_cast<size_t>(k)] = static_cast<double>(ms.at_peak[static_cast<size_t>(k)]);
  const ReportPair against = print_against_predicted(out, {predicted.time, predicted.memory}, predicted.breakdown, m);
  out << "  (memory by kind at the peak: measured, and as the planner predicts the step's peak)\n";
  nlohmann::ordered_json kernel_times;
  if (timer) kernel_times = print_kernel_times(out, *timer, loop.seconds);
  if (s.save) {
    runtime::save_checkpoint(*s.save, s.model, g, backend, weights, optimizer);
    out << "saved    " << *s.save << " and " << *s.save << ".optim (step " << optimizer.steps() << ")\n";
  }
  if (s.report) {
    nlohmann::ordered_json report;
    report["model"] = report_model(s, g.batch);
    if (stored) report["strategy"] = {{"plan", predicted.where}, {"recompute_ops", std::count(predicted.recompute.begin(), predicted.recompute.end(), true)}};
    report["device"] = report_device(backend, /*workers=*/0, threads, s.cluster);
    report["costs"] = report_costs(costs);
    report["optimizer"] = report_optimizer(s);
    if (timer) report["kernel_times"] = kernel_times;
    finish_report(report, planner::precision_name(precision), loop.steps, against, *s.report);
  }
  return 0;
}

}  // namespace tensoropt
