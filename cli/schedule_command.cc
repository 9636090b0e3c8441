#include "cli/schedule_command.h"

#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <map>
#include <memory>
#include <ostream>
#include <thread>
#include <tuple>

#include <nlohmann/json.hpp>

#include "cli/cluster_jobs.h"
#include "graph/error.h"
#include "launcher/cluster/live.h"
#include "launcher/cluster/policy.h"
#include "launcher/elastic/control.h"
#include "launcher/launch/spawn.h"
#include "planner/parallel/cluster.h"

namespace tensoropt::cli {
namespace {

namespace fs = std::filesystem;
constexpr const char* kCluster = "cpu";

// `tensoropt run` for an application's jobs: its model at its batch with the application's plan,
// elastic over 1..G workers of one thread each; live.h adds --gpus and --control.
std::vector<std::string> run_argv(const cluster::Application& app, const std::string& plan, int64_t steps, int gpus) {
  std::error_code ec;
  const std::string self = fs::read_symlink("/proc/self/exe", ec).string();
  if (self.empty()) throw InternalError("cannot read /proc/self/exe (this binary's path, for the jobs' runs)");
  return {self, "run", app.model, "--plan", plan, "--batch", std::to_string(app.batch), "--steps", std::to_string(steps),
          "--threads", "1", "--elastic", "--min-gpus", "1", "--max-gpus", std::to_string(gpus)};
}

// One application measured on k workers: samples per second, and the launch.
struct Measured {
  double samples_per_s = 0;
  double launch_s = 0;
};

// `copies` runs of `steps` steps side by side, each on k workers: their mean wall time and mean
// step, a step being its status's median interval between steps (printing, status and the
// elastic checks between steps count).
std::pair<double, double> side_by_side(const cluster::Application& app, const std::string& plan, int k, int gpus, int copies, int64_t steps,
                                       const std::string& dir) {
  std::vector<pid_t> pids;
  std::vector<std::string> controls;
  const auto t0 = std::chrono::steady_clock::now();
  for (int c = 0; c < copies; ++c) {
    const std::string sub = dir + "/" + std::to_string(steps) + "-" + std::to_string(c);
    fs::create_directories(sub);
    std::vector<std::string> argv = run_argv(app, plan, steps, gpus);
    argv.insert(argv.end(), {"--gpus", std::to_string(k), "--control", sub + "/control"});
    pids.push_back(spawn_logged(argv, sub + "/log"));
    controls.push_back(sub);
  }
  double wall = 0, step = 0;
  std::string failed;
  for (size_t c = 0; c < pids.size(); ++c) {
    int status = 0;
    while (waitpid(pids[c], &status, 0) < 0)
      if (errno != EINTR) throw InternalError("waitpid failed");
    wall += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      failed = "the run " + how_it_ended(status) + " (its log: " + controls[c] + "/log)";
      continue;
    }
    step += control::read_status(controls[c] + "/control").value("measured_step_s", 0.0);
  }
  if (!failed.empty()) throw InternalError("calibrating " + app.model + " on " + std::to_string(k) + " workers: " + failed);
  return {wall / copies, step / copies};
}

// `copies` runs side by side on k workers each: with G / k copies the cluster is full (the
// machine's cores are shared as they are while jobs run together), with one the job is alone. A
// run too short to time (its steps under half of `seconds`) is done again with about `seconds` of
// steps. The launch is the wall time less the steps.
Measured calibrate(const cluster::Application& app, const std::string& plan, int k, int gpus, int copies, int64_t steps, double seconds,
                   const std::string& dir) {
  auto [wall, step] = side_by_side(app, plan, k, gpus, copies, steps, dir);
  if (step <= 0) throw InternalError("calibrating " + app.model + " on " + std::to_string(k) + " workers: no step time in its status");
  if (static_cast<double>(steps) * step < seconds / 2) {
    steps = static_cast<int64_t>(std::ceil(seconds / step));
    std::tie(wall, step) = side_by_side(app, plan, k, gpus, copies, steps, dir);
  }
  return {static_cast<double>(app.batch) / step, std::max(0.0, wall - static_cast<double>(steps) * step)};
}

// A speed per count as JSON, keyed by the count, for the counts the job fits.
nlohmann::ordered_json by_count(const std::vector<double>& speed) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (size_t k = 1; k < speed.size(); ++k)
    if (speed[k] > 0) out[std::to_string(k)] = speed[k];
  return out;
}

// The run of median speed (the lower middle of an even count).
Measured median_run(std::vector<Measured> runs) {
  std::sort(runs.begin(), runs.end(), [](const Measured& x, const Measured& y) { return x.samples_per_s < y.samples_per_s; });
  return runs[(runs.size() - 1) / 2];
}

// An application's speeds on every count it fits: with every worker busy and, where fewer copies
// than G / k would be alone, alone too; its launch, the median of the runs'.
struct Calibrated {
  std::vector<double> speed, speed_alone;
  double launch_s = 0;
};

Calibrated calibrate_app(const std::string& name, const cluster::Application& m, const Speeds& planned, const std::string& plan, const ScheduleArgs& a, const std::string& dir,
                         std::ostream& out) {
  Calibrated c;
  c.speed.assign(static_cast<size_t>(a.gpus) + 1, 0);
  c.speed_alone = c.speed;
  std::vector<double> launches;
  for (int k = 1; k <= a.gpus; ++k) {
    if (planned.speed[static_cast<size_t>(k)] <= 0) continue;  // does not fit
    const std::string here = dir + "-" + std::to_string(k);
    const int copies = std::max(1, a.gpus / k);
    // Each measurement repeated, busy and alone in turn; the median speed, and its run's launch.
    std::vector<Measured> busy_runs, alone_runs;
    for (int r = 0; r < a.calibration_repeats; ++r) {
      const std::string busy_dir = here + "-full-" + std::to_string(r), alone_dir = here + "-alone-" + std::to_string(r);
      busy_runs.push_back(calibrate(m, plan, k, a.gpus, copies, a.calibration_steps, a.calibration_seconds, busy_dir));
      if (copies > 1) alone_runs.push_back(calibrate(m, plan, k, a.gpus, 1, a.calibration_steps, a.calibration_seconds, alone_dir));
    }
    const Measured full = median_run(busy_runs);
    const Measured single = copies > 1 ? median_run(alone_runs) : full;
    c.speed[static_cast<size_t>(k)] = full.samples_per_s;
    c.speed_alone[static_cast<size_t>(k)] = single.samples_per_s;
    launches.push_back(full.launch_s);
    if (copies > 1) launches.push_back(single.launch_s);
    out << "measured " << name << " on " << k << " worker" << (k == 1 ? ": " : "s: ") << std::fixed << std::setprecision(1)
        << full.samples_per_s << " samples/s with every worker busy";
    if (copies > 1) out << ", " << single.samples_per_s << " alone";
    out << " (planned " << planned.speed[static_cast<size_t>(k)] << "), launch " << std::setprecision(2) << full.launch_s << " s\n"
        << std::defaultfloat << std::flush;
  }
  if (!launches.empty()) {
    std::sort(launches.begin(), launches.end());
    c.launch_s = launches[launches.size() / 2];
  }
  return c;
}

std::string percent(double x) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%+.1f%%", 100 * x);
  return buf;
}

}  // namespace

int run_schedule(const ScheduleArgs& a, std::ostream& out, std::ostream& err) {
  // Everything checked before anything runs.
  if (a.gpus < 1) throw InputError("--gpus " + std::to_string(a.gpus) + ": at least 1");
  if (a.calibration_steps < 3) throw InputError("--calibration-steps " + std::to_string(a.calibration_steps) + ": at least 3");
  if (!(a.calibration_seconds > 0)) throw InputError("--calibration-seconds: more than 0");
  if (a.calibration_repeats < 1) throw InputError("--calibration-repeats " + std::to_string(a.calibration_repeats) + ": at least 1");
  std::vector<std::unique_ptr<cluster::Policy>> policies = make_policies(a.policies);
  const Workload w = load_workload(a.workload, a.mapping);
  if (a.json && *a.json != "-" && !std::ofstream(*a.json, std::ios::app)) throw InputError("--json: cannot write '" + *a.json + "'");
  std::optional<ScratchDir> scratch;
  std::string work;
  if (a.dir) {
    std::error_code ec;
    fs::create_directories(*a.dir, ec);
    if (ec || !fs::is_directory(*a.dir)) throw InputError("--dir " + *a.dir + ": cannot make it");
    work = fs::absolute(*a.dir).string();
  } else {
    scratch.emplace("tensoropt-schedule");
    scratch->keep = true;  // a failed job's log stays; removed below once every policy has run
    work = scratch->path;
  }
  if (const unsigned threads = std::thread::hardware_concurrency(); threads > 0 && static_cast<unsigned>(a.gpus) > threads)
    out << "note: --gpus " << a.gpus << " on " << threads << " hardware threads: the workers share cores, and the measured speeds hold only while they do\n";

  // Plan each application once; its jobs run that plan.
  const double link = planner::load_cluster(kCluster).inter_node.bandwidth;
  std::map<std::string, Speeds> planned;
  const auto plan_of = [&](const std::string& application) { return work + "/" + application + ".plan.json"; };
  nlohmann::ordered_json apps_json = nlohmann::ordered_json::object();
  for (const std::string& name : w.applications) {
    const cluster::Application& m = w.mapping.at(name);
    out << "planning " << name << ": " << m.model << " at batch " << m.batch << " on 1.." << a.gpus << " CPU workers\n" << std::flush;
    const Speeds& sp = planned[name] = plan_speeds(m, a.gpus, kCluster, plan_of(name), err);
    apps_json[name] = {{"model", m.model}, {"batch", m.batch}, {"samples", m.samples}, {"planned_samples_per_s", by_count(sp.speed)},
                       {"resize_s", resize_cost(sp.state_bytes, link)}};
  }

  // Each policy: its applications calibrated (this machine's speed drifts over minutes: measured
  // right before the jobs they predict), the simulator's prediction, then the live run.
  nlohmann::ordered_json results = nlohmann::ordered_json::object();
  std::vector<std::pair<cluster::Result, cluster::Result>> both;
  for (const std::unique_ptr<cluster::Policy>& p : policies) {
    out << "\n" << p->name() << ": calibrating\n" << std::flush;
    std::map<std::string, Calibrated> cal;
    nlohmann::ordered_json cal_json = nlohmann::ordered_json::object();
    for (const std::string& name : w.applications) {
      const cluster::Application& m = w.mapping.at(name);
      Calibrated& c = cal[name] = calibrate_app(name, m, planned.at(name), plan_of(name), a, work + "/" + p->name() + "-calibrate-" + name, out);
      cal_json[name] = {{"samples_per_s", by_count(c.speed)}, {"samples_per_s_alone", by_count(c.speed_alone)}, {"launch_s", c.launch_s},
                        {"restart_s", restart_cost(planned.at(name).state_bytes, c.launch_s)}};
    }
    std::vector<cluster::LiveJob> jobs;
    std::vector<cluster::Job> sim_jobs, plan_jobs;
    for (const cluster::WorkloadJob& row : w.jobs) {
      const Calibrated& c = cal.at(row.application);
      const Speeds& sp = planned.at(row.application);
      const cluster::Application& m = w.mapping.at(row.application);
      const auto steps = static_cast<int64_t>(std::ceil(m.samples / static_cast<double>(m.batch)));
      cluster::LiveJob j;
      j.job = make_job(w, row, c.speed, resize_cost(sp.state_bytes, link), restart_cost(sp.state_bytes, c.launch_s), c.launch_s, a.gpus, kCluster);
      j.job.work = static_cast<double>(steps * m.batch);
      j.job.speed_alone = c.speed_alone;
      j.argv = run_argv(m, plan_of(row.application), steps, a.gpus);
      j.batch = m.batch;
      sim_jobs.push_back(j.job);
      // The plans' speeds instead (what `simulate --cluster cpu` would take).
      plan_jobs.push_back(j.job);
      plan_jobs.back().speed = sp.speed;
      plan_jobs.back().speed_alone.clear();
      jobs.push_back(std::move(j));
    }
    const cluster::Result predicted = cluster::simulate(sim_jobs, a.gpus, *p);
    const cluster::Result from_plans = cluster::simulate(plan_jobs, a.gpus, *p);
    out << p->name() << ": " << jobs.size() << " jobs on " << a.gpus << " workers, predicted average JCT " << duration(predicted.avg_jct_s())
        << "; live:\n" << std::flush;
    cluster::LiveOptions lo;
    lo.dir = work + "/" + p->name();
    const cluster::Result live = cluster::run_live(jobs, a.gpus, *p, lo, out);
    out << std::left << std::setw(24) << "  job" << std::right << std::setw(10) << "submit" << std::setw(14) << "JCT predicted" << std::setw(10) << "live"
        << std::setw(10) << "resizes" << "\n";
    for (size_t i = 0; i < live.jobs.size(); ++i) {
      const cluster::JobResult &l = live.jobs[i], &sj = predicted.jobs[i];
      out << "  " << std::left << std::setw(22) << l.name << std::right << std::setw(10) << duration(l.submit_s) << std::setw(14) << duration(sj.jct_s())
          << std::setw(10) << duration(l.jct_s()) << std::setw(6) << sj.resizes << " / " << l.resizes << "\n";
    }
    const double error = predicted.avg_jct_s() > 0 ? live.avg_jct_s() / predicted.avg_jct_s() - 1 : 0;
    out << "  average JCT live " << duration(live.avg_jct_s()) << ", predicted " << duration(predicted.avg_jct_s()) << " (" << percent(error)
        << "); makespan live " << duration(live.makespan_s) << ", predicted " << duration(predicted.makespan_s) << "\n"
        << "  from the plans' speeds instead of the measured ones: average JCT " << duration(from_plans.avg_jct_s()) << " ("
        << percent(live.avg_jct_s() / from_plans.avg_jct_s() - 1) << " live)\n"
        << std::flush;
    results[p->name()] = {{"calibration", cal_json}, {"predicted", policy_json(predicted)}, {"live", policy_json(live)}, {"avg_jct_error", error},
                          {"predicted_from_plans", policy_json(from_plans)}};
    both.emplace_back(predicted, live);
  }
  out << "\n";
  table_header(out);
  for (const auto& [predicted, live] : both) {
    table_row(out, predicted.policy, predicted);
    table_row(out, "  live", live);
  }
  out << "(predicted: the simulator with the speeds measured above; live: the jobs as they ran here)\n";
  if (a.json) {
    const nlohmann::ordered_json doc = {{"workload", a.workload}, {"gpus", a.gpus}, {"cluster", kCluster}, {"mapping", w.mapping_path},
                                        {"applications", apps_json}, {"policies", results}};
    write_json(*a.json, doc, out);
  }
  if (scratch) scratch->keep = false;
  return 0;
}

}  // namespace tensoropt::cli
