#include "cli/simulate_command.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <map>
#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/cdf_svg.h"
#include "cli/commands.h"
#include "graph/error.h"
#include "launcher/cluster/engine.h"
#include "launcher/cluster/policy.h"
#include "launcher/cluster/workload.h"
#include "planner/parallel/cluster.h"

namespace tensoropt::cli {
namespace {

// Our measured floors (docs/benchmarks.md "Elastic jobs"): a resize's pause, a stop-resume's start.
constexpr double kPauseFloorS = 0.005;
constexpr double kStartS = 0.15;
constexpr double kCheckpointBytesPerS = 1e9;  // writing, then reading, a checkpoint

// The default mapping: models/pollux.json of the source tree the binary was built in
// (build*/cli/tensoropt), or of an installed tree (bin/tensoropt, share/tensoropt/models).
std::string default_mapping() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  for (const std::filesystem::path& p : {exe.parent_path().parent_path().parent_path() / "models" / "pollux.json",
                                          exe.parent_path().parent_path() / "share" / "tensoropt" / "models" / "pollux.json"})
    if (std::filesystem::exists(p, ec)) return p.string();
  throw InputError("no default mapping found (models/pollux.json beside the build tree); give --mapping FILE");
}

std::vector<int> planned_counts(int gpus) {
  std::vector<int> c;
  for (int k = 1; k <= std::min(gpus, 16); ++k) c.push_back(k);
  for (int k = 24; k <= gpus; k += 8) c.push_back(k);
  if (c.back() != gpus) c.push_back(gpus);
  return c;
}

// One application's speeds from a plan of its model at its batch on the planned counts.
struct Speeds {
  std::vector<double> speed;  // [k], k = 0..G
  std::map<int, double> planned;
  double state_bytes = 0;
};

Speeds plan_speeds(const cluster::Application& app, int gpus, const std::string& cluster_name, std::ostream& err) {
  char tmpl[] = "/tmp/tensoropt-simulate.XXXXXX";
  if (!mkdtemp(tmpl)) throw InternalError("cannot make a directory under /tmp");
  const std::string dir = tmpl;
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  } cleanup{dir};
  PlanArgs p;
  p.model = app.model;
  std::string counts;
  for (int k : planned_counts(gpus)) {
    if (!counts.empty()) counts += ',';
    counts += std::to_string(k);
  }
  p.gpus = counts;
  p.cluster = cluster_name;
  p.batch = app.batch;
  p.json = dir + "/plan.json";
  std::ostringstream quiet, complaints;
  if (const int code = run_plan(p, quiet, complaints); code != 0) {
    err << complaints.str();
    throw InputError(app.model + ": planning it for the simulation failed");
  }
  std::ifstream f(*p.json);
  const nlohmann::json plan = nlohmann::json::parse(f);
  Speeds s;
  s.speed.assign(static_cast<size_t>(gpus) + 1, 0);
  s.state_bytes = 3.0 * 4.0 * plan.at("model").value("trainable_parameters", 0.0);
  for (const auto& fr : plan.at("frontiers")) {
    const int k = fr.at("gpus").get<int>();
    const int chosen = fr.contains("chosen") && fr["chosen"].is_number_integer() ? fr["chosen"].get<int>() : -1;  // null: none fits
    s.planned[k] = chosen >= 0 ? fr.at("points").at(static_cast<size_t>(chosen)).at("samples_per_s").get<double>() : 0.0;
  }
  for (int k = 1; k <= gpus; ++k) {
    auto it = s.planned.upper_bound(k);
    if (it != s.planned.begin()) s.speed[static_cast<size_t>(k)] = std::prev(it)->second;
  }
  return s;
}

// "42.0 s", "12.5 min", "3.20 h".
std::string duration(double s) {
  char buf[32];
  if (s < 120) std::snprintf(buf, sizeof buf, "%.1f s", s);
  else if (s < 7200) std::snprintf(buf, sizeof buf, "%.1f min", s / 60);
  else std::snprintf(buf, sizeof buf, "%.2f h", s / 3600);
  return buf;
}

nlohmann::ordered_json policy_json(const cluster::Result& r) {
  nlohmann::ordered_json jobs = nlohmann::ordered_json::array();
  for (const cluster::JobResult& j : r.jobs)
    jobs.push_back({{"name", j.name}, {"submit_s", j.submit_s}, {"start_s", j.start_s}, {"finish_s", j.finish_s}, {"jct_s", j.jct_s()},
                    {"resizes", j.resizes}, {"paused_s", j.paused_s}, {"gpu_s", j.gpu_s}});
  return {{"avg_jct_s", r.avg_jct_s()}, {"median_jct_s", r.median_jct_s()}, {"p99_jct_s", r.p99_jct_s()}, {"makespan_s", r.makespan_s},
          {"utilisation", r.utilisation()}, {"gpu_hours", r.gpu_hours()}, {"resizes", r.resizes()}, {"resize_paused_s", r.paused_s()},
          {"jobs", jobs}};
}

}  // namespace

int run_simulate(const SimulateArgs& a, std::ostream& out, std::ostream& err) {
  // Everything checked before any planning.
  if (a.gpus < 1) throw InputError("--gpus " + std::to_string(a.gpus) + ": at least 1");
  std::vector<std::unique_ptr<cluster::Policy>> policies;
  {
    std::stringstream ss(a.policies);
    std::string name;
    while (std::getline(ss, name, ',')) policies.push_back(cluster::make_policy(name));
    if (policies.empty()) {
      std::string known;
      for (const std::string& n : cluster::policy_names()) known.append(known.empty() ? "" : ", ").append(n);
      throw InputError("--policy: name at least one (" + known + ")");
    }
  }
  const std::vector<cluster::WorkloadJob> workload = cluster::read_workload(a.workload);
  const std::string mapping_path = a.mapping ? *a.mapping : default_mapping();
  const cluster::Mapping mapping = cluster::read_mapping(mapping_path);
  cluster::check_applications(workload, mapping, a.workload);
  planner::load_cluster(a.cluster);  // an unknown cluster is one line here
  std::map<std::string, bool> used;
  for (const cluster::WorkloadJob& j : workload) used[j.application] = true;
  for (const auto& [app, yes] : used)
    if (!std::filesystem::exists(mapping.at(app).model)) throw InputError(mapping_path + " application " + app + ": no model at " + mapping.at(app).model);

  const planner::Cluster spec = planner::load_cluster(a.cluster);
  const double link = spec.inter_node.bandwidth;
  std::map<std::string, Speeds> speeds;
  nlohmann::ordered_json apps = nlohmann::ordered_json::object();
  for (const auto& [app, yes] : used) {
    const cluster::Application& m = mapping.at(app);
    out << "planning " << app << ": " << m.model << " at batch " << m.batch << " on " << a.cluster << "\n" << std::flush;
    Speeds s = plan_speeds(m, a.gpus, a.cluster, err);
    nlohmann::ordered_json planned = nlohmann::ordered_json::object();
    for (const auto& [k, v] : s.planned) planned[std::to_string(k)] = v;
    apps[app] = {{"model", m.model}, {"batch", m.batch}, {"samples", m.samples}, {"samples_per_s", planned},
                 {"resize_s", kPauseFloorS + s.state_bytes / link}, {"restart_s", kStartS + 2 * s.state_bytes / kCheckpointBytesPerS}};
    speeds[app] = std::move(s);
  }
  std::vector<cluster::Job> jobs;
  for (const cluster::WorkloadJob& w : workload) {
    const Speeds& s = speeds.at(w.application);
    if (std::none_of(s.speed.begin(), s.speed.end(), [](double v) { return v > 0; }))
      throw InputError(a.workload + " line " + std::to_string(w.row) + ": job " + w.name + " (" + w.application + ") fits no count of 1.." +
                       std::to_string(a.gpus) + " GPUs of " + a.cluster);
    cluster::Job j;
    j.name = w.name;
    j.submit_s = w.submit_s;
    j.work = mapping.at(w.application).samples;
    j.requested = w.replicas;
    j.speed = s.speed;
    j.resize_s = kPauseFloorS + s.state_bytes / link;
    j.restart_s = kStartS + 2 * s.state_bytes / kCheckpointBytesPerS;
    jobs.push_back(std::move(j));
  }
  nlohmann::ordered_json results = nlohmann::ordered_json::object();
  std::vector<CdfCurve> curves;
  out << "\n" << std::left << std::setw(10) << "policy" << std::right << std::setw(12) << "avg JCT" << std::setw(12) << "median" << std::setw(12)
      << "p99" << std::setw(12) << "makespan" << std::setw(8) << "util" << std::setw(11) << "GPU-hours" << std::setw(9) << "resizes"
      << std::setw(13) << "lost to them" << "\n";
  for (const std::unique_ptr<cluster::Policy>& p : policies) {
    const cluster::Result r = cluster::simulate(jobs, a.gpus, *p);
    out << std::left << std::setw(10) << r.policy << std::right << std::setw(12) << duration(r.avg_jct_s()) << std::setw(12)
        << duration(r.median_jct_s()) << std::setw(12) << duration(r.p99_jct_s()) << std::setw(12) << duration(r.makespan_s)
        << std::setw(7) << std::fixed << std::setprecision(1) << 100 * r.utilisation() << "%" << std::setw(11) << std::setprecision(1)
        << r.gpu_hours() << std::setw(9) << r.resizes() << std::setw(13) << duration(r.paused_s()) << "\n"
        << std::defaultfloat;
    results[r.policy] = policy_json(r);
    CdfCurve curve{r.policy + " (avg " + duration(r.avg_jct_s()) + ")", {}};
    for (const cluster::JobResult& j : r.jobs) curve.values.push_back(j.jct_s());
    curves.push_back(std::move(curve));
  }
  out << "(job speeds from tensoropt's plans of each application's model on " << a.cluster << ", not from measured throughputs)\n";
  if (a.plot) {
    std::ofstream f(*a.plot);
    f << cdf_svg(std::filesystem::path(a.workload).filename().string() + " on " + std::to_string(a.gpus) + " GPUs of " + a.cluster + ": job completion times", curves);
    if (!f) throw InputError("--plot " + *a.plot + ": cannot write");
  }
  if (a.json) {
    const nlohmann::ordered_json doc = {{"workload", a.workload}, {"gpus", a.gpus}, {"cluster", a.cluster}, {"mapping", mapping_path},
                                        {"applications", apps}, {"policies", results}};
    if (*a.json == "-") {
      out << doc.dump(1) << "\n";
    } else {
      std::ofstream f(*a.json);
      f << doc.dump(1) << "\n";
      if (!f) throw InputError("--json " + *a.json + ": cannot write");
    }
  }
  return 0;
}

}  // namespace tensoropt::cli
