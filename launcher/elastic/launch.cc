#include "launcher/elastic/launch.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <ostream>
#include <thread>

#include "graph/error.h"
#include "launcher/elastic/control.h"
#include "launcher/elastic/remote.h"
#include "launcher/launch/local.h"
#include "launcher/launch/spawn.h"
#include "launcher/train/worker.h"

namespace tensoropt {
namespace {

using Clock = std::chrono::steady_clock;

// How long the workers left after a loss have to meet and take their first step before the
// launcher restarts them from the checkpoint: past a communicator timeout (30 s) waited out in a
// collective and one in the rendezvous.
constexpr std::chrono::seconds kRegroupSeconds{100};


double wall_now() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

// A worker: one this launcher started (its pid), or one another machine's `tensoropt join` runs
// (`remote`, its member name: the launcher knows it by its files, remote.h).
struct Member {
  pid_t pid = 0;
  int rank = 0, generation = 0;
  bool done = false;
  bool cancelled = false;  // stopped by the launcher: a resize abandoned, or the job ended first
  bool awaits_restart = false;  // left the regroup for a restart from the checkpoint
  std::string remote;
  int assigned = -1;                     // the generation its assign file names (its files carry it)
  bool stop_sent = false;
  std::shared_ptr<remote::Pulse> pulse;  // a remote member's beat
  std::string key() const { return remote.empty() ? std::to_string(pid) : remote; }  // regroup.json's name for it
};

// The wait status of a process killed by SIGKILL (a remote member whose machine stopped answering).
constexpr int kKilledStatus = SIGKILL;

// A resize under way: to `workers` as generation `generation`, from `from` workers.
struct Pending {
  int generation = 0, workers = 0, from = 0;
  double requested_at = 0;
  bool switched = false;  // the go-ahead is written
};

class Supervisor {
 public:
  Supervisor(const std::vector<std::string>& argv, const std::string& control, const std::string& store, const TrainSettings::Elastic& e,
             std::ostream& out, std::ostream& err)
      : argv_(argv), control_(control), store_(store), out_(out), err_(err), min_gpus_(e.min_gpus), max_gpus_(e.max_gpus),
        recoverable_(e.checkpoint_every != 0), rejoin_seconds_(e.rejoin_seconds) {}

  ~Supervisor() {  // a joining machine stops waiting
    try {
      control::write_json(control_ + "/ended.json", {{"at", wall_now()}});
    } catch (...) {
    }
  }

  int run(int gpus) {
    world_ = gpus;
    remote::beat(control_ + "/launcher.beat");
    for (int r = 0; r < gpus; ++r) members_.push_back(local(start_worker(argv_, r, gpus, store_, 0), r, 0));
    while (true) {
      reap();
      if (regrouping_ && !stopping_ && (no_replica_ || Clock::now() - regroup_since_ > kRegroupSeconds)) {
        if (const int code = restart(world_); code != 0) return code;
        continue;
      }
      if (std::all_of(members_.begin(), members_.end(), [](const Member& m) { return m.done; })) break;
      if (!stopping_ && (failed_ >= 0 || stop_signal())) stop_all();
      if (stopping_ && Clock::now() - stopping_since_ > std::chrono::seconds(5))
        for (Member& m : members_)
          if (!m.done) stop(m, SIGKILL, "the job stops");
      if (!lost_.empty() && !stopping_) {
        if (const int code = recover(); code != 0) return code;
        continue;
      }

      if (!stopping_) {
        follow_status();
        take_request();
        take_offers();
        go_ahead();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (stop_signal() && failed_ < 0) {
      err_ << "tensoropt: stopped by signal " << stop_signal() << "; every worker was stopped\n";
      return 130;
    }
    if (failed_ >= 0) {
      err_ << "tensoropt: error: rank " << failed_rank_ << " of " << failed_world_ << " " << how_it_ended(failed_status_)
           << "; the other workers were stopped\n";
      return WIFEXITED(failed_status_) && WEXITSTATUS(failed_status_) == 2 ? 2 : 1;
    }
    return 0;
  }

 private:
  // Every member that ended since the last sweep; of those that ended badly, a joining worker
  // before the go-ahead abandons its resize. Of the others, with a checkpoint being written, those
  // killed by a signal (SIGKILL, the OOM killer) are lost and the job goes on without them (recover;
  // a peer that then failed in a collective with one is no loss); any other ending takes the group
  // down, a killed one named before a peer that failed in a collective with it.
  // Touches launcher.beat when 0.2 s have passed: other machines' workers know the launcher lives.
  void keep_beating() {
    if (Clock::now() - last_beat_ < std::chrono::milliseconds(200)) return;
    remote::beat(control_ + "/launcher.beat");
    last_beat_ = Clock::now();
  }

  void reap() {
    keep_beating();  // reap runs in every wait of the launcher but one (restart's wait for a resize)
    bool signalled = false;
    std::vector<std::pair<size_t, int>> bad;  // member, wait status
    for (size_t i = 0; i < members_.size(); ++i) {
      Member& m = members_[i];
      if (m.done) continue;
      int status = 0;
      if (!ended(m, status)) continue;
      m.done = true;
      if (m.cancelled || (WIFEXITED(status) && WEXITSTATUS(status) == 0) || stopping_) continue;
      if (regrouping_ && WIFEXITED(status) && WEXITSTATUS(status) == control::kExitNoReplica) {
        no_replica_ = true;
        m.awaits_restart = true;  // another machine's worker is started again there
        continue;
      }
      if (pending_ && m.generation == pending_->generation && !pending_->switched) {
        err_ << "tensoropt: worker " << m.rank << " joining the job " << how_it_ended(status) << "; the resize to " << pending_->workers
             << " workers is abandoned, the job goes on with " << world_ << "\n";
        cancel(pending_->generation);
        pending_.reset();
        continue;
      }
      bad.emplace_back(i, status);
      signalled = signalled || WIFSIGNALED(status);
    }
    for (const auto& [i, status] : bad) {
      const Member& m = members_[i];
      if (signalled) {
        if (WIFSIGNALED(status)) lost_.push_back({m.rank, m.generation, how_it_ended(status)});
        continue;
      }
      if (failed_ < 0 || (WIFSIGNALED(status) && !WIFSIGNALED(failed_status_))) {
        failed_ = static_cast<int>(i);
        failed_rank_ = m.rank;
        failed_world_ = m.generation > generation_ && pending_ ? pending_->workers : world_;
        failed_status_ = status;
      }
    }
  }

  // A worker was lost. A resize under way is abandoned (its joining workers stopped); the workers
  // left meet as a new generation with the ranks regroup.json gives them and go on from the whole
  // state one of them holds (launcher/elastic/worker.h). Where none holds it, or fewer than
  // --min-gpus are left, or they do not meet, restart() starts them again from the checkpoint.
  // Returns 0, or the launcher's exit code when the job cannot go on.
  int recover() {
    follow_status();  // a resize the group completed since the last look is not one under way
    last_ranks_ = nlohmann::json::array();
    last_lost_.clear();
    for (const Lost& l : lost_) {
      last_lost_ += (last_lost_.empty() ? "" : ", ") + std::to_string(l.rank);
      last_how_ = l.how;
      last_ranks_.push_back(l.rank);
    }
    const bool joining = pending_ && std::all_of(lost_.begin(), lost_.end(), [&](const Lost& l) { return l.generation == pending_->generation; });
    const int resize_to = pending_ ? pending_->workers : 0;
    if (pending_) cancel(pending_->generation);
    const int generation = std::max(generation_, pending_ ? pending_->generation : 0) + 1;
    pending_.reset();
    lost_.clear();
    std::vector<Member*> left;
    for (Member& m : members_)
      if (!m.done && !m.cancelled) left.push_back(&m);
    std::sort(left.begin(), left.end(), [](const Member* a, const Member* b) { return a->rank < b->rank; });
    last_from_ = world_;
    const std::optional<nlohmann::ordered_json> status = control::read_json(control_ + "/status.json");
    last_step_ = status ? status->value("step", int64_t{0}) : 0;
    if (joining)
      out_ << "lost     joining worker " << last_lost_ << " (" << last_how_ << ") during the resize " << last_from_ << " -> " << resize_to
           << " after step " << last_step_ << ": the resize is abandoned\n" << std::flush;
    else
      out_ << "lost     rank " << last_lost_ << " of " << last_from_ << " (" << last_how_ << ") after step " << last_step_
           << (resize_to ? "; the resize to " + std::to_string(resize_to) + " workers under way is abandoned" : std::string()) << "\n" << std::flush;
    if (static_cast<int>(left.size()) < min_gpus_) return restart(static_cast<int>(left.size()));
    nlohmann::ordered_json ranks = nlohmann::ordered_json::object();
    for (size_t r = 0; r < left.size(); ++r) {
      ranks[left[r]->key()] = static_cast<int>(r);
      left[r]->rank = static_cast<int>(r);
      left[r]->generation = generation;
    }
    control::write_json(control_ + "/regroup.json", {{"generation", generation}, {"workers", left.size()}, {"ranks", ranks},
                                                     {"lost_ranks", last_ranks_}, {"how", last_how_}, {"from", last_from_}, {"during_resize_to", resize_to}});
    out_ << "regroup  the " << left.size() << " workers left meet as a new group\n" << std::flush;
    generation_ = generation;
    world_ = static_cast<int>(left.size());
    regrouping_ = generation;
    regroup_since_ = Clock::now();
    no_replica_ = false;
    return 0;
  }

  // The regroup failed (no worker holds the whole state, or they did not meet in time): every
  // worker is stopped and `workers` start again from the job's checkpoint (below --min-gpus, after
  // a bounded wait for a `resize` that brings the job there).
  int restart(int workers) {
    // Other machines' workers left go on there (their join processes start them again).
    std::vector<Member> remote_left;
    for (Member& m : members_) {
      if (m.done && m.awaits_restart && !m.remote.empty()) remote_left.push_back(m);
      m.awaits_restart = false;
      if (!m.done) {
        m.cancelled = true;
        if (!m.remote.empty()) remote_left.push_back(m);
        stop(m, SIGKILL, "the job restarts from its checkpoint", /*rejoin=*/true);
      }
    }
    while (!std::all_of(members_.begin(), members_.end(), [](const Member& m) { return m.done; })) {
      reap();
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    lost_.clear();
    regrouping_ = 0;
    const int left = workers;
    if (!recoverable_) {
      err_ << "tensoropt: error: rank " << last_lost_ << " " << last_how_ << "; no worker left holds the whole state and no checkpoint is written"
           << " (--checkpoint-every 0): the job stops\n";
      return 1;
    }
    if (workers < min_gpus_) {
      out_ << "waiting  " << workers << " workers left, fewer than --min-gpus " << min_gpus_ << ": up to " << rejoin_seconds_
           << " s for tensoropt resize " << control_ << " --gpus N\n" << std::flush;
      const auto start = Clock::now();
      while (workers < min_gpus_ && Clock::now() - start < std::chrono::duration<double>(rejoin_seconds_) && !stop_signal()) {
        const std::optional<nlohmann::ordered_json> request = control::read_json(control_ + "/request.json");
        if (request && request->value("id", int64_t{0}) > handled_) {
          handled_ = request->value("id", int64_t{0});
          workers = std::max(workers, request->value("gpus", 0));
        }
        keep_beating();
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      if (workers < min_gpus_) {
        err_ << "tensoropt: error: rank " << last_lost_ << " " << last_how_ << "; " << left << " workers left, fewer than --min-gpus " << min_gpus_
             << ", and no resize came within " << rejoin_seconds_ << " s: the job stops (its checkpoint: " << control_ << "/checkpoint.onnx)\n";
        return 1;
      }
    }
    const int generation = generation_ + 1;
    control::write_json(control_ + "/recovery.json",
                        {{"lost_ranks", last_ranks_}, {"how", last_how_}, {"at_step", last_step_}, {"from", last_from_}, {"to", workers}});
    out_ << "restart  " << workers << " workers from the checkpoint\n" << std::flush;
    // Ranks: this machine's first, then the other machines' (a worker's shard follows its rank).
    const int here = std::max(0, workers - static_cast<int>(remote_left.size()));
    for (int r = 0; r < here; ++r) members_.push_back(local(start_worker(argv_, r, workers, store_, generation, true), r, generation));
    for (int r = here; r < workers; ++r) assign(remote_left[static_cast<size_t>(r - here)].remote, r, workers, generation, true);
    generation_ = generation;
    world_ = workers;
    return 0;
  }

  void stop_all() {
    for (Member& m : members_)
      if (!m.done) stop(m, SIGTERM, "the job stops", false, /*failed=*/true);
    stopping_ = true;
    stopping_since_ = Clock::now();
  }

  // Stops the joining workers of `generation`, whose ends are then no failure.
  void cancel(int generation) {
    for (Member& m : members_)
      if (!m.done && m.generation == generation) {
        m.cancelled = true;
        stop(m, SIGKILL, "the resize it joined for was given up");
      }
  }

  Member local(pid_t pid, int rank, int generation) const {
    Member m;
    m.pid = pid;
    m.rank = rank;
    m.generation = generation;
    return m;
  }

  // Sends `sig` to a member: a local process directly, another machine's through its stop file
  // (its join process kills the worker with SIGKILL; `rejoin`: it then waits to be named again).
  void stop(Member& m, int sig, const std::string& why, bool rejoin = false, bool failed = false) {
    if (m.remote.empty()) {
      kill(m.pid, sig);
      return;
    }
    if (m.stop_sent) return;  // the first word stands (its machine kills the worker at once)
    m.stop_sent = true;
    remote::write_stop(control_, m.remote, {m.assigned, why, rejoin, failed});
  }

  // Whether member m ended, with its wait status: a local one by waitpid, another machine's by the
  // exit its join process wrote, or by its silence (as if killed).
  bool ended(Member& m, int& status) {
    if (m.remote.empty()) return waitpid(m.pid, &status, WNOHANG) == m.pid;
    if (const std::optional<int> s = remote::read_exit(control_, m.remote, m.assigned)) {
      status = *s;
      return true;
    }
    if (m.pulse->silent_for() > remote::kSilence) {
      out_ << "silent   " << m.remote << " (rank " << m.rank << ") has not beaten for " << remote::kSilence.count() << " s\n" << std::flush;
      status = kKilledStatus;
      return true;
    }
    return false;
  }

  // Names another machine's worker rank `rank` of `workers` in `generation`.
  void assign(const std::string& member, int rank, int workers, int generation, bool restart) {
    Member m;
    m.rank = rank;
    m.generation = generation;
    m.remote = member;
    m.assigned = generation;
    m.pulse = std::make_shared<remote::Pulse>(remote::beat_path(control_, member));
    members_.push_back(m);
    remote::write_assignment(control_, member, {generation, rank, workers, restart});
  }

  // Workers other machines offer (tensoropt join): taken as a resize when none is under way and
  // the job is below --max-gpus; those beyond it wait.
  void take_offers() {
    if (pending_ || regrouping_) return;
    std::vector<std::string> fresh;
    for (const std::string& member : remote::offers(control_))
      if (!offered_.count(member)) fresh.push_back(member);
    if (fresh.empty()) return;
    const int room = max_gpus_ - world_;
    if (room <= 0) {
      for (const std::string& member : fresh)
        if (waiting_.insert(member).second)
          out_ << "offer    " << member << " waits: the job has --max-gpus " << max_gpus_ << " workers\n" << std::flush;
      return;
    }
    if (fresh.size() > static_cast<size_t>(room)) fresh.resize(static_cast<size_t>(room));
    const int workers = world_ + static_cast<int>(fresh.size());
    pending_ = Pending{generation_ + 1, workers, world_, wall_now()};
    out_ << "resize   " << world_ << " -> " << workers << " workers: offered by";
    for (const std::string& member : fresh) out_ << " " << member;
    out_ << ", which load while the job trains\n" << std::flush;
    for (size_t k = 0; k < fresh.size(); ++k) {
      offered_.insert(fresh[k]);
      assign(fresh[k], world_ + static_cast<int>(k), workers, pending_->generation, false);
    }
  }

  // The group's generation as rank 0 last wrote it: a resize is complete once it reached the
  // pending one; a finished job needs no joining worker.
  void follow_status() {
    const std::optional<nlohmann::ordered_json> status = control::read_json(control_ + "/status.json");
    if (!status) return;
    const int generation = status->value("generation", 0);
    if (regrouping_ && generation >= regrouping_) regrouping_ = 0;
    if (generation > generation_) {
      generation_ = generation;
      world_ = status->value("workers", world_);
      if (pending_ && pending_->generation <= generation_) pending_.reset();
    }
    if (status->value("finished", false) && pending_) {
      cancel(pending_->generation);
      pending_.reset();
    }
  }

  void take_request() {
    if (pending_) return;  // a request waits for the resize under way
    const std::optional<nlohmann::ordered_json> request = control::read_json(control_ + "/request.json");
    if (!request || request->value("id", int64_t{0}) <= handled_) return;
    handled_ = request->value("id", int64_t{0});
    const int workers = request->value("gpus", world_);
    if (workers == world_) {
      out_ << "resize   to " << workers << " workers: the job has " << workers << " already\n" << std::flush;
      return;
    }
    pending_ = Pending{generation_ + 1, workers, world_, wall_now()};
    out_ << "resize   " << world_ << " -> " << workers << " workers requested"
         << (workers > world_ ? ": starting " + std::to_string(workers - world_) + " worker(s), which load while the job trains" : "") << "\n"
         << std::flush;
    for (int r = world_; r < workers; ++r) members_.push_back(local(start_worker(argv_, r, workers, store_, pending_->generation), r, pending_->generation));
  }

  void go_ahead() {
    if (!pending_ || pending_->switched) return;
    for (int r = pending_->from; r < pending_->workers; ++r)
      if (!std::filesystem::exists(control::ready_path(control_, pending_->generation, r))) return;
    control::write_json(control_ + "/switch.json", {{"generation", pending_->generation},
                                                    {"workers", pending_->workers},
                                                    {"from", pending_->from},
                                                    {"requested_at", pending_->requested_at}});
    pending_->switched = true;
  }

  std::vector<std::string> argv_;
  std::string control_, store_;
  std::ostream& out_;
  std::ostream& err_;
  std::vector<Member> members_;
  int generation_ = 0, world_ = 0;
  int64_t handled_ = 0;
  std::optional<Pending> pending_;
  bool stopping_ = false;
  Clock::time_point stopping_since_{};
  int failed_ = -1, failed_rank_ = 0, failed_world_ = 0, failed_status_ = 0;
  int min_gpus_ = 1, max_gpus_ = 1;
  Clock::time_point last_beat_{};
  std::set<std::string> offered_, waiting_;  // other machines' offers taken, and those told to wait
  bool recoverable_ = false;                        // a checkpoint is written: a lost worker is survived
  double rejoin_seconds_ = 60;
  struct Lost {
    int rank = 0, generation = 0;
    std::string how;
  };
  std::vector<Lost> lost_;  // since the last recovery
  // The last loss: its ranks, how they ended, the workers and step before it.
  std::string last_lost_, last_how_;
  nlohmann::json last_ranks_ = nlohmann::json::array();
  int last_from_ = 0;
  int64_t last_step_ = 0;
  int regrouping_ = 0;          // the generation the workers left are meeting as; 0: none
  Clock::time_point regroup_since_{};
  bool no_replica_ = false;     // a worker of that generation found no whole state to go on from
};

}  // namespace

int launch_elastic(const std::vector<std::string>& argv, int gpus, const TrainSettings& s, std::ostream& out, std::ostream& err) {
  const int lo = s.elastic.min_gpus, hi = s.elastic.max_gpus > 0 ? s.elastic.max_gpus : gpus;
  if (lo > gpus || gpus > hi) {
    throw InputError("--gpus " + std::to_string(gpus) + " is outside --min-gpus " + std::to_string(lo) + " .. --max-gpus " + std::to_string(hi));
  }
  check_before_workers(s, hi);
  std::string counts;
  for (int n = lo; n <= hi; ++n) {
    if (!counts.empty()) counts += ',';
    counts += std::to_string(n);
    if (!s.plan) continue;
    const planner::StoredStrategy stored = checked_point(s, n);  // one line naming the count the plan lacks
    if (!stored.settings) throw InputError("--elastic needs a plan file (plan --gpus " + std::to_string(lo) + "-... --json), not a strategy file: " + *s.plan);
  }
  std::string control, store;
  return launch_workers(
      argv, gpus, err,
      [&](const std::string& dir, std::vector<std::string>& worker_argv) {
        TrainSettings::Elastic e = s.elastic;
        control = e.control.empty() ? dir + "/control" : std::filesystem::absolute(e.control).string();
        if (e.control.empty()) worker_argv.insert(worker_argv.end(), {"--control", control});
        control::open_control(control, lo, hi);
        store = e.store.empty() ? "file:" + control + "/elastic-store" : e.store;
        out << "control  " << control << " (tensoropt status DIR, tensoropt resize DIR --gpus N, tensoropt join DIR from another machine; " << lo
            << ".." << hi << " workers)\n";
        if (!s.plan) {
          if (const int code = plan_for_workers(s, counts, dir, out, err); code != 0) return code;
          // In the control directory: a worker another machine starts reads it there.
          std::filesystem::copy_file(dir + "/plan.json", control + "/elastic-plan.json", std::filesystem::copy_options::overwrite_existing);
          worker_argv.insert(worker_argv.end(), {"--plan", control + "/elastic-plan.json"});
        }
        if (s.elastic.max_gpus <= 0) worker_argv.insert(worker_argv.end(), {"--max-gpus", std::to_string(hi)});
        if (s.threads <= 0) worker_argv.insert(worker_argv.end(), {"--threads", std::to_string(kernel_threads(s, hi))});
        // The groups' keys start with the job's name, so that a store two jobs share (one Redis)
        // never mixes them, nor a job's keys those a job before it left.
        const std::string job = remote::this_member() + "-" + std::to_string(static_cast<int64_t>(wall_now()));
        setenv("TENSOROPT_JOB", job.c_str(), 1);
        // Without GLOO_SOCKET_IFNAME the workers listen on loopback: no other machine can join.
        const char* iface = std::getenv("GLOO_SOCKET_IFNAME");
        control::write_json(control + "/job.json", {{"job", job}, {"store", store}, {"argv", worker_argv},
                                                    {"cwd", std::filesystem::current_path().string()}, {"launcher", remote::this_member()},
                                                    {"gloo_socket_ifname", iface ? iface : ""}});
        out << std::flush;
        return 0;
      },
      [&](const std::string&, const std::vector<std::string>& worker_argv) {
        TrainSettings::Elastic e = s.elastic;
        e.min_gpus = lo;
        e.max_gpus = hi;
        return Supervisor(worker_argv, control, store, e, out, err).run(gpus);
      });
}

}  // namespace tensoropt
