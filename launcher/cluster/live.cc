#include "launcher/cluster/live.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <numeric>
#include <optional>
#include <ostream>
#include <thread>

#include <nlohmann/json.hpp>

#include "graph/error.h"
#include "launcher/elastic/control.h"
#include "launcher/launch/spawn.h"

namespace tensoropt::cluster {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
constexpr double kInf = std::numeric_limits<double>::infinity();

struct Active {
  size_t index = 0;  // into the result's jobs (submit order)
  const LiveJob* spec = nullptr;
  JobView view;
  std::string dir;         // its control directory
  pid_t pid = 0;           // its launcher while it runs
  int asked = 0;           // the count its launcher was started with or last asked for
  double resume_done = 0;  // samples of the checkpoint copy it restarts from (0: none, from the start)
  int resizes = 0;         // of the incarnations before this one, and restarts
  double paused_s = 0;
  bool finished = false;
};

// SIGTERM, then SIGKILL after 10 s; reaps it.
void stop_process(pid_t pid) {
  kill(pid, SIGTERM);
  const Clock::time_point until = Clock::now() + std::chrono::seconds(10);
  while (waitpid(pid, nullptr, WNOHANG) == 0) {
    if (Clock::now() > until) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// Every job still running is stopped when the loop ends, however it ends.
struct StopAll {
  std::vector<Active>& active;
  ~StopAll() {
    for (Active& a : active)
      if (a.pid > 0) stop_process(a.pid);
  }
};

// The resizes a job's status lists: how many, and their pauses.
void add_resizes(const std::string& dir, int& count, double& paused) {
  const std::optional<nlohmann::ordered_json> st = control::read_json(dir + "/status.json");
  if (!st) return;
  for (const auto& r : st->value("resizes", nlohmann::ordered_json::array())) {
    ++count;
    paused += r.value("pause_s", 0.0);
  }
}

std::string at(double t) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%8.1f s  ", t);
  return buf;
}

}  // namespace

Result run_live(const std::vector<LiveJob>& jobs, int gpus, Policy& policy, const LiveOptions& o, std::ostream& log) {
  Result r;
  r.policy = policy.name();
  r.gpus = gpus;
  std::vector<size_t> order(jobs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return jobs[a].job.submit_s < jobs[b].job.submit_s; });
  for (size_t i : order) {
    TO_CHECK(static_cast<int>(jobs[i].job.speed.size()) == gpus + 1 && jobs[i].batch > 0);
    r.jobs.push_back({jobs[i].job.name, jobs[i].job.submit_s, 0, 0, 0, 0, 0});
  }
  fs::create_directories(o.dir);
  // The workload's clock: its first submit is now.
  const double first = jobs.empty() ? 0 : jobs[order[0]].job.submit_s;
  const Clock::time_point t0 = Clock::now();
  const auto clock = [&] { return first + std::chrono::duration<double>(Clock::now() - t0).count(); };

  std::vector<Active> active;
  StopAll stop_all{active};
  size_t next = 0, finished = 0;
  double decide_at = kInf, last = first;
  bool event = true;

  const auto start = [&](Active& a, int k, double t) {
    std::vector<std::string> argv = a.spec->argv;
    argv.insert(argv.end(), {"--gpus", std::to_string(k), "--control", a.dir});
    if (a.resume_done > 0) argv.insert(argv.end(), {"--resume", a.dir + ".resume/checkpoint.onnx"});
    a.pid = spawn_logged(argv, a.dir + ".log");
    a.asked = k;
    log << at(t) << (a.view.started ? "restart  " : "start    ") << a.view.job->name << " on " << k << " GPU" << (k == 1 ? "" : "s")
        << (a.view.started ? (a.resume_done > 0 ? " from its checkpoint" : " from the start") : "") << "\n"
        << std::flush;
    if (a.view.started) ++a.resizes;
    else r.jobs[a.index].start_s = t;
    a.view.started = true;
    a.view.done = a.resume_done;
  };
  // Stops a running job and keeps its last checkpoint for its restart.
  const auto stop = [&](Active& a, double t) {
    stop_process(a.pid);
    a.pid = 0;
    add_resizes(a.dir, a.resizes, a.paused_s);
    const std::optional<nlohmann::ordered_json> history = control::read_json(a.dir + "/history.json");
    if (fs::exists(a.dir + "/checkpoint.onnx") && history && !history->value("steps", nlohmann::ordered_json::array()).empty()) {
      const std::string copy = a.dir + ".resume";
      fs::remove_all(copy);
      fs::create_directories(copy);
      for (const fs::directory_entry& e : fs::directory_iterator(a.dir))
        if (e.path().filename().string().rfind("checkpoint.onnx", 0) == 0) fs::copy_file(e.path(), copy / e.path().filename());
      a.resume_done = history->at("steps").back().at(0).get<double>() * static_cast<double>(a.spec->batch);
    }
    a.view.done = a.resume_done;
    log << at(t) << "stop     " << a.view.job->name << " (" << static_cast<int64_t>(a.resume_done) << " samples kept)\n" << std::flush;
  };

  while (finished < jobs.size()) {
    const double t = clock();
    for (Active& a : active) {
      a.view.attained_gpu_s += a.view.gpus * (t - last);
      r.jobs[a.index].gpu_s += a.view.gpus * (t - last);
    }
    last = t;
    for (; next < order.size() && jobs[order[next]].job.submit_s <= t; ++next) {
      Active a;
      a.index = next;
      a.spec = &jobs[order[next]];
      a.view.job = &a.spec->job;
      a.dir = o.dir + "/job-" + std::to_string(next);
      active.push_back(a);
      event = true;
    }
    // Progress, and the jobs that ended.
    for (Active& a : active) {
      if (a.pid == 0) continue;
      if (const std::optional<nlohmann::ordered_json> st = control::read_json(a.dir + "/status.json"))
        a.view.done = std::min(a.view.job->work, std::max(a.view.done, st->value("samples", 0.0)));
      int status = 0;
      if (waitpid(a.pid, &status, WNOHANG) != a.pid) continue;
      a.pid = 0;
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        throw InternalError("job " + a.view.job->name + " " + how_it_ended(status) + " (its log: " + a.dir + ".log)");
      JobResult& out = r.jobs[a.index];
      add_resizes(a.dir, a.resizes, a.paused_s);
      out.finish_s = t;
      out.resizes = a.resizes;
      out.paused_s = a.paused_s;
      a.view.done = a.view.job->work;
      a.finished = true;
      ++finished;
      event = true;
      log << at(t) << "finish   " << a.view.job->name << " (JCT " << t - out.submit_s << " s)\n" << std::flush;
    }
    active.erase(std::remove_if(active.begin(), active.end(), [](const Active& a) { return a.finished; }),
                 active.end());
    if (t >= decide_at) event = true;
    if (event && !active.empty()) {
      event = false;
      std::vector<JobView> views;
      for (const Active& a : active) views.push_back(a.view);
      const Decision d = policy.decide(t, views, gpus);
      check_decision(d, views, gpus, r.policy);
      for (size_t i = 0; i < active.size(); ++i) {
        Active& a = active[i];
        const int was = a.view.gpus, k = d.gpus[i];
        if (k == was) continue;
        if (was > 0 && k > 0 && policy.elastic()) {
          log << at(t) << "resize   " << a.view.job->name << " " << was << " -> " << k << " GPUs\n" << std::flush;
        } else {
          if (was > 0) stop(a, t);
          if (k > 0) start(a, k, t);
        }
        a.view.gpus = k;
      }
      decide_at = d.next_s > t ? d.next_s : kInf;
    }
    // Resize requests, until the job's launcher takes them (it opens its control directory first).
    for (Active& a : active) {
      if (a.pid == 0 || a.asked == a.view.gpus) continue;
      try {
        control::request_resize(a.dir, a.view.gpus);
        a.asked = a.view.gpus;
      } catch (const InputError&) {
      }
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(o.poll_s));
  }
  for (const JobResult& j : r.jobs) r.makespan_s = std::max(r.makespan_s, j.finish_s - first);
  return r;
}

}  // namespace tensoropt::cluster
