#include "launcher/train/worker.h"

#include <algorithm>
#include <array>
#include <fstream>
#include <ostream>
#include <thread>

#include <nlohmann/json.hpp>

#include "graph/error.h"
#include "graph/import.h"
#include "launcher/comm/gloo_communicator.h"
#include "launcher/comm/timed_communicator.h"
#include "launcher/runtime/checkpoint.h"
#include "launcher/runtime/backend_registry.h"
#include "launcher/runtime/data.h"
#include "launcher/runtime/optimizer.h"
#include "launcher/runtime/sharded_executor.h"
#include "launcher/runtime/weights.h"
#include "launcher/train/loop.h"
#include "launcher/train/report.h"
#include "planner/compute_model.h"
#include "planner/plan_file.h"
#include "planner/sharding.h"

namespace tensoropt {

// The plan point to run with `gpus` workers, checked against the model and the flags.
planner::StoredStrategy checked_point(const TrainSettings& s, int gpus) {
  if (!s.plan) throw InputError("workers started by a launcher need --plan FILE (tensoropt plan MODEL --gpus N --json FILE)");
  planner::StoredStrategy stored = planner::read_strategy(*s.plan, gpus, s.point);
  if (!stored.settings) throw InputError(*s.plan + ": a plan file is needed (a strategy file records no model or batch)");
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


int run_worker(const TrainSettings& s, int gpus, const WorkerPlace& place, std::ostream& out, std::ostream& err) {
  if (gpus != place.world) {
    throw InputError("--gpus " + std::to_string(gpus) + " but " + place.from + " says the world has " + std::to_string(place.world) +
                     " workers");
  }
  const int threads = s.threads > 0 ? s.threads : std::max(1u, std::thread::hardware_concurrency());
  const planner::StoredStrategy stored = checked_point(s, gpus);
  const planner::PlanSettings& ps = *stored.settings;
  ImportOptions io;
  io.batch = ps.batch;
  io.frozen = ps.frozen;
  Graph g = import_onnx_file(s.model, io);
  const planner::Cluster cluster = worker_cluster(s.cluster, threads);
  planner::Training training = ps.training;
  training.optimizer = s.optimizer.kind == runtime::OptimizerKind::Sgd
                           ? (s.optimizer.momentum != 0 ? planner::Optimizer::Momentum : planner::Optimizer::Sgd)
                           : planner::Optimizer::Adam;
  planner::AnalyticCompute compute(cluster, training.precision);
  planner::SpaceOptions so;
  so.training = training;
  so.recompute = ps.recompute;
  so.recompute_all = ps.recompute_all;
  so.zero = ps.zero;
  so.param_persistence = ps.param_persistence;
  so.kernel_threads = threads;
  planner::StrategySpace space(g, planner::DeviceMesh::with_shape(cluster, stored.mesh), compute, so);
  const std::vector<int> assignment = planner::resolve_strategy(stored, space);
  const planner::Cost predicted = space.cost(assignment);

  comm::GlooOptions go;
  go.rank = place.rank;
  go.size = place.world;
  go.rendezvous = place.rendezvous;
  if (place.local) go.hostname = "127.0.0.1";
  auto gloo = comm::make_gloo_communicator(go);
  // Every collective goes through the clock: the time a step spends blocked in them is reported.
  comm::TimedCommunicator timed(*gloo);
  comm::Communicator* communicator = &timed;
  const std::unique_ptr<runtime::Backend> device = runtime::make_backend(s.device, runtime::BackendOptions{threads});
  runtime::Backend& backend = *device;
  const runtime::DeviceFacts facts = backend.facts();
  // What this worker holds and runs: the plan file's sharding data for the point, or (a strategy
  // file, or a plan file written before plans carried it) the same read off the space.
  const runtime::Sharding sh{runtime::MeshContext{&space.mesh(), place.rank, communicator},
                             stored.sharding ? planner::resolve_sharding(*stored.sharding, g, stored.indices, stored.where)
                                             : planner::sharding_plan(space, assignment)};
  runtime::LoadedState loaded = runtime::load_state(g, s.model, backend, s.seed);
  // A checkpoint is the whole model (whatever strategy wrote it): read it whole, then shard it.
  std::map<int, std::vector<runtime::Array>> resumed_state;
  int64_t resumed_steps = 0;
  bool had_state = false;
  if (s.resume) {
    std::vector<int> params;
    for (const auto& [t, a] : loaded.arrays)
      if (g.tensors[static_cast<size_t>(t)].kind == TensorKind::Parameter) params.push_back(t);
    runtime::Optimizer whole(s.optimizer, backend, loaded.arrays, params);
    had_state = runtime::load_checkpoint(*s.resume, g, backend, loaded.arrays, whole);
    if (had_state) resumed_state = whole.state();
    resumed_steps = whole.steps();
  }
  for (auto& [t, a] : loaded.arrays) {
    if (g.tensors[static_cast<size_t>(t)].kind == TensorKind::Parameter) {
      a = runtime::home_shard(sh, g, t, a, backend, runtime::MemoryKind::Parameters);
    }
  }
  const bool bf16 = ps.training.precision == planner::Precision::Bf16;
  runtime::ShardedExecutor ex(g, backend, loaded.arrays, sh, s.loss, bf16);
  runtime::Optimizer optimizer(s.optimizer, backend, ex.optimizer_weights(), ex.gradient_tensors());
  if (s.resume) {
    if (had_state) ex.scatter_state(resumed_state, optimizer);
    optimizer.set_steps(resumed_steps);
    resumed_state.clear();
  }
  // What was read whole is gone: the peak to compare with the plan is that of the steps.
  backend.allocator().reset_peaks();
  std::unique_ptr<runtime::DataSource> data = s.data ? runtime::npy_data(g, s.loss, *s.data, *s.labels, backend)
                                                     : runtime::synthetic_data(g, s.loss, s.seed, backend);
  const bool lead = place.rank == 0;
  if (lead) {
    out << "model    " << s.model << ", batch " << g.batch << ", " << runtime::optimizer_kind_name(s.optimizer.kind) << " lr " << s.optimizer.lr
        << ", " << (s.loss == runtime::LossKind::CrossEntropy ? "cross-entropy" : "mse")
        << (bf16 ? ", bf16 mixed precision (fp32 master weights)" : ", fp32") << "\n";
    out << "workers  " << place.world << " (" << place.from << "), " << backend.name() << ", " << threads << " thread(s) each, " << facts.line
        << ", Gloo; mesh " << space.mesh().str() << "\n";
    out << "strategy " << stored.where << "\n" << std::flush;
    if (s.resume) {
      err << "resumed from " << *s.resume << " at step " << optimizer.steps()
          << (had_state ? "" : " (no optimizer state beside it: the optimizer starts fresh)") << "\n";
    }
  }
  LoopOptions lo;
  lo.first = optimizer.steps() + 1;
  lo.count = s.steps;
  lo.batch = g.batch;
  lo.out = lead ? &out : nullptr;
  lo.memory_in_report = false;
  lo.blocked_clock = [&timed] { return timed.blocked_seconds(); };
  const LoopResult loop = run_steps(*data, backend.allocator(), runtime::StepContext{&backend.allocator(), true, s.seed, 0, threads},
                                    [&](runtime::Batch batch, const runtime::StepContext& ctx) {
                                      const double loss = ex.train_step(std::move(batch.inputs), std::move(batch.target), ctx);
                                      optimizer.step(ex);
                                      ex.after_optimizer_step();
                                      return loss;
                                    },
                                    lo);
  if (s.save) {
    // Every worker takes part in gathering the whole model; worker 0 writes it.
    std::map<int, std::vector<runtime::Array>> state;
    std::map<int, runtime::Array> whole = ex.gather_whole(optimizer, state);
    if (lead) {
      runtime::Optimizer saved(s.optimizer, backend, whole, ex.gradient_tensors());
      saved.state() = std::move(state);
      saved.set_steps(optimizer.steps());
      runtime::save_checkpoint(*s.save, s.model, g, backend, whole, saved);
    }
    communicator->barrier(communicator->world());
    if (lead) out << "saved    " << *s.save << " and " << *s.save << ".optim (step " << optimizer.steps() << ")\n";
  }
  // Every rank's median step time, peak memory, median time blocked in collectives and memory by
  // kind at its peak, gathered on every rank.
  constexpr size_t kEach = 3 + runtime::kMemoryKinds;
  const runtime::MemoryStats ms = backend.allocator().stats();
  std::array<double, kEach> mine{steady_median(loop.seconds), static_cast<double>(ms.peak_total), steady_median(loop.blocked)};
  for (size_t k = 0; k < runtime::kMemoryKinds; ++k) mine[3 + k] = static_cast<double>(ms.at_peak[k]);
  std::vector<double> all(kEach * static_cast<size_t>(place.world));
  communicator->all_gather(mine.data(), all.data(), kEach, DType::F64, communicator->world());
  if (lead) {
    // The table's memory rows are the rank with the largest peak; its time row the slowest rank.
    Measured worst;
    worst.collectives = 0;
    size_t top = 0;
    nlohmann::ordered_json ranks = nlohmann::ordered_json::array();
    for (size_t r = 0; r < static_cast<size_t>(place.world); ++r) {
      const double* f = all.data() + kEach * r;
      worst.time = std::max(worst.time, f[0]);
      worst.collectives = std::max(worst.collectives, f[2]);
      if (f[1] > all[kEach * top + 1]) top = r;
      ranks.push_back({{"rank", r}, {"time_s", f[0]}, {"peak_memory_bytes", f[1]}, {"collectives_s", f[2]}});
    }
    worst.peak = all[kEach * top + 1];
    for (size_t k = 0; k < runtime::kMemoryKinds; ++k) worst.at_peak[k] = all[kEach * top + 3 + k];
    ReportPair against = print_against_predicted(out, predicted, space.breakdown_at_peak(assignment), worst);
    for (size_t r = 0; r < static_cast<size_t>(place.world); ++r) {
      char buf[160];
      const double peak = all[kEach * r + 1];
      std::snprintf(buf, sizeof buf, "  %-17s %11s %11s    %.3fx\n", ("peak, rank " + std::to_string(r)).c_str(),
                    bytes_human(predicted.memory).c_str(), bytes_human(peak).c_str(), peak / predicted.memory);
      out << buf;
    }
    out << "  (time: the slowest rank's median step; memory: each rank's allocator peak against the plan's memory per GPU,\n"
           "   by kind at the moment of rank "
        << top << "'s peak, the largest, and as the planner predicts the step's peak)\n";
    if (s.report) {
      nlohmann::ordered_json report;
      report["model"] = {{"path", s.model}, {"batch", g.batch}};
      report["strategy"] = {{"plan", stored.where}, {"mesh", stored.mesh}};
      report["device"] = {{"kind", backend.name()}, {"workers", place.world}, {"threads", threads}};
      for (const auto& [key, value] : facts.fields) report["device"][key] = value;
      report["device"]["cluster"] = s.cluster;
      report["optimizer"] = {{"name", runtime::optimizer_kind_name(s.optimizer.kind)}, {"lr", s.optimizer.lr}};
      report["dtype"] = bf16 ? "bf16" : "fp32";
      report["steps"] = loop.steps;
      report["predicted"] = against.predicted;
      against.measured["ranks"] = ranks;
      report["measured"] = against.measured;
      write_report(*s.report, report);
    }
  }
  (void)err;
  return 0;
}

}  // namespace tensoropt
