#include "cli/profile_command.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <ostream>

#include "graph/error.h"
#include "graph/import.h"
#include "launcher/launch/group.h"
#include "launcher/launch/local.h"
#include "launcher/launch/place.h"
#include "launcher/runtime/backend_registry.h"
#include "launcher/train/settings.h"
#include "planner/parallel/cluster.h"
#include "planner/parallel/collectives.h"
#include "profiler/cases.h"
#include "profiler/comm_timer.h"
#include "profiler/database.h"
#include "profiler/device_id.h"
#include "profiler/op_timer.h"
#include "profiler/step_timer.h"

namespace tensoropt::cli {

using namespace profiler;

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

const char* kind_name(planner::StepKind k) {
  switch (k) {
    case planner::StepKind::AllReduce: return "all_reduce";
    case planner::StepKind::AllGather: return "all_gather";
    case planner::StepKind::ReduceScatter: return "reduce_scatter";
    default: return "all_to_all";
  }
}

int threads_for(const ProfileArgs& a) {
  TrainSettings s;
  s.threads = a.threads;
  return kernel_threads(s, a.gpus);
}

Graph import_model(const ProfileArgs& a) {
  ImportOptions io;
  io.batch = a.batch;
  return import_onnx_file(a.model, io);
}

// The world's view of one figure: the slowest rank's (no communicator: this process's).
struct World {
  comm::Communicator* host = nullptr;
  int rank = 0;
  double slowest(double x) const { return host ? profiler::slowest(*host, x) : x; }
};

// The existing database at `path` for `here`, or a fresh one (InputError: another device's, or corrupt).
ProfileDb existing(const std::string& path, const DeviceId& here) {
  ProfileDb db;
  db.device = here;
  if (!std::filesystem::exists(path)) return db;
  ProfileDb old = read_profile(path);
  if (!(old.device == here))
    throw InputError(path + " holds a profile made on " + old.device.line() + "; this is " + here.line() +
                     ": give another -o, or remove it");
  return old;
}

// The exposed share of a gradient bucket's all-reduce (OverlapEntry), for every group size the
// plans all-reduce gradients over that the database lacks: one bucket (25 MiB, or the model's
// gradients when less) beside repeated calls of the model's heaviest op shard (the most backward
// FLOPs), about as long as the all-reduce.
void time_overlaps(const Graph& g, const ProfileCases& cases, const planner::Training& training, const ProfileArgs& a, int threads,
                   const ProfileDb& db, Group& group, runtime::Backend& backend, ProfileDb& add) {
  double gradient_bytes = 0;
  for (const Tensor& t : g.tensors)
    if (t.kind == TensorKind::Parameter) gradient_bytes += static_cast<double>(t.elements()) * training.gradient_bytes();
  const auto bucket = static_cast<int64_t>(std::clamp(gradient_bytes, 4.0, planner::kGradientBucketBytes));
  const planner::ShardWork* heavy = nullptr;
  for (const planner::ShardWork& w : cases.ops)
    if (w.has_backward && (!heavy || w.bwd_flops > heavy->bwd_flops)) heavy = &w;
  if (!heavy) return;
  for (const CollectiveCase& c : cases.collectives) {
    if (c.kind != planner::StepKind::AllReduce || c.group < 2 || a.gpus % c.group != 0) continue;
    const bool had = std::any_of(db.overlap.begin(), db.overlap.end(), [&](const OverlapEntry& e) { return e.group == c.group && e.workers == a.gpus; })
                     || std::any_of(add.overlap.begin(), add.overlap.end(), [&](const OverlapEntry& e) { return e.group == c.group; });
    if (had) continue;
    // Calls of the heavy shard: about as long as the all-reduce alone.
    const double reduce = time_collective(group.tensors(), group.host(), backend, c.kind, c.group, bucket, 3).second;
    const OpTiming one = time_op_shard(*heavy, training.precision, backend, threads, 1);
    const int repeats = static_cast<int>(std::clamp(reduce / std::max(one.forward_s + one.backward_s, 1e-7), 1.0, 50.0));
    const double exposed = exposed_all_reduce(group.tensors(), group.host(), backend, c.group, bucket,
                                              [&] { (void)time_op_shard(*heavy, training.precision, backend, threads, repeats); });
    add.overlap.push_back(OverlapEntry{c.group, a.gpus, static_cast<double>(bucket), exposed});
  }
}

struct Summary {
  int ops_total = 0, ops_had = 0, ops_timed = 0, ops_failed = 0, ops_left = 0;
  int collectives = 0, collectives_had = 0, optimizers = 0;
};

int profile_worker(const ProfileArgs& a, const WorkerPlace& place, std::ostream& out, std::ostream& err) {
  const auto t0 = Clock::now();
  const Graph g = import_model(a);
  const int threads = threads_for(a);
  planner::Cluster cluster = planner::load_cluster(a.cluster);
  planner::SpaceOptions so;
  so.training.precision = planner::parse_precision(a.dtype);
  const ProfileCases cases = profile_cases(g, cluster, a.gpus, so, a.mesh_axes);
  std::unique_ptr<runtime::Backend> backend = runtime::make_backend(a.device, runtime::BackendOptions{threads, place.local_rank});
  const DeviceId here = device_id(*backend);
  const std::string path = profile_output(a);
  ProfileDb db = existing(path, here);  // every rank reads it: the same skips everywhere
  const bool lead = place.rank == 0;
  const bool gpu = a.device != "cpu";
  const int workers = gpu ? 0 : a.gpus, entry_threads = gpu ? 0 : threads;

  Group group;
  World world{nullptr, place.rank};
  if (place.world > 1) {
    group = join_group(place, *backend);
    world.host = &group.host();
  }
  ProfileDb add;
  add.device = here;
  Summary sum;
  sum.ops_total = static_cast<int>(cases.ops.size());
  auto have_op = [&](const std::string& sig) {
    return std::any_of(db.ops.begin(), db.ops.end(),
                       [&](const OpEntry& e) { return e.signature == sig && e.workers == std::max(workers, 1) && e.threads == entry_threads; });
  };
  bool stop = false;
  auto check_stop = [&] {
    const double flag = lead && a.max_seconds && since(t0) > *a.max_seconds ? 1.0 : 0.0;
    stop = stop || world.slowest(flag) > 0;
    return stop;
  };
  auto last_progress = Clock::now();
  for (size_t i = 0; i < cases.ops.size(); ++i) {
    if (have_op(cases.signatures[i])) {
      ++sum.ops_had;
      continue;
    }
    if (check_stop()) {
      ++sum.ops_left;
      continue;
    }
    OpTiming t;
    double failed = 0;
    try {
      t = time_op_shard(cases.ops[i], so.training.precision, *backend, threads, a.repeats);
    } catch (const InputError&) {
      failed = 1;  // a kernel that refuses this shard: it stays analytic
    }
    failed = world.slowest(failed);
    const double fwd = world.slowest(t.forward_s), bwd = world.slowest(t.backward_s);
    if (failed > 0) {
      ++sum.ops_failed;
      continue;
    }
    ++sum.ops_timed;
    add.ops.push_back(OpEntry{cases.ops[i].node->op_type, cases.signatures[i], std::max(workers, 1), entry_threads, fwd, bwd, a.repeats});
    if (lead && since(last_progress) > 2) {
      err << "profile: timed " << (sum.ops_had + sum.ops_timed + sum.ops_failed) << "/" << sum.ops_total << " op shards, "
          << std::lround(since(t0)) << " s\n";
      last_progress = Clock::now();
    }
  }

  // Collectives: every group size the meshes use, at sizes up to the largest a plan sends (256 MiB at most).
  if (world.host) {
    for (const CollectiveCase& c : cases.collectives) {
      if (c.group < 2 || a.gpus % c.group != 0) continue;
      const double want = std::min(c.largest_bytes, 256.0 * (1 << 20));
      const bool had = std::any_of(db.collectives.begin(), db.collectives.end(), [&](const CollectiveEntry& e) {
        return e.kind == kind_name(c.kind) && e.level == "intra" && e.group == c.group && e.workers == a.gpus && e.points.back().first >= want;
      });
      if (had) {
        ++sum.collectives_had;
        continue;
      }
      if (check_stop()) break;
      CollectiveEntry e{kind_name(c.kind), "intra", c.group, a.gpus, {}, 0, 0};
      for (double bytes = 4; ; bytes *= bytes < 1024 ? 16 : 4) {
        const int calls = static_cast<int>(std::clamp(64.0 * (1 << 20) / bytes, 3.0, 20.0));
        const auto [moved, seconds] =
            time_collective(group.tensors(), group.host(), *backend, c.kind, c.group, static_cast<int64_t>(bytes), calls);
        if (e.points.empty() || moved > e.points.back().first) e.points.emplace_back(moved, seconds);
        if (bytes >= want) break;
      }
      const auto [latency, per_byte] = fit_line(e.points);
      e.latency_s = latency;
      e.bandwidth_Bps = per_byte > 0 ? 1 / per_byte : 0;
      add.collectives.push_back(std::move(e));
      ++sum.collectives;
    }
  }

  // The gradient buckets' all-reduce beside the backward, for each group size data parallelism uses.
  if (world.host && !check_stop()) time_overlaps(g, cases, so.training, a, threads, db, group, *backend, add);

  // The optimizer step over one parameter, every kind.
  if (!check_stop()) {
    for (const char* kind : {"adam", "momentum", "sgd"}) {
      OptimizerEntry e{kind, a.dtype, std::max(workers, 1), entry_threads, {}, 0, 0};
      for (int64_t bytes = 1024; bytes <= (int64_t{16} << 20); bytes *= 4) {
        const int64_t n = bytes / 4;
        auto arr = [&](runtime::MemoryKind k) { runtime::Array x(DType::F32, {n}, backend->allocator(), k); backend->fill(x, 0.5); return x; };
        runtime::Array w = arr(runtime::MemoryKind::Parameters), gr = arr(runtime::MemoryKind::Gradients);
        runtime::Array m = arr(runtime::MemoryKind::OptimizerState), v = arr(runtime::MemoryKind::OptimizerState);
        std::vector<double> times;
        for (int r = 0; r < a.repeats + 2; ++r) {
          backend->synchronize();
          const auto s0 = Clock::now();
          if (std::string(kind) == "adam") backend->adam_steps({{&w, &gr, &m, &v}}, runtime::AdamSettings{}, r + 1);
          else backend->sgd_step(w, gr, m, runtime::SgdSettings{0.01, std::string(kind) == "momentum" ? 0.9 : 0.0, 0}, r + 1);
          backend->synchronize();
          if (r >= 2) times.push_back(since(s0));
        }
        std::sort(times.begin(), times.end());
        e.points.emplace_back(static_cast<double>(bytes), world.slowest(times[times.size() / 2]));
      }
      const auto [fixed, per_byte] = fit_line(e.points);
      e.fixed_s = fixed;
      e.per_byte_s = per_byte;
      add.optimizer.push_back(std::move(e));
      ++sum.optimizers;
    }
  }
  // The executor around its kernels, on every worker side by side.
  if (!check_stop()) {
    const auto o = time_step_overhead(g, a.model, *backend, threads, so.training.precision == planner::Precision::Bf16, 5);
    const double per_call = world.slowest(o ? o->per_call_s : -1);
    if (per_call >= 0) add.executor.push_back(ExecutorEntry{a.dtype, std::max(workers, 1), entry_threads, per_call, o ? o->steps : 1});
  }
  if (world.host) world.host->barrier(world.host->world());
  if (!lead) return 0;
  merge_profile(db, add);
  write_profile(db, path);
  out << "profile  " << a.model << ", batch " << a.batch << ", " << a.dtype << ", on " << a.gpus << " " << a.device
      << (a.gpus == 1 ? " device" : " workers") << (gpu ? "" : ", " + std::to_string(threads) + " thread(s) each") << "\n";
  out << "device   " << here.line() << "\n";
  out << "op       " << sum.ops_total << " shards: " << sum.ops_timed << " timed, " << sum.ops_had << " already in the profile";
  if (sum.ops_failed) out << ", " << sum.ops_failed << " refused by a kernel (modelled)";
  if (sum.ops_left) out << ", " << sum.ops_left << " left by --max-seconds (modelled)";
  out << "\ncomm     " << sum.collectives << " collectives timed, " << sum.collectives_had << " already in the profile\n";
  out << "optim    " << sum.optimizers << " optimizers timed\n";
  for (const OverlapEntry& o : add.overlap) {
    char line[128];
    std::snprintf(line, sizeof line, "%.2f of a gradient bucket's all-reduce over %d exposed beside the backward", o.exposed, o.group);
    out << "overlap  " << line << "\n";
  }
  if (!add.executor.empty()) {
    char line[96];
    std::snprintf(line, sizeof line, "%.2f us around each kernel call", add.executor.front().per_call_s * 1e6);
    out << "executor " << line << "\n";
  }
  char secs[32];
  std::snprintf(secs, sizeof secs, "%.1f", since(t0));
  out << "wrote    " << path << " in " << secs << " s\n";
  return 0;
}

}  // namespace

std::string profile_output(const ProfileArgs& a) {
  if (a.output) return *a.output;
  return std::filesystem::path(a.model).stem().string() + "-profile.json";
}

int run_profile(ProfileArgs a, const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
  if (a.device.empty()) a.device = runtime::default_device();
  runtime::check_device(a.device);
  if (a.cluster.empty()) a.cluster = a.device == "cuda" ? "h100-sxm" : "cpu";
  if (std::optional<WorkerPlace> place = worker_place(std::nullopt)) return profile_worker(a, *place, out, err);
  // Before any worker starts: the flags, the model, the database.
  planner::parse_precision(a.dtype);
  (void)planner::load_cluster(a.cluster);
  (void)threads_for(a);
  (void)import_model(a);
  runtime::check_local_gpus(a.device, a.gpus, "--gpus");
  const std::string path = profile_output(a);
  if (std::filesystem::exists(path)) {  // corrupt, or (on CPU) another machine's: exit 2 now
    if (a.device == "cpu") (void)existing(path, device_id(*runtime::make_backend("cpu", runtime::BackendOptions{1, 0})));
    else (void)read_profile(path);
  } else if (!std::ofstream(path)) {
    throw InputError(path + ": cannot be written");
  } else {
    std::filesystem::remove(path);
  }
  if (a.gpus == 1) return profile_worker(a, WorkerPlace{}, out, err);
  return launch_workers(argv, a.gpus, err, [&](const std::string&, std::vector<std::string>& worker_argv) {
    if (a.threads <= 0) worker_argv.insert(worker_argv.end(), {"--threads", std::to_string(threads_for(a))});
    out << std::flush;
    return 0;
  });
}

}  // namespace tensoropt::cli
