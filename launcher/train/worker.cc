#include "launcher/train/worker.h"

#include "launcher/elastic/worker.h"
#include "launcher/train/worker_parts.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <memory>
#include <ostream>
#include <thread>

#include <nlohmann/json.hpp>

#include "graph/error.h"
#include "graph/import.h"
#include "launcher/launch/group.h"
#include "launcher/runtime/checkpoint.h"
#include "launcher/runtime/backend_registry.h"
#include "launcher/runtime/data.h"
#include "launcher/runtime/optimizer.h"
#include "launcher/runtime/sharded_executor.h"
#include "launcher/runtime/weights.h"
#include "launcher/train/loop.h"
#include "launcher/train/prediction.h"
#include "launcher/train/report.h"
#include "planner/plan_file.h"

namespace tensoropt {

// The plan point to run with `gpus` workers, checked against the model and the flags; or a
// strategy file (configuration names or rules), checked against the GPU count and the batch.
planner::StoredStrategy checked_point(const TrainSettings& s, int gpus) {
  if (!s.plan) throw InputError("workers started by a launcher need --plan FILE (tensoropt plan MODEL --gpus N --json FILE)");
  planner::StoredStrategy stored = planner::read_strategy(*s.plan, gpus, s.point);
  if (!stored.settings) {
    if (s.point) throw InputError("--point is for plan files; " + *s.plan + " is a strategy file (one strategy)");
    int64_t devices = 1;
    for (int x : stored.mesh) devices *= x;
    if (devices != gpus) {
      throw InputError(*s.plan + ": the strategy is for " + std::to_string(devices) + " GPUs (mesh of " + std::to_string(stored.mesh.size()) +
                       " axes), not --gpus " + std::to_string(gpus));
    }
    if (s.batch && stored.batch && *s.batch != *stored.batch) {
      throw InputError("--batch " + std::to_string(*s.batch) + " differs from the strategy's batch " + std::to_string(*stored.batch) + " (" +
                       *s.plan + "): leave it out, or change the file");
    }
    return stored;
  }
  const planner::PlanSettings& ps = *stored.settings;
  planner::check_plan_model(ps, s.model);
  if (s.batch && *s.batch != ps.batch) {
    throw InputError("--batch " + std::to_string(*s.batch) + " differs from the plan's batch " + std::to_string(ps.batch) + " (" + *s.plan + ")");
  }
  if (s.dtype && planner::parse_precision(*s.dtype) != ps.training.precision) {
    throw InputError("--dtype " + *s.dtype + " differs from the plan's dtype " + std::string(planner::precision_name(ps.training.precision)) +
                     " (" + *s.plan + ")");
  }
  return stored;
}

planner::PlanSettings point_settings(const TrainSettings& s, const planner::StoredStrategy& stored) {
  if (stored.settings) return *stored.settings;
  // As `evaluate` costs a strategy file: the widest space, so that every configuration name
  // `plan --recompute all --dump-space` lists resolves.
  planner::PlanSettings ps;
  ps.model_path = s.model;
  ps.batch = s.batch.value_or(stored.batch.value_or(8));
  ps.frozen = s.frozen;
  ps.training.precision = s.dtype ? planner::parse_precision(*s.dtype) : planner::Precision::Fp32;
  ps.recompute = true;
  ps.recompute_all = true;
  ps.zero = true;
  ps.param_persistence = 0;
  return ps;
}

Graph import_for(const TrainSettings& s, const planner::PlanSettings& ps) {
  ImportOptions io;
  io.batch = ps.batch;
  io.frozen = ps.frozen;
  return import_onnx_file(s.model, io);
}

PointPrediction predict_for(const TrainSettings& s, const Graph& g, const planner::PlanSettings& ps, const planner::StoredStrategy& stored,
                            int threads, const profiler::ProfileCosts& costs) {
  planner::SpaceOptions so;
  so.training = ps.training;
  so.training.optimizer = planned_optimizer(s.optimizer);
  so.recompute = ps.recompute;
  so.recompute_all = ps.recompute_all;
  so.zero = ps.zero;
  so.param_persistence = ps.param_persistence;
  so.kernel_threads = threads;
  return predict_point(g, costs, stored.mesh, so, &stored);
}

void check_strategy_resolves(const TrainSettings& s, const planner::StoredStrategy& stored, int threads) {
  const planner::PlanSettings ps = point_settings(s, stored);
  int64_t devices = 1;
  for (int x : stored.mesh) devices *= x;
  const profiler::ProfileCosts costs = run_costs(s, ps.training.precision, static_cast<int>(devices), threads, nullptr);
  (void)predict_for(s, import_for(s, ps), ps, stored, threads, costs);
}

Resumed read_checkpoint(const TrainSettings& s, const Graph& g, runtime::Backend& backend, runtime::LoadedState& loaded) {
  Resumed r;
  if (!s.resume) return r;
  std::vector<int> params;
  for (const auto& [t, a] : loaded.arrays)
    if (g.tensors[static_cast<size_t>(t)].kind == TensorKind::Parameter) params.push_back(t);
  runtime::Optimizer whole(s.optimizer, backend, loaded.arrays, params);
  r.had_state = runtime::load_checkpoint(*s.resume, g, backend, loaded.arrays, whole);
  if (r.had_state) r.state = whole.state();
  r.steps = whole.steps();
  return r;
}

void save_whole(const TrainSettings& s, const Graph& g, runtime::Backend& backend, runtime::ShardedExecutor& ex,
                const runtime::Optimizer& optimizer, comm::Communicator& communicator, bool lead, std::ostream& out) {
  std::map<int, std::vector<runtime::Array>> state;
  std::map<int, runtime::Array> whole = ex.gather_whole(optimizer, state);
  if (lead) {
    runtime::Optimizer saved(s.optimizer, backend, whole, ex.gradient_tensors());
    saved.state() = std::move(state);
    saved.set_steps(optimizer.steps());
    runtime::save_checkpoint(*s.save, s.model, g, backend, whole, saved);
  }
  communicator.barrier(communicator.world());
  if (lead) out << "saved    " << *s.save << " and " << *s.save << ".optim (step " << optimizer.steps() << ")\n";
}

TrainStep sharded_step(runtime::ShardedExecutor& ex, runtime::Optimizer& optimizer, runtime::Backend& backend) {
  return [&ex, &optimizer, &backend](runtime::Batch batch, const runtime::StepContext& ctx) {
    const double loss = ex.train_step(std::move(batch.inputs), std::move(batch.target), ctx);
    optimizer.step(ex);
    ex.after_optimizer_step();
    backend.synchronize();
    return loss;
  };
}

nlohmann::ordered_json report_head(const TrainSettings& s, const Graph& g, const planner::StoredStrategy& stored, const runtime::Backend& backend,
                                   int workers, int threads, const profiler::ProfileCosts& costs) {
  nlohmann::ordered_json report;
  report["model"] = report_model(s, g.batch);
  report["strategy"] = {{"plan", stored.where}, {"mesh", stored.mesh}};
  report["device"] = report_device(backend, workers, threads, s.cluster);
  report["costs"] = report_costs(costs);
  report["optimizer"] = report_optimizer(s);
  return report;
}

std::vector<double> gather_figures(const LoopResult& loop, runtime::Allocator& allocator, comm::Communicator& communicator, int world) {
  const runtime::MemoryStats ms = allocator.stats();
  std::array<double, kEach> mine{steady_median(loop.seconds), static_cast<double>(ms.peak_total), steady_median(loop.blocked)};
  for (size_t k = 0; k < runtime::kMemoryKinds; ++k) mine[3 + k] = static_cast<double>(ms.at_peak[k]);
  std::vector<double> all(kEach * static_cast<size_t>(world));
  communicator.all_gather(mine.data(), all.data(), kEach, DType::F64, communicator.world());
  return all;
}

ReportPair print_group_table(std::ostream& out, const PointPrediction& predicted, const std::vector<double>& all, int world) {
  Measured worst;
  worst.collectives = 0;
  size_t top = 0;
  nlohmann::ordered_json ranks = nlohmann::ordered_json::array();
  for (size_t r = 0; r < static_cast<size_t>(world); ++r) {
    const double* f = all.data() + kEach * r;
    worst.time = std::max(worst.time, f[0]);
    worst.collectives = std::max(worst.collectives, f[2]);
    if (f[1] > all[kEach * top + 1]) top = r;
    ranks.push_back({{"rank", r}, {"time_s", f[0]}, {"peak_memory_bytes", f[1]}, {"collectives_s", f[2]}});
  }
  worst.peak = all[kEach * top + 1];
  for (size_t k = 0; k < runtime::kMemoryKinds; ++k) worst.at_peak[k] = all[kEach * top + 3 + k];
  ReportPair against = print_against_predicted(out, predicted.cost, predicted.at_peak, worst);
  for (size_t r = 0; r < static_cast<size_t>(world); ++r) {
    char buf[160];
    const double peak = all[kEach * r + 1];
    std::snprintf(buf, sizeof buf, "  %-17s %11s %11s    %.3fx\n", ("peak, rank " + std::to_string(r)).c_str(),
                  bytes_human(predicted.cost.memory).c_str(), bytes_human(peak).c_str(), peak / predicted.cost.memory);
    out << buf;
  }
  out << "  (time: the slowest rank's median step; memory: each rank's allocator peak against the plan's memory per GPU,\n"
         "   by kind at the moment of rank "
      << top << "'s peak, the largest, and as the planner predicts the step's peak)\n";
  against.measured["ranks"] = ranks;
  return against;
}

int run_worker(const TrainSettings& s, int gpus, const WorkerPlace& place, std::ostream& out, std::ostream& err) {
  if (s.elastic.on) return run_elastic_worker(s, place, out, err);
  if (gpus != place.world) {
    throw InputError("--gpus " + std::to_string(gpus) + " but " + place.from + " says the world has " + std::to_string(place.world) +
                     " workers");
  }
  const int threads = kernel_threads(s);
  const planner::StoredStrategy stored = checked_point(s, gpus);
  const planner::PlanSettings ps = point_settings(s, stored);
  Graph g = import_for(s, ps);

  // One GPU per worker: the local rank's, among those visible (CUDA_VISIBLE_DEVICES).
  const std::unique_ptr<runtime::Backend> device = runtime::make_backend(s.device, runtime::BackendOptions{threads, place.local_rank});
  runtime::Backend& backend = *device;
  const profiler::ProfileCosts costs = run_costs(s, ps.training.precision, place.world, threads, &backend);
  if (!costs.warning.empty() && place.rank == 0) err << "warning: " << costs.warning << "\n";
  const PointPrediction predicted = predict_for(s, g, ps, stored, threads, costs);
  // The data is opened, and every label and index in it checked, before the group meets: each
  // worker refuses bad data on its own, and none sees a peer vanish mid-rendezvous instead.
  std::unique_ptr<runtime::DataSource> data = s.data ? runtime::npy_data(g, s.loss, *s.data, *s.labels, backend)
                                                     : runtime::synthetic_data(g, s.loss, s.seed, backend);
  Group group = join_group(place, backend);
  comm::Communicator& communicator = *group.timed;
  const runtime::DeviceFacts facts = backend.facts();
  const runtime::Sharding sh{runtime::MeshContext{&predicted.mesh, place.rank, &communicator}, predicted.sharding};
  runtime::LoadedState loaded = runtime::load_state(g, s.model, backend, s.seed);
  Resumed resumed = read_checkpoint(s, g, backend, loaded);
  for (auto& [t, a] : loaded.arrays)
    if (g.tensors[static_cast<size_t>(t)].kind == TensorKind::Parameter) a = runtime::home_shard(sh, g, t, a, backend, runtime::MemoryKind::Parameters);
  const bool bf16 = ps.training.precision == planner::Precision::Bf16;
  runtime::ShardedExecutor ex(g, backend, loaded.arrays, sh, s.loss, bf16);
  runtime::Optimizer optimizer(s.optimizer, backend, ex.optimizer_weights(), ex.gradient_tensors());
  if (s.resume) {
    if (resumed.had_state) ex.scatter_state(resumed.state, optimizer);
    optimizer.set_steps(resumed.steps);
    resumed.state.clear();
  }
  // What was read whole is gone: the peak to compare with the plan is that of the steps.
  backend.allocator().reset_peaks();
  const bool lead = place.rank == 0;
  if (lead) {
    out << model_line(s, g.batch, bf16);
    out << "workers  " << place.world << " (" << place.from << "), " << backend.name() << ", " << threads << " thread(s) each, " << facts.line
        << ", " << group.tensors_over << "; mesh " << predicted.mesh.str() << "\n";
    out << "strategy " << stored.where << "\n" << costs_line(costs) << std::flush;
    if (s.resume) {
      err << "resumed from " << *s.resume << " at step " << optimizer.steps()
          << (resumed.had_state ? "" : " (no optimizer state beside it: the optimizer starts fresh)") << "\n";
    }
  }
  LoopOptions lo;
  lo.first = optimizer.steps() + 1;
  lo.count = s.steps;
  lo.batch = g.batch;
  lo.out = lead ? &out : nullptr;
  lo.memory_in_report = false;
  lo.blocked_clock = [&group] { return group.timed->blocked_seconds(); };
  const std::unique_ptr<runtime::KernelTimer> timer = s.kernel_times && lead ? backend.kernel_timer() : nullptr;
  lo.timer = timer.get();
  const LoopResult loop = run_steps(*data, backend.allocator(), runtime::StepContext{&backend.allocator(), true, s.seed, 0, threads},
                                    sharded_step(ex, optimizer, backend), lo);
  if (s.save) save_whole(s, g, backend, ex, optimizer, communicator, lead, out);
  const std::vector<double> all = gather_figures(loop, backend.allocator(), *group.gloo, place.world);
  if (!lead) return 0;
  const ReportPair against = print_group_table(out, predicted, all, place.world);
  nlohmann::ordered_json kernel_times;
  if (timer) kernel_times = print_kernel_times(out, *timer, loop.seconds);
  if (s.report) {
    nlohmann::ordered_json report = report_head(s, g, stored, backend, place.world, threads, costs);
    if (timer) report["kernel_times"] = kernel_times;
    finish_report(report, bf16 ? "bf16" : "fp32", loop.steps, against, *s.report);
  }
  return 0;
}

}  // namespace tensoropt
