#include "launcher/elastic/worker.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <memory>
#include <ostream>
#include <thread>

#include <nlohmann/json.hpp>

#include "graph/units.h"
#include "launcher/elastic/control.h"
#include "launcher/launch/group.h"
#include "launcher/runtime/backend_registry.h"
#include "launcher/runtime/data.h"
#include "launcher/train/worker.h"
#include "launcher/train/worker_parts.h"

namespace tensoropt {
namespace {

using Clock = std::chrono::steady_clock;
using runtime::Array;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
double wall_now() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

int env_generation() {
  const char* v = std::getenv("TENSOROPT_GENERATION");
  return v ? std::atoi(v) : 0;
}

// The automatic checkpoints' first step, and their least interval.
constexpr int64_t kAutoCheckpointSteps = 100;

std::string group_prefix(int generation) { return std::string("g").append(std::to_string(generation)); }

// A joining worker waits for the launcher's go-ahead to its generation (it dies with the launcher,
// which stops it when the job ends first).
void wait_for_switch(const std::string& control, int generation) {
  while (true) {
    if (std::optional<nlohmann::ordered_json> sw = control::read_json(control + "/switch.json"); sw && sw->value("generation", 0) >= generation) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// The arrays of one dtype moved as one: packed into one buffer on the root, broadcast, unpacked
// elsewhere (a broadcast per tensor would pay the collective's latency a hundred times).
void broadcast_packed(comm::Communicator& c, runtime::Backend& backend, const std::vector<Array*>& arrays) {
  if (arrays.empty()) return;
  int64_t total = 0;
  for (const Array* a : arrays) total += a->numel();
  Array packed(arrays.front()->dtype(), {total}, backend.allocator(), runtime::MemoryKind::Transients);
  const auto each = [&](bool pack) {
    int64_t at = 0;
    for (Array* a : arrays) {
      Array flat = a->view({a->numel()});
      if (pack) backend.copy_slab(flat, 0, 0, packed, at, a->numel());
      else backend.copy_slab(packed, 0, at, flat, 0, a->numel());
      at += a->numel();
    }
  };
  if (c.rank() == 0) each(true);
  c.broadcast(packed.raw(), total, packed.dtype(), 0, c.world());
  if (c.rank() != 0) each(false);
}

// The whole model and optimizer state into `arrays` and `state` for the new generation. Growing
// (`grow`: the group has joining workers), rank 0 sends its whole model, optimizer state and step
// count to every worker (a collective); a joining worker receives into `arrays`' own (load_state's)
// arrays and new optimizer slots. Shrinking, each survivor has them already (gather_whole).
void share_whole(comm::Communicator& c, runtime::Backend& backend, bool grow, size_t tensors, std::map<int, Array>& whole,
                 std::map<int, std::vector<Array>>& state, int64_t& steps, std::map<int, Array>& arrays) {
  if (!grow) {
    for (auto& [t, a] : whole) arrays[t] = a;
    whole.clear();
    return;
  }
  // One message: the step count, how many tensors and optimizer states follow, their tensors and
  // slot counts; its length bounded by the graph's tensor count, which every worker knows.
  std::vector<int64_t> keys(3 + 3 * tensors, 0);
  if (c.rank() == 0) {
    keys[0] = steps;
    keys[1] = static_cast<int64_t>(whole.size());
    keys[2] = static_cast<int64_t>(state.size());
    size_t at = 3;
    for (const auto& [t, a] : whole) keys[at++] = t;
    for (const auto& [t, slots] : state) {
      keys[at++] = t;
      keys[at++] = static_cast<int64_t>(slots.size());
    }
  }
  c.broadcast(keys.data(), static_cast<int64_t>(keys.size()), DType::I64, 0, c.world());
  steps = keys[0];
  const std::vector<int64_t> head = {keys[0], keys[1], keys[2]};
  keys.erase(keys.begin(), keys.begin() + 3);
  std::map<DType, std::vector<Array*>> by_dtype;
  for (int64_t i = 0; i < head[1]; ++i) {
    const int t = static_cast<int>(keys[static_cast<size_t>(i)]);
    if (whole.count(t)) arrays[t] = whole.at(t);
    by_dtype[arrays.at(t).dtype()].push_back(&arrays.at(t));
  }
  for (int64_t i = 0; i < head[2]; ++i) {
    const int t = static_cast<int>(keys[static_cast<size_t>(head[1] + 2 * i)]);
    const auto count = static_cast<size_t>(keys[static_cast<size_t>(head[1] + 2 * i + 1)]);
    std::vector<Array>& slots = state[t];
    const Array& like = arrays.at(t);
    while (slots.size() < count) slots.emplace_back(like.dtype(), like.shape(), backend.allocator(), runtime::MemoryKind::OptimizerState);
    for (Array& slot : slots) by_dtype[slot.dtype()].push_back(&slot);
  }
  for (auto& [dtype, list] : by_dtype) broadcast_packed(c, backend, list);
  whole.clear();
}

}  // namespace

int run_elastic_worker(const TrainSettings& s, const WorkerPlace& start, std::ostream& out, std::ostream& err) {
  (void)err;  // a worker's errors are exceptions, reported by main
  const std::string& control = s.elastic.control;
  WorkerPlace place = start;
  int generation = env_generation();
  // A generation started again from the job's checkpoint after a worker was lost, or one joining
  // a running group.
  const bool restarted = std::getenv("TENSOROPT_RESTART") != nullptr;
  const bool joined = generation > 0 && !restarted;
  const std::string checkpoint = control + "/checkpoint.onnx";
  const bool lead = place.rank == 0;
  const int threads = kernel_threads(s);
  planner::StoredStrategy stored = checked_point(s, place.world);
  const planner::PlanSettings first_settings = point_settings(s, stored);
  const Graph g = import_for(s, first_settings);
  const std::unique_ptr<runtime::Backend> device = runtime::make_backend(s.device, runtime::BackendOptions{threads, place.local_rank});
  runtime::Backend& backend = *device;
  std::unique_ptr<runtime::DataSource> data = s.data ? runtime::npy_data(g, s.loss, *s.data, *s.labels, backend)
                                                     : runtime::synthetic_data(g, s.loss, s.seed, backend);
  // The model's arrays (shards of the parameters while a generation trains); `whole` and `state`
  // carry the whole model and optimizer state from one generation to the next.
  std::map<int, Array> arrays, whole;
  std::map<int, std::vector<Array>> state;
  int64_t steps_done = 0;
  {
    runtime::LoadedState loaded = runtime::load_state(g, s.model, backend, s.seed);
    if (!joined) {
      TrainSettings from = s;
      if (restarted && std::filesystem::exists(checkpoint)) from.resume = checkpoint;
      Resumed resumed = read_checkpoint(from, g, backend, loaded);
      if (resumed.had_state) state = std::move(resumed.state);
      steps_done = resumed.steps;
    }
    arrays = std::move(loaded.arrays);  // a joining worker's values come from rank 0
  }
  if (joined) {
    control::write_json(control::ready_path(control, generation, place.rank), {{"pid", getpid()}});
    wait_for_switch(control, generation);
  }
  bool from_whole = joined;
  // The report's steps of the generations before, the resizes and the recoveries from lost
  // workers; a restarted generation reads them from the history written with the checkpoint (its
  // steps up to the checkpoint's) and adds what the launcher says was lost.
  nlohmann::ordered_json steps = nlohmann::ordered_json::array(), resizes = nlohmann::ordered_json::array(),
                         recoveries = nlohmann::ordered_json::array();
  if (restarted && lead) {
    if (const std::optional<nlohmann::ordered_json> history = control::read_json(control + "/history.json")) {
      for (const auto& e : history->value("steps", nlohmann::ordered_json::array()))
        if (e.value("step", int64_t{0}) <= steps_done) steps.push_back(e);
      resizes = history->value("resizes", nlohmann::ordered_json::array());
      recoveries = history->value("recoveries", nlohmann::ordered_json::array());
    }
    nlohmann::ordered_json lost = control::read_json(control + "/recovery.json").value_or(nlohmann::ordered_json::object());
    const int64_t seen = lost.value("at_step", int64_t{0});
    lost["resumed_from_step"] = steps_done;
    lost["redone_steps"] = std::max<int64_t>(0, seen - steps_done);
    recoveries.push_back(lost);
    out << "resumed  from " << (steps_done > 0 ? "the checkpoint at step " + std::to_string(steps_done) : std::string("the start"))
        << " with " << place.world << " workers; " << lost["redone_steps"].get<int64_t>() << " steps are done again\n";
  }
  // The resize under way: when the old group stopped, what it had, and when it was asked for.
  Clock::time_point handover_from{};
  double requested_at = 0;
  int from_workers = joined ? 0 : place.world;
  int64_t at_step = 0;
  const bool bf16 = first_settings.training.precision == planner::Precision::Bf16;
  // The group of the generation running, and the one before it being closed beside the next one's
  // start (closing Gloo's contexts waits for their threads: tens of milliseconds).
  std::unique_ptr<Group> group;
  std::future<std::unique_ptr<Group>> next_group;  // the next generation's, met during the last step
  std::thread retiring;
  const auto retire = [&] {
    if (retiring.joinable()) retiring.join();
    retiring = std::thread([old = std::move(group)]() mutable { old.reset(); });
  };
  struct JoinAtExit {
    std::thread& t;
    ~JoinAtExit() {
      if (t.joinable()) t.join();
    }
  } join_at_exit{retiring};
  while (true) {
    stored = checked_point(s, place.world);
    const planner::PlanSettings ps = point_settings(s, stored);
    const profiler::ProfileCosts costs = run_costs(s, ps.training.precision, place.world, threads, &backend);
    const PointPrediction predicted = predict_for(s, g, ps, stored, threads, costs);
    if (group) retire();
    group = next_group.valid() ? next_group.get() : std::make_unique<Group>(join_group(place, backend, group_prefix(generation)));
    comm::Communicator& communicator = *group->timed;
    const runtime::Sharding sh{runtime::MeshContext{&predicted.mesh, place.rank, &communicator}, predicted.sharding};
    if (from_whole) share_whole(communicator, backend, place.world > from_workers, g.tensors.size(), whole, state, steps_done, arrays);
    for (auto& [t, a] : arrays)
      if (g.tensors[static_cast<size_t>(t)].kind == TensorKind::Parameter) a = runtime::home_shard(sh, g, t, a, backend, runtime::MemoryKind::Parameters);
    runtime::ShardedExecutor ex(g, backend, arrays, sh, s.loss, bf16);
    runtime::Optimizer optimizer(s.optimizer, backend, ex.optimizer_weights(), ex.gradient_tensors());
    if (!state.empty()) ex.scatter_state(state, optimizer);
    state.clear();
    optimizer.set_steps(steps_done);
    backend.allocator().reset_peaks();
    if (lead) {
      if (!from_whole) out << model_line(s, g.batch, bf16);
      out << "workers  " << place.world << " (" << place.from << ", elastic " << s.elastic.min_gpus << ".." << s.elastic.max_gpus << ", control "
          << control << "), " << backend.name() << ", " << threads << " thread(s) each, " << group->tensors_over << "; mesh " << predicted.mesh.str()
          << "\n";
      out << "strategy " << stored.where << "\n" << std::flush;
      if (from_whole) {
        const double pause = seconds_since(handover_from), asked = wall_now() - requested_at;
        resizes.push_back({{"from", from_workers}, {"to", place.world}, {"at_step", at_step}, {"pause_s", pause}, {"request_to_first_step_s", asked}});
        out << "resized  " << from_workers << " -> " << place.world << " workers after step " << at_step << ": paused " << human_seconds(pause)
            << ", " << human_seconds(asked) << " from the request\n" << std::flush;
      }
    }
    // Rank 0 writes the status after a generation's first step, then at most every 0.2 s. The
    // group learns whether to hand over at check steps: every step at first, then about every
    // 0.2 s of steps (one broadcast of a few integers each: on this machine's Gloo a step's worth
    // of latency, so not every step), rank 0 telling the others the next one.
    int next = 0;
    int64_t next_check = steps_done + 1;
    // Checkpoints: every --checkpoint-every K steps; by default (K < 0) at the first multiple of
    // 100 steps, then as often as keeps them near 0.5% of the time (the interval at least 100 steps);
    // K = 0, never. Rank 0 names the next one at each check, and checks fall on it.
    const int64_t every = s.elastic.checkpoint_every;
    const int64_t first_every = every > 0 ? every : kAutoCheckpointSteps;
    int64_t next_checkpoint = every == 0 ? std::numeric_limits<int64_t>::max() : (steps_done / first_every + 1) * first_every;
    double checkpoint_seconds = 0;
    Clock::time_point last_status{}, last_step = Clock::now();
    std::vector<double> intervals;
    const auto status = [&](int64_t step, bool finished) {
      std::vector<double> sorted = intervals;
      std::sort(sorted.begin(), sorted.end());
      control::write_json(control + "/status.json",
                          {{"generation", generation}, {"step", step}, {"steps", s.steps}, {"workers", place.world},
                           {"samples", step * g.batch}, {"point", stored.where}, {"mesh", predicted.mesh.str()},
                           {"predicted_step_s", predicted.cost.time}, {"measured_step_s", sorted.empty() ? 0.0 : sorted[sorted.size() / 2]},
                           {"resizes", resizes}, {"recoveries", recoveries}, {"finished", finished}});
      last_status = Clock::now();
    };
    LoopOptions lo;
    lo.first = steps_done + 1;
    lo.count = s.steps - steps_done;
    lo.batch = g.batch;
    lo.out = lead ? &out : nullptr;
    lo.memory_in_report = false;
    lo.blocked_clock = [&group] { return group->timed->blocked_seconds(); };
    int64_t switch_after = 0;
    lo.stop_after = [&](int64_t step, const nlohmann::ordered_json& these) {
      intervals.push_back(seconds_since(last_step));
      if (step == next_checkpoint && step < s.steps) {
        const Clock::time_point checkpoint_from = Clock::now();
        // The history first, then the checkpoint: a restart keeps the history's steps up to the
        // checkpoint's, so a history newer than the checkpoint is still right.
        if (lead) {
          nlohmann::ordered_json all = steps;
          for (nlohmann::ordered_json e : these) {
            e["workers"] = place.world;
            all.push_back(std::move(e));
          }
          control::write_json(control + "/history.json", {{"steps", all}, {"resizes", resizes}, {"recoveries", recoveries}});
        }
        TrainSettings to = s;
        to.save = checkpoint;
        std::ostream quiet(nullptr);
        save_whole(to, g, backend, ex, optimizer, communicator, lead, quiet);
        checkpoint_seconds = seconds_since(checkpoint_from);
      }
      last_step = Clock::now();
      if (lead && step < s.steps && (step == lo.first || seconds_since(last_status) > 0.2)) status(step, false);
      if (step == switch_after) {
        handover_from = Clock::now();
        at_step = step;
        from_workers = place.world;
        return true;
      }
      if (step != next_check) return false;
      int64_t message[4] = {0, 0, 0, next_checkpoint};
      if (lead) {
        std::optional<nlohmann::ordered_json> sw = control::read_json(control + "/switch.json");
        if (sw && sw->value("generation", 0) == generation + 1 && step + 1 < s.steps) {
          message[0] = 1;
          message[1] = sw->value("workers", 0);
          requested_at = sw->value("requested_at", wall_now());
          status(step, false);
        }
        std::vector<double> sorted = intervals;
        std::sort(sorted.begin(), sorted.end());
        const double typical = std::max(sorted[sorted.size() / 2], 1e-6);
        // The next check about 0.2 s of steps on, and no later than the next checkpoint; at a
        // go-ahead, the step to hand over after, about 0.05 s on.
        const auto ahead = [&](double seconds) { return intervals.size() < 3 ? 1 : std::clamp<int64_t>(static_cast<int64_t>(seconds / typical), 1, 10000); };
        if (step >= next_checkpoint) {
          const int64_t interval = every > 0 ? every : std::max<int64_t>(kAutoCheckpointSteps, static_cast<int64_t>(std::ceil(200 * checkpoint_seconds / typical)));
          message[3] = step + interval;
        }
        message[2] = message[0] ? std::min(step + ahead(0.05), s.steps - 1) : std::min(step + ahead(0.2), message[3]);
      }
      group->gloo->broadcast(message, 4, DType::I64, 0, group->gloo->world());
      next_check = message[2];
      next_checkpoint = message[3];
      if (message[0] == 0) return false;
      // The go-ahead: a few more steps here (about 0.05 s) while the workers staying meet the
      // joining ones as the next generation (its rendezvous overlaps them), then the handover.
      next = static_cast<int>(message[1]);
      switch_after = message[2];
      if (place.rank < next) {
        WorkerPlace staying = place;
        staying.world = next;
        next_group = std::async(std::launch::async, [staying, &backend, prefix = group_prefix(generation + 1)] {
          return std::make_unique<Group>(join_group(staying, backend, prefix));
        });
      }
      return false;
    };
    const LoopResult loop = run_steps(*data, backend.allocator(), runtime::StepContext{&backend.allocator(), true, s.seed, 0, threads},
                                      sharded_step(ex, optimizer, backend), lo);
    for (const auto& entry : loop.steps) {
      nlohmann::ordered_json e = entry;
      e["workers"] = place.world;
      steps.push_back(std::move(e));
    }
    if (next == 0) {  // every step done
      if (s.save) save_whole(s, g, backend, ex, optimizer, communicator, lead, out);
      const std::vector<double> all = gather_figures(loop, backend.allocator(), *group->gloo, place.world);
      if (!lead) return 0;
      status(optimizer.steps(), true);
      const ReportPair against = print_group_table(out, predicted, all, place.world);
      if (s.report) {
        nlohmann::ordered_json report = report_head(s, g, stored, backend, place.world, threads, costs);
        report["resizes"] = resizes;
        report["recoveries"] = recoveries;
        finish_report(report, bf16 ? "bf16" : "fp32", steps, against, *s.report);
      }
      return 0;
    }
    // The handover: every worker of this generation gathers the whole state; those not in the
    // next one leave.
    whole = ex.gather_whole(optimizer, state);
    steps_done = optimizer.steps();
    if (place.rank >= next) return 0;
    place.world = next;
    ++generation;
    from_whole = true;
  }
}

}  // namespace tensoropt
