#include "cli/simulate_command.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli/cdf_svg.h"
#include "cli/cluster_jobs.h"
#include "graph/error.h"
#include "launcher/cluster/engine.h"
#include "launcher/cluster/policy.h"
#include "launcher/cluster/workload.h"
#include "planner/parallel/cluster.h"

namespace tensoropt::cli {

int run_simulate(const SimulateArgs& a, std::ostream& out, std::ostream& err) {
  // Everything checked before any planning.
  if (a.gpus < 1) throw InputError("--gpus " + std::to_string(a.gpus) + ": at least 1");
  std::vector<std::unique_ptr<cluster::Policy>> policies = make_policies(a.policies);
  if (a.resizes != "elastic" && a.resizes != "restart") throw InputError("--resizes " + a.resizes + ": expected elastic or restart");
  if (a.profile && !std::filesystem::exists(*a.profile)) throw InputError("--profile " + *a.profile + ": no such file");
  const Workload w = load_workload(a.workload, a.mapping);
  const planner::Cluster spec = planner::load_cluster(a.cluster);  // an unknown cluster is one line here
  const double link = spec.inter_node.bandwidth;
  const ScratchDir scratch("tensoropt-simulate");
  std::map<std::string, Speeds> speeds;
  nlohmann::ordered_json apps = nlohmann::ordered_json::object();
  for (const std::string& app : w.applications) {
    const cluster::Application& m = w.mapping.at(app);
    out << "planning " << app << ": " << m.model << " at batch " << m.batch << " on " << a.cluster << "\n" << std::flush;
    Speeds s = plan_speeds(m, a.gpus, a.cluster, scratch.path + "/plan.json", err, a.profile);
    nlohmann::ordered_json planned = nlohmann::ordered_json::object();
    for (const auto& [k, v] : s.planned) planned[std::to_string(k)] = v;
    apps[app] = {{"model", m.model}, {"batch", m.batch}, {"samples", m.samples}, {"samples_per_s", planned},
                 {"resize_s", resize_cost(s.state_bytes, link)}, {"restart_s", restart_cost(s.state_bytes, kStartS)}};
    speeds[app] = std::move(s);
  }
  std::vector<cluster::Job> jobs;
  for (const cluster::WorkloadJob& row : w.jobs) {
    const Speeds& s = speeds.at(row.application);
    const double restart = restart_cost(s.state_bytes, kStartS);
    jobs.push_back(make_job(w, row, s.speed, a.resizes == "restart" ? restart : resize_cost(s.state_bytes, link), restart, kStartS, a.gpus, a.cluster));
  }
  nlohmann::ordered_json results = nlohmann::ordered_json::object();
  std::vector<CdfCurve> curves;
  out << "\n";
  table_header(out);
  for (const std::unique_ptr<cluster::Policy>& p : policies) {
    const cluster::Result r = cluster::simulate(jobs, a.gpus, *p);
    table_row(out, r.policy, r);
    results[r.policy] = policy_json(r);
    CdfCurve curve{r.policy + " (avg " + duration(r.avg_jct_s()) + ")", {}};
    for (const cluster::JobResult& j : r.jobs) curve.values.push_back(j.jct_s());
    curves.push_back(std::move(curve));
  }
  out << "(job speeds from tensoropt's plans of each application's model on " << a.cluster << (a.profile ? " priced with " + *a.profile : "")
      << ", not from measured throughputs; " << (a.resizes == "restart" ? "every resize a stop-resume" : "resizes in place") << ")\n";
  if (a.plot) {
    std::ofstream f(*a.plot);
    f << cdf_svg(std::filesystem::path(a.workload).filename().string() + " on " + std::to_string(a.gpus) + " GPUs of " + a.cluster + ": job completion times", curves);
    if (!f) throw InputError("--plot " + *a.plot + ": cannot write");
  }
  if (a.json) {
    const nlohmann::ordered_json doc = {{"workload", a.workload}, {"gpus", a.gpus}, {"cluster", a.cluster}, {"mapping", w.mapping_path},
                                        {"resizes", a.resizes}, {"applications", apps}, {"policies", results}};
    write_json(*a.json, doc, out);
  }
  return 0;
}

}  // namespace tensoropt::cli
