#include "launcher/worker.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
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
#include "launcher/train_common.h"
#include "planner/compute_model.h"
#include "planner/plan_file.h"
#include "planner/sharding.h"

namespace tensoropt {
namespace {

std::optional<int> env_int(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  if (*end != '\0' || x < 0 || x > 1 << 20) throw InputError(std::string(name) + "=" + v + ": not a rank or size");
  return static_cast<int>(x);
}

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

}  // namespace

std::optional<WorkerPlace> worker_place(const std::optional<std::string>& rendezvous) {
  const std::pair<const char*, const char*> sources[] = {
      {"RANK", "WORLD_SIZE"}, {"SLURM_PROCID", "SLURM_NTASKS"}, {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"}};
  for (const auto& [rank_var, size_var] : sources) {
    const std::optional<int> rank = env_int(rank_var), world = env_int(size_var);
    if (!rank && !world) continue;
    if (!rank || !world) throw InputError(std::string(rank_var) + " and " + size_var + " go together");
    if (*world < 1 || *rank >= *world) {
      throw InputError(std::string(rank_var) + "=" + std::to_string(*rank) + " is outside " + size_var + "=" + std::to_string(*world));
    }
    WorkerPlace p;
    p.rank = *rank;
    p.world = *world;
    p.from = std::string(rank_var) + "/" + size_var;
    const char* env = std::getenv("TENSOROPT_RENDEZVOUS");
    if (rendezvous) p.rendezvous = *rendezvous;
    else if (env && *env) p.rendezvous = env;
    else throw InputError("worker " + std::to_string(p.rank) + " of " + std::to_string(p.world) + " (" + p.from +
                          "): say where the group meets: --rendezvous file:DIR (a shared directory) or redis://HOST:PORT");
    comm::parse_rendezvous(p.rendezvous);  // a malformed spec is refused here, before anything starts
    const char* local = std::getenv("TENSOROPT_LOCAL_LAUNCH");
    p.local = local && std::string(local) == "1";
    return p;
  }
  return std::nullopt;
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
  nlohmann::ordered_json steps = nlohmann::ordered_json::array();
  std::vector<double> times, blocked;
  runtime::StepContext ctx{&backend.allocator(), true, s.seed, 0, threads};
  const int64_t first = optimizer.steps() + 1;
  for (int64_t step = first; step < first + s.steps; ++step) {
    runtime::Batch batch = data->next(step);
    ctx.step = step;
    const auto t0 = std::chrono::steady_clock::now();
    const double blocked0 = timed.blocked_seconds();
    const double loss = ex.train_step(std::move(batch.inputs), std::move(batch.target), ctx);
    optimizer.step(ex);
    ex.after_optimizer_step();
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    times.push_back(dt);
    blocked.push_back(timed.blocked_seconds() - blocked0);
    const runtime::MemoryStats ms = backend.allocator().stats();
    if (lead) {
      out << step_line(step, loss, dt, g.batch, static_cast<double>(ms.live_total), static_cast<double>(ms.peak_total)) << std::flush;
      steps.push_back({{"step", step}, {"loss", loss}, {"time_s", dt}, {"samples_per_s", static_cast<double>(g.batch) / dt}});
    }
  }
  // Medians of the steps after the first (which makes the communicator's contexts and warms up).
  auto steady_median = [](const std::vector<double>& v) {
    std::vector<double> later(v.size() > 1 ? v.begin() + 1 : v.begin(), v.end());
    std::sort(later.begin(), later.end());
    return later[later.size() / 2];
  };
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
  std::array<double, kEach> mine{steady_median(times), static_cast<double>(ms.peak_total), steady_median(blocked)};
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
      report["steps"] = steps;
      report["predicted"] = against.predicted;
      against.measured["ranks"] = ranks;
      report["measured"] = against.measured;
      std::ofstream f(*s.report + ".part");
      f << report.dump(2) << "\n";
      if (!f) throw InputError(*s.report + ": cannot be written");
      f.close();
      std::filesystem::rename(*s.report + ".part", *s.report);
    }
  }
  (void)err;
  return 0;
}

namespace {

volatile sig_atomic_t g_stop_signal = 0;
void on_stop(int sig) { g_stop_signal = sig; }

std::string how_it_ended(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    return "killed by signal " + std::to_string(sig) + " (" + strsignal(sig) + ")";
  }
  return "exited with code " + std::to_string(WEXITSTATUS(status));
}

// Runs argv to the end; its stdout to `log`, stderr inherited. Returns the wait status.
int run_to_end(const std::vector<std::string>& argv, const std::string& log) {
  const pid_t pid = fork();
  if (pid < 0) throw InternalError("fork failed");
  if (pid == 0) {
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) dup2(fd, STDOUT_FILENO);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv("/proc/self/exe", args.data());
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw InternalError("waitpid failed");
    if (g_stop_signal) kill(pid, SIGTERM);
  }
  return status;
}

}  // namespace

int launch_local(const std::vector<std::string>& argv, int gpus, const TrainSettings& s, std::ostream& out, std::ostream& err) {
  if (s.data.has_value() != s.labels.has_value()) throw InputError("--data and --labels go together");
  if (s.dtype) planner::parse_precision(*s.dtype);  // a bad --dtype: one line, before anything starts
  check_checkpoint_paths(s);
  char tmpl[] = "/tmp/tensoropt-run.XXXXXX";
  if (!mkdtemp(tmpl)) throw InternalError("cannot make a private directory under /tmp");
  const std::string dir = tmpl;
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  } cleanup{dir};
  struct sigaction sa {};
  sa.sa_handler = on_stop;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);

  if (s.plan) checked_point(s, gpus);  // a bad plan or point: one line, before any worker starts
  std::vector<std::string> worker_argv = argv;
  std::string plan = s.plan.value_or("");
  if (plan.empty()) {
    plan = dir + "/plan.json";
    std::vector<std::string> planner = {"tensoropt", "plan", s.model, "--gpus", std::to_string(gpus), "--batch",
                                        std::to_string(s.batch.value_or(8)), "--cluster", s.cluster, "--json", plan,
                                        "--dtype", s.dtype.value_or("fp32")};
    for (const std::string& f : s.frozen) planner.insert(planner.end(), {"--frozen", f});
    out << "planning " << s.model << " on " << gpus << " workers (cluster " << s.cluster << ")\n" << std::flush;
    const int status = run_to_end(planner, dir + "/plan.log");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      err << "tensoropt: error: planning failed (" << how_it_ended(status) << ")\n";
      return WIFEXITED(status) && WEXITSTATUS(status) == 2 ? 2 : 1;
    }
    std::ifstream log(dir + "/plan.log");
    for (std::string line; std::getline(log, line);)
      if (line.find("chosen:") != std::string::npos) out << line.substr(line.find("chosen:")) << "\n";
    worker_argv.insert(worker_argv.end(), {"--plan", plan});
  }
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (s.threads <= 0) worker_argv.insert(worker_argv.end(), {"--threads", std::to_string(std::max(1, cores / gpus))});
  out << std::flush;

  std::vector<pid_t> pids;
  for (int r = 0; r < gpus; ++r) {
    const pid_t pid = fork();
    if (pid < 0) throw InternalError("fork failed");
    if (pid == 0) {
      setenv("RANK", std::to_string(r).c_str(), 1);
      setenv("WORLD_SIZE", std::to_string(gpus).c_str(), 1);
      setenv("LOCAL_RANK", std::to_string(r).c_str(), 1);
      setenv("TENSOROPT_RENDEZVOUS", ("file:" + dir + "/store").c_str(), 1);
      setenv("TENSOROPT_LOCAL_LAUNCH", "1", 1);
      if (r != 0) {
        const int fd = open("/dev/null", O_WRONLY);
        if (fd >= 0) dup2(fd, STDOUT_FILENO);
      }
      std::vector<char*> args;
      for (const std::string& a : worker_argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      execv("/proc/self/exe", args.data());
      _exit(127);
    }
    pids.push_back(pid);
  }
  // Wait for every worker; the first that ends badly, or a stop signal, takes the group down.
  std::vector<bool> done(pids.size(), false);
  int left = gpus, failed_rank = -1, failed_status = 0;
  std::chrono::steady_clock::time_point stopping{};
  bool stop_sent = false;
  while (left > 0) {
    for (size_t r = 0; r < pids.size(); ++r) {
      if (done[r]) continue;
      int status = 0;
      if (waitpid(pids[r], &status, WNOHANG) != pids[r]) continue;
      done[r] = true;
      --left;
      const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
      if (!ok && failed_rank < 0 && !stop_sent) {
        failed_rank = static_cast<int>(r);
        failed_status = status;
      }
    }
    if (left == 0) break;
    if (!stop_sent && (failed_rank >= 0 || g_stop_signal)) {
      for (size_t r = 0; r < pids.size(); ++r)
        if (!done[r]) kill(pids[r], SIGTERM);
      stop_sent = true;
      stopping = std::chrono::steady_clock::now();
    }
    if (stop_sent && std::chrono::steady_clock::now() - stopping > std::chrono::seconds(5)) {
      for (size_t r = 0; r < pids.size(); ++r)
        if (!done[r]) kill(pids[r], SIGKILL);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (g_stop_signal && failed_rank < 0) {
    err << "tensoropt: stopped by signal " << g_stop_signal << "; every worker was stopped\n";
    return 130;
  }
  if (failed_rank >= 0) {
    err << "tensoropt: error: rank " << failed_rank << " of " << gpus << " " << how_it_ended(failed_status)
        << "; the other workers were stopped\n";
    return WIFEXITED(failed_status) && WEXITSTATUS(failed_status) == 2 ? 2 : 1;
  }
  return 0;
}

}  // namespace tensoropt
