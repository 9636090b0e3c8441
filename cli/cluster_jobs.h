// What `tensoropt simulate` and `tensoropt schedule` share: a workload and its mapping read and
// checked before any work, the policies named by --policy, each application planned on the
// cluster's GPU counts (its speed at each count from the chosen point), the jobs the engine
// takes, and the results as JSON and a table.
//
// Errors: InputError, one line: a bad workload or mapping (file and line), an unknown application
// or policy, a mapped model that is missing, a plan that fails (naming the model), a job that fits
// no count (naming its line). Not thread-safe (plan_speeds runs the planner in this process).
#pragma once

#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "launcher/cluster/engine.h"
#include "launcher/cluster/workload.h"

namespace tensoropt::cli {

// A workload, its mapping and the applications its jobs use, checked: every application mapped,
// every used model present.
struct Workload {
  std::string path;
  std::vector<cluster::WorkloadJob> jobs;
  std::string mapping_path;
  cluster::Mapping mapping;
  std::vector<std::string> applications;  // used, sorted
};
// mapping: the file, or nullopt for models/pollux.json beside the binary's tree (or installed).
Workload load_workload(const std::string& path, const std::optional<std::string>& mapping);

// --policy "a,b": the policies, at least one.
std::vector<std::unique_ptr<cluster::Policy>> make_policies(const std::string& names);

// The counts an application is planned at for a cluster of `gpus`: 1..min(gpus, 16), every
// multiple of 8 above, and gpus.
std::vector<int> planned_counts(int gpus);

// One application planned at its mapped batch on `cluster` at planned_counts(gpus), the plan
// written to `plan_json` (run --plan takes it), priced with `profile` where given: speed[k], k = 0..gpus, the samples per second of
// the chosen point for the largest planned count <= k (0 where none fits); planned[k] per planned
// count; the model state's bytes (weights and Adam's two slots, fp32).
struct Speeds {
  std::vector<double> speed;
  std::map<int, double> planned;
  double state_bytes = 0;
};
Speeds plan_speeds(const cluster::Application& app, int gpus, const std::string& cluster, const std::string& plan_json, std::ostream& err,
                   const std::optional<std::string>& profile = std::nullopt);

// The engine's job for a workload row: its application's work, these speeds, and the costs of
// changing its size.
cluster::Job make_job(const Workload& w, const cluster::WorkloadJob& row, const std::vector<double>& speed, double resize_s, double restart_s,
                      double launch_s, int gpus, const std::string& cluster);

// What changing a job's size costs it, from our measured floors (docs/benchmarks.md "Elastic
// jobs"): a resize pauses it for 5 ms plus its state over one inter-node link of `link_bytes_per_s`;
// a stop-resume for its start (launch_s) plus writing and reading that state at 1 GB/s.
constexpr double kResizeFloorS = 0.005;
constexpr double kStartS = 0.15;
double resize_cost(double state_bytes, double link_bytes_per_s);
double restart_cost(double state_bytes, double launch_s);

// "42.0 s", "12.5 min", "3.20 h".
std::string duration(double seconds);

// A policy's result: {"avg_jct_s", "median_jct_s", "p99_jct_s", "makespan_s", "utilisation",
// "gpu_hours", "resizes", "resize_paused_s", "jobs": [...]}.
nlohmann::ordered_json policy_json(const cluster::Result& r);

// --json FILE: `doc` written to FILE, or to `out` when FILE is "-"; InputError when it cannot be.
void write_json(const std::string& file, const nlohmann::ordered_json& doc, std::ostream& out);

// The table's header and one policy's row.
void table_header(std::ostream& out);
void table_row(std::ostream& out, const std::string& label, const cluster::Result& r);

// A fresh directory under /tmp, removed with its contents at scope exit unless kept.
struct ScratchDir {
  std::string path;
  bool keep = false;
  explicit ScratchDir(const std::string& prefix);
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
};

}  // namespace tensoropt::cli
