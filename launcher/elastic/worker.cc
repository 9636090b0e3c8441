#include "launcher/elastic/worker.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <ostream>
#include <thread>

#include <nlohmann/json.hpp>

#include "graph/error.h"
#include "graph/units.h"
#include "launcher/elastic/control.h"
#include "launcher/elastic/handover.h"
#include "launcher/elastic/history.h"
#include "launcher/elastic/meeting.h"
#include "launcher/elastic/reshard.h"
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
// How long a worker whose group broke waits for the launcher to name the next one: past two
// communicator timeouts (a member may wait one out in a collective, then in a rendezvous).
constexpr double kRegroupWaitSeconds = 90;

// The launcher regrouped the job while this generation ran whole (a joining worker was lost).
struct RegroupAsked {};
constexpr const char* kAsked = "the launcher regrouped the job";

// A worker count's plan point: what it runs and how fast it is predicted to.
struct Point {
  planner::StoredStrategy stored;
  planner::PlanSettings settings;
  profiler::ProfileCosts costs;
  PointPrediction predicted;
};

// How a generation begins.
enum class Entry {
  Start,    // from the model file or the job's checkpoint (a restart)
  Resize,   // from the whole state the group before handed over
  Regroup,  // after a lost worker: from the latest whole state a member holds
};

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
  const int threads = kernel_threads(s);
  const planner::PlanSettings first_settings = point_settings(s, checked_point(s, place.world));
  const Graph g = import_for(s, first_settings);
  const std::unique_ptr<runtime::Backend> device = runtime::make_backend(s.device, runtime::BackendOptions{threads, place.local_rank});
  runtime::Backend& backend = *device;
  // Every count's point, worked out before training (a few milliseconds each): a handover waits
  // for none.
  std::map<int, Point> points;
  for (int n = s.elastic.min_gpus; n <= std::max(s.elastic.max_gpus, place.world); ++n) {
    planner::StoredStrategy stored = checked_point(s, n);
    planner::PlanSettings settings = point_settings(s, stored);
    profiler::ProfileCosts costs = run_costs(s, settings.training.precision, n, threads, &backend);
    PointPrediction predicted = predict_for(s, g, settings, stored, threads, costs);
    points.emplace(n, Point{std::move(stored), std::move(settings), std::move(costs), std::move(predicted)});
  }
  const auto holding_of = [&](int n) {
    const PointPrediction& p = points.at(n).predicted;
    return elastic::Holding{p.mesh, p.sharding.home, n};
  };
  std::unique_ptr<runtime::DataSource> data = s.data ? runtime::npy_data(g, s.loss, *s.data, *s.labels, backend)
                                                     : runtime::synthetic_data(g, s.loss, s.seed, backend);
  // The model's arrays (shards of the parameters while a generation trains); `whole` and `state`
  // carry the whole model and optimizer state to the next generation (a restart's checkpoint, a
  // replica after a lost worker); `buffers` the buffers whole through a handover.
  std::map<int, Array> arrays, whole, buffers;
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
  // A joining worker's part of the handover: the old group's point, whose holders send it its shards.
  std::optional<elastic::Holding> joined_from;
  if (joined) {
    control::write_json(control::ready_path(control, generation, place.rank), {{"pid", getpid()}});
    joined_from = holding_of(elastic::wait_for_switch(control, generation));
  }
  // The report's steps of the generations before, the resizes and the recoveries from lost
  // workers, kept by every worker (any may lead after a loss); a restarted generation reads them
  // from the history written with the checkpoint (its steps up to the checkpoint's) and adds what
  // the launcher says was lost.
  elastic::History history;
  if (restarted) {
    if (const std::optional<nlohmann::ordered_json> written = control::read_json(control + "/history.json")) {
      history = elastic::History::from_json(*written);
      history.keep_until(steps_done);
    }
    nlohmann::ordered_json lost = control::read_json(control + "/recovery.json").value_or(nlohmann::ordered_json::object());
    const int64_t seen = lost.value("at_step", int64_t{0});
    lost["resumed_from_step"] = steps_done;
    lost["redone_steps"] = std::max<int64_t>(0, seen - steps_done);
    lost["source"] = "checkpoint";
    history.recoveries.push_back(lost);
    if (place.rank == 0)
      out << "resumed  from " << (steps_done > 0 ? "the checkpoint at step " + std::to_string(steps_done) : std::string("the start"))
          << " with " << place.world << " workers; " << lost["redone_steps"].get<int64_t>() << " steps are done again\n";
  }
  Entry entry = joined ? Entry::Resize : Entry::Start;
  bool grow = joined;          // a Resize: the group grows (its joining workers receive the state)
  int64_t reached = steps_done;  // the last step this worker completed
  nlohmann::ordered_json lost_info;  // a Regroup's: what the launcher says was lost
  Clock::time_point broke_at{};      // when this worker's group broke
  // This worker's part of the model carried between generations: its LocalShards under
  // `shards_of`'s point as rank `shards_rank`, at step steps_done (a handover under way, or what a
  // broken group held); `shards_ready`: under the point of the generation starting.
  std::optional<runtime::LocalShards> shards;
  std::optional<elastic::Holding> shards_of = joined_from;
  int shards_rank = 0;
  bool shards_ready = false;
  // The resize under way: when the old group stopped, what it had, and when it was asked for.
  Clock::time_point handover_from{};
  double requested_at = 0;
  int from_workers = joined ? 0 : place.world;
  int64_t at_step = 0;
  const bool bf16 = first_settings.training.precision == planner::Precision::Bf16;
  // The group of the generation running; the next one met beside its last steps; the ones before
  // closed on side threads (closing Gloo's contexts waits for their threads: tens of milliseconds;
  // a broken group's close also ends its peers' waits on this worker).
  std::unique_ptr<Group> group;
  elastic::Meeting next_group;
  std::vector<std::thread> retiring;
  const auto retire = [&] {
    if (group) retiring.emplace_back([old = std::move(group)]() mutable { old.reset(); });
  };
  struct JoinAtExit {
    std::vector<std::thread>& threads;
    ~JoinAtExit() {
      for (std::thread& t : threads)
        if (t.joinable()) t.join();
    }
  } join_at_exit{retiring};
  while (true) {
    const bool lead = place.rank == 0;
    const planner::StoredStrategy& stored = points.at(place.world).stored;
    const profiler::ProfileCosts& costs = points.at(place.world).costs;
    const PointPrediction& predicted = points.at(place.world).predicted;
    const elastic::Holding holding = holding_of(place.world);
    std::unique_ptr<runtime::Sharding> sh;
    std::unique_ptr<runtime::ShardedExecutor> ex;
    std::unique_ptr<runtime::Optimizer> optimizer;
    int next = 0;  // the workers of the next generation, at a go-ahead
    int64_t generation_from = 0;  // the step this generation's executor started from
    std::string why;  // what broke the generation
    try {
      retire();
      if (!next_group.valid()) next_group.start(place, backend, generation);
      group = next_group.wait(control, generation);
      comm::Communicator& communicator = *group->timed;
      if (entry == Entry::Regroup) {
        elastic::Held held;
        held.whole_step = whole.empty() ? -1 : steps_done;
        held.reached = reached;
        held.history = static_cast<int64_t>(history.steps.size());
        // The shards held are this generation's own where they are the same point's, for the same rank.
        if (shards && shards_of && shards_of->workers == place.world && shards_rank == place.rank) held.shard_step = steps_done;
        const elastic::Agreement a = elastic::agree(*group->gloo, held);
        if (a.root < 0 && !a.shards) {
          if (lead) out << "regroup  no worker left holds the whole state (the lost one held a part of it): restarting from the checkpoint\n" << std::flush;
          return control::kExitNoReplica;
        }
        if (a.shards) {
          whole.clear();
          shards_ready = true;
        } else {
          shards.reset();
          elastic::share_whole(communicator, backend, g, a.root, whole, state, steps_done, arrays, /*into_held=*/false);
        }
        steps_done = a.step;
        nlohmann::ordered_json shared = history.to_json();
        elastic::share_history(*group->gloo, a.history_root, shared);
        history = elastic::History::from_json(shared);
        history.keep_until(steps_done);
        lost_info["to"] = place.world;
        lost_info["at_step"] = a.reached;
        lost_info["resumed_from_step"] = steps_done;
        lost_info["redone_steps"] = std::max<int64_t>(0, a.reached - steps_done);
        lost_info["source"] = "replicas";
        lost_info["pause_s"] = seconds_since(broke_at);
        history.recoveries.push_back(lost_info);
        reached = steps_done;
        if (lead)
          out << "regroup  " << place.world << " workers go on from the state at step " << steps_done
              << (a.shards ? std::string(" that each held") : " that worker " + std::to_string(a.root) + " held") << "; "
              << lost_info["redone_steps"].get<int64_t>() << " steps are done again\n" << std::flush;
      } else if (entry == Entry::Resize && grow) {
        // The buffers and the step count from rank 0 to the joining workers, then every
        // parameter's shards from the old point's holders to the new point's.
        elastic::share_whole(communicator, backend, g, 0, buffers, state, steps_done, arrays, /*into_held=*/true);
        shards = elastic::reshard(communicator, backend, g, *shards_of, holding, shards ? *shards : runtime::LocalShards{});
        shards_ready = true;
      } else if (entry == Entry::Resize) {
        for (auto& [t, a] : buffers) arrays[t] = a;
        buffers.clear();
      }
      sh = std::make_unique<runtime::Sharding>(runtime::Sharding{runtime::MeshContext{&predicted.mesh, place.rank, &communicator}, predicted.sharding});
      const bool own = shards && shards_ready;  // this worker's shards of this point, no slicing
      for (auto& [t, a] : arrays) {
        if (g.tensors[static_cast<size_t>(t)].kind != TensorKind::Parameter) continue;
        if (own && shards->params.count(t)) a = shards->params.at(t);
        else a = runtime::home_shard(*sh, g, t, a, backend, runtime::MemoryKind::Parameters);
      }
      ex = std::make_unique<runtime::ShardedExecutor>(g, backend, arrays, *sh, s.loss, bf16);
      optimizer = std::make_unique<runtime::Optimizer>(s.optimizer, backend, ex->optimizer_weights(), ex->gradient_tensors());
      if (own) ex->scatter_state(shards->slots, *optimizer, /*local=*/true);
      else if (!state.empty()) ex->scatter_state(state, *optimizer);
      state.clear();
      shards.reset();
      shards_ready = false;
      optimizer->set_steps(steps_done);
      generation_from = steps_done;
      ex->keep_step_start(true);
      backend.allocator().reset_peaks();
      if (lead) {
        if (entry == Entry::Start) out << model_line(s, g.batch, bf16);
        out << "workers  " << place.world << " (" << place.from << ", elastic " << s.elastic.min_gpus << ".." << s.elastic.max_gpus << ", control "
            << control << "), " << backend.name() << ", " << threads << " thread(s) each, " << group->tensors_over << "; mesh " << predicted.mesh.str()
            << "\n";
        out << "strategy " << stored.where << "\n" << std::flush;
      }
      // Every worker of the group before keeps the resize (any may lead after a loss).
      if (entry == Entry::Resize && from_workers > 0) {
        const double pause = seconds_since(handover_from), asked = wall_now() - requested_at;
        history.resizes.push_back({{"from", from_workers}, {"to", place.world}, {"at_step", at_step}, {"pause_s", pause}, {"request_to_first_step_s", asked}});
        if (lead)
          out << "resized  " << from_workers << " -> " << place.world << " workers after step " << at_step << ": paused " << human_seconds(pause)
              << ", " << human_seconds(asked) << " from the request\n" << std::flush;
      }
      // Rank 0 writes the status after a generation's first step, then at most every 0.2 s. The
      // group learns whether to hand over at check steps: every step at first, then about every
      // 0.2 s of steps (one broadcast of a few integers each: on this machine's Gloo a step's worth
      // of latency, so not every step), rank 0 telling the others the next one.
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
                             {"resizes", history.resizes}, {"recoveries", history.recoveries}, {"finished", finished}});
        last_status = Clock::now();
      };
      LoopOptions lo;
      lo.first = steps_done + 1;
      lo.count = s.steps - steps_done;
      lo.batch = g.batch;
      lo.out = lead ? &out : nullptr;
      lo.memory_in_report = false;
      lo.blocked_clock = [&group] { return group->timed->blocked_seconds(); };
      // --kernel-times: the last generation's kernels (rank 0's, as run's).
      const std::unique_ptr<runtime::KernelTimer> timer = s.kernel_times && lead ? backend.kernel_timer() : nullptr;
      lo.timer = timer.get();
      int64_t switch_after = 0;
      lo.stop_after = [&](int64_t step, double loss, double took) {
        intervals.push_back(seconds_since(last_step));
        reached = step;
        history.steps.push_back({step, loss, took, place.world});
        if (step == next_checkpoint && step < s.steps) {
          const Clock::time_point checkpoint_from = Clock::now();
          // The history first, then the checkpoint: a restart keeps the history's steps up to the
          // checkpoint's, so a history newer than the checkpoint is still right.
          if (lead) control::write_json(control + "/history.json", history.to_json());
          TrainSettings to = s;
          to.save = checkpoint;
          std::ostream quiet(nullptr);
          save_whole(to, g, backend, *ex, *optimizer, communicator, lead, quiet);
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
        // message: what to do (0 train on, 1 hand over to message[1] workers after step message[2],
        // 2 regroup as the launcher says), the next check, the next checkpoint.
        int64_t message[4] = {0, 0, 0, next_checkpoint};
        if (lead) {
          std::optional<nlohmann::ordered_json> sw = control::read_json(control + "/switch.json");
          if (elastic::regroup_after(control, generation)) {
            message[0] = 2;
          } else if (sw && sw->value("generation", 0) == generation + 1 && step + 1 < s.steps) {
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
        if (message[0] == 2) throw RegroupAsked{};
        next_check = message[2];
        next_checkpoint = message[3];
        if (message[0] == 0) return false;
        if (!lead)
          if (std::optional<nlohmann::ordered_json> sw = control::read_json(control + "/switch.json"))
            requested_at = sw->value("requested_at", wall_now());
        // The go-ahead: a few more steps here (about 0.05 s) while the workers staying meet the
        // joining ones as the next generation (its rendezvous overlaps them), then the handover.
        next = static_cast<int>(message[1]);
        switch_after = message[2];
        if (place.rank < next) {
          WorkerPlace staying = place;
          staying.world = next;
          next_group.start(staying, backend, generation + 1);
        }
        return false;
      };
      const LoopResult loop = run_steps(*data, backend.allocator(), runtime::StepContext{&backend.allocator(), true, s.seed, 0, threads},
                                        sharded_step(*ex, *optimizer, backend), lo);
      if (next == 0) {  // every step done
        if (s.save) save_whole(s, g, backend, *ex, *optimizer, communicator, lead, out);
        const std::vector<double> all = gather_figures(loop, backend.allocator(), *group->gloo, place.world);
        if (!lead) return 0;
        status(optimizer->steps(), true);
        const ReportPair against = print_group_table(out, predicted, all, place.world);
        nlohmann::ordered_json kernel_times;
        if (timer) kernel_times = print_kernel_times(out, *timer, loop.seconds);
        if (s.report) {
          nlohmann::ordered_json report = report_head(s, g, stored, backend, place.world, threads, costs);
          report["resizes"] = history.resizes;
          report["recoveries"] = history.recoveries;
          if (timer) report["kernel_times"] = kernel_times;
          finish_report(report, bf16 ? "bf16" : "fp32", history.report_steps(*data, g.batch), against, *s.report);
        }
        return 0;
      }
      // The handover: every worker takes its shards of the parameters and optimizer state (ZeRO-2
      // chunks gathered) and the buffers whole; shrinking, the shards move to the next point's
      // within this group, and those not in the next one leave; growing, they move once the next
      // group has met.
      shards = ex->local_shards(*optimizer, /*gather=*/true);
      buffers = ex->gather_buffers();
      steps_done = optimizer->steps();
      shards_of = holding;
      shards_rank = place.rank;
      optimizer.reset();
      ex.reset();
      grow = next > place.world;
      if (!grow) {
        shards = elastic::reshard(communicator, backend, g, *shards_of, holding_of(next), *shards);
        if (place.rank >= next) return 0;
        shards_of = holding_of(next);
        shards_ready = true;
      }
      place.world = next;
      ++generation;
      entry = Entry::Resize;
      continue;
    } catch (const comm::CommError& e) {
      why = e.what();
    } catch (const RegroupAsked&) {
      why = kAsked;
    }
    // A member was lost (a collective with it failed), or the launcher regrouped the job while
    // this group was whole. This worker keeps the whole state it holds: handed over already, or
    // its replica (data parallelism keeps one per worker); the group is closed (which ends its
    // peers' waits on this worker), and the launcher names the next one (regroup.json).
    // A step this worker began and did not complete moved the running statistics only.
    if (ex && optimizer && ex->steps_begun() > optimizer->steps() - generation_from) ex->rewind_buffers();
    if (whole.empty() && ex) {
      state.clear();
      if (std::optional<std::map<int, Array>> mine = ex->local_whole(*optimizer, state)) {
        whole = std::move(*mine);
        steps_done = optimizer->steps();
      } else {
        state.clear();
      }
    }
    if (!shards && ex) {
      // This worker's shards (ZeRO-2 chunks gathered only where the group is whole: a regroup asked
      // for, which every member reaches at the same step).
      shards = ex->local_shards(*optimizer, /*gather=*/why == kAsked);
      shards_of = holding;
      shards_rank = place.rank;
      steps_done = optimizer->steps();
    }
    optimizer.reset();
    ex.reset();
    next_group.give_up();
    retire();
    const Clock::time_point since = Clock::now();
    broke_at = since;
    std::optional<nlohmann::ordered_json> r;
    while (!(r = elastic::regroup_after(control, generation))) {
      if (seconds_since(since) > kRegroupWaitSeconds) throw InternalError("worker " + std::to_string(place.rank) + ": " + why + "; the launcher named no new group");
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    const char* member = std::getenv("TENSOROPT_MEMBER");  // a worker another machine's join started
    const std::string me = member && *member ? member : std::to_string(getpid());
    if (!r->contains("ranks") || !r->at("ranks").contains(me)) return 0;  // not in the job any more
    place.rank = r->at("ranks").at(me).get<int>();
    place.world = r->value("workers", 1);
    generation = r->value("generation", generation + 1);
    lost_info = {{"lost_ranks", r->value("lost_ranks", nlohmann::ordered_json::array())}, {"how", r->value("how", "")},
                 {"at_step", reached}, {"from", r->value("from", 0)}};
    if (const int to = r->value("during_resize_to", 0); to > 0) lost_info["during_resize_to"] = to;
    entry = Entry::Regroup;
  }
}

}  // namespace tensoropt
