#include "cli/cluster_jobs.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <set>
#include <sstream>

#include "cli/commands.h"
#include "graph/error.h"
#include "launcher/cluster/policy.h"

namespace tensoropt::cli {
namespace {

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

}  // namespace

Workload load_workload(const std::string& path, const std::optional<std::string>& mapping) {
  Workload w;
  w.path = path;
  w.jobs = cluster::read_workload(path);
  w.mapping_path = mapping ? *mapping : default_mapping();
  w.mapping = cluster::read_mapping(w.mapping_path);
  cluster::check_applications(w.jobs, w.mapping, path);
  std::set<std::string> used;
  for (const cluster::WorkloadJob& j : w.jobs) used.insert(j.application);
  for (const std::string& app : used)
    if (!std::filesystem::exists(w.mapping.at(app).model)) throw InputError(w.mapping_path + " application " + app + ": no model at " + w.mapping.at(app).model);
  w.applications.assign(used.begin(), used.end());
  return w;
}

std::vector<std::unique_ptr<cluster::Policy>> make_policies(const std::string& names) {
  std::vector<std::unique_ptr<cluster::Policy>> policies;
  std::stringstream ss(names);
  std::string name;
  while (std::getline(ss, name, ',')) policies.push_back(cluster::make_policy(name));
  if (policies.empty()) {
    std::string known;
    for (const std::string& n : cluster::policy_names()) known.append(known.empty() ? "" : ", ").append(n);
    throw InputError("--policy: name at least one (" + known + ")");
  }
  return policies;
}

std::vector<int> planned_counts(int gpus) {
  std::vector<int> c;
  for (int k = 1; k <= std::min(gpus, 16); ++k) c.push_back(k);
  for (int k = 24; k <= gpus; k += 8) c.push_back(k);
  if (c.back() != gpus) c.push_back(gpus);
  return c;
}

Speeds plan_speeds(const cluster::Application& app, int gpus, const std::string& cluster, const std::string& plan_json, std::ostream& err,
                   const std::optional<std::string>& profile) {
  PlanArgs p;
  p.profile = profile;
  p.model = app.model;
  std::string counts;
  for (int k : planned_counts(gpus)) counts.append(counts.empty() ? "" : ",").append(std::to_string(k));
  p.gpus = counts;
  p.cluster = cluster;
  p.batch = app.batch;
  p.json = plan_json;
  std::ostringstream quiet, complaints;
  if (const int code = run_plan(p, quiet, complaints); code != 0) {
    err << complaints.str();
    throw InputError(app.model + ": planning it failed");
  }
  std::ifstream f(plan_json);
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

cluster::Job make_job(const Workload& w, const cluster::WorkloadJob& row, const std::vector<double>& speed, double resize_s, double restart_s,
                      double launch_s, int gpus, const std::string& cluster) {
  if (std::none_of(speed.begin(), speed.end(), [](double v) { return v > 0; }))
    throw InputError(w.path + " line " + std::to_string(row.row) + ": job " + row.name + " (" + row.application + ") fits no count of 1.." +
                     std::to_string(gpus) + " GPUs of " + cluster);
  cluster::Job j;
  j.name = row.name;
  j.submit_s = row.submit_s;
  j.work = w.mapping.at(row.application).samples;
  j.requested = row.replicas;
  j.speed = speed;
  j.launch_s = launch_s;
  j.resize_s = resize_s;
  j.restart_s = restart_s;
  return j;
}

double resize_cost(double state_bytes, double link_bytes_per_s) { return kResizeFloorS + state_bytes / link_bytes_per_s; }
double restart_cost(double state_bytes, double launch_s) { return launch_s + 2 * state_bytes / 1e9; }

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

void write_json(const std::string& file, const nlohmann::ordered_json& doc, std::ostream& out) {
  if (file == "-") {
    out << doc.dump(1) << "\n";
    return;
  }
  std::ofstream f(file);
  f << doc.dump(1) << "\n";
  if (!f) throw InputError("--json " + file + ": cannot write");
}

void table_header(std::ostream& out) {
  out << std::left << std::setw(10) << "policy" << std::right << std::setw(12) << "avg JCT" << std::setw(12) << "median" << std::setw(12) << "p99"
      << std::setw(12) << "makespan" << std::setw(8) << "util" << std::setw(11) << "GPU-hours" << std::setw(9) << "resizes" << std::setw(13)
      << "lost to them" << "\n";
}

void table_row(std::ostream& out, const std::string& label, const cluster::Result& r) {
  out << std::left << std::setw(10) << label << std::right << std::setw(12) << duration(r.avg_jct_s()) << std::setw(12) << duration(r.median_jct_s())
      << std::setw(12) << duration(r.p99_jct_s()) << std::setw(12) << duration(r.makespan_s) << std::setw(7) << std::fixed << std::setprecision(1)
      << 100 * r.utilisation() << "%" << std::setw(11) << std::setprecision(r.gpu_hours() < 1 ? 3 : 1) << r.gpu_hours() << std::setw(9)
      << r.resizes() << std::setw(13) << duration(r.paused_s()) << "\n"
      << std::defaultfloat;
}

ScratchDir::ScratchDir(const std::string& prefix) {
  std::string tmpl = "/tmp/" + prefix + ".XXXXXX";
  if (!mkdtemp(tmpl.data())) throw InternalError("cannot make a directory under /tmp");
  path = tmpl;
}

ScratchDir::~ScratchDir() {
  if (keep) return;
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
}

}  // namespace tensoropt::cli
