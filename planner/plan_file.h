// The plan file (docs/plan-format.md): JSON, versioned. What `plan --json` writes and `evaluate`
// reads back, and the hand-written strategy file `evaluate --strategy` also accepts.
//
// A plan records how it was made (model path, FNV-1a hash and batch; the cluster; precision,
// optimizer, search options; the cost source; the memory budget) and, per GPU count, the strategy
// spaces (per mesh: every variable with its configuration names), the frontier points sorted by
// time (cost, breakdown, summary, strategy as configuration indices into a space), the chosen
// point and why, the baselines, and the planner's own time and memory.
// A strategy file names one configuration per variable:
//   {"format": "tensoropt-strategy", "version": 1, "mesh": [2, 4], "configs": {"op:/h.0/MatMul": "b:S0 n:S1", ...}}
// or gives rules over node and parameter names instead of "configs" (planner/strategy_rules.h):
//   {"format": "tensoropt-strategy", "version": 1, "gpus": 8, "batch": 64,
//    "rules": [{"match": "/h.*/attn/*", "op": "MatMul", "split": {"axis": 1}}], "default": "batch"}
// ("gpus": N is the mesh [N]; "batch" is optional, the global batch the strategy is meant for).
// Errors: InputError naming the file and the field for anything unreadable or inconsistent.
// Thread-safety: safe to call from several threads on different streams; write_plan_json formats
// points on every hardware thread of its own and leaves the stream's error state to the caller.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <ostream>
#include <string>
#include <vector>

#include "planner/baselines.h"
#include "planner/parallel/cluster.h"
#include "planner/file_hash.h"
#include "planner/parallel/sharding_plan.h"
#include "planner/plan.h"
#include "planner/strategy_rules.h"
#include "planner/training.h"

namespace tensoropt::planner {

inline constexpr int kPlanFormatVersion = 1;

struct PlanSettings {
  std::string model_path;
  std::string model_hash;  // file_hash of the file, 16 hex digits
  std::string model_hash_algorithm = kModelHashAlgorithm;  // "fnv1a64" in older plan files
  int64_t batch = 0;
  std::vector<std::string> frozen;  // --frozen patterns the model was imported with
  Cluster cluster;
  Training training;
  bool recompute = true;
  bool recompute_all = false;  // every op may recompute (plan --recompute all)
  bool zero = true;
  int64_t param_persistence = 0;  // SpaceOptions::param_persistence (plan --param-persistence)
  int mesh_axes = 2;
  double epsilon = 0;
  double memory_budget = 0;  // bytes per GPU
  std::string cost_source = "analytic";  // or "profile FILE" (docs/profile.md)
  std::optional<std::pair<int, int>> cost_terms;  // with a profile: terms measured, modelled
};

struct GpuPlan {
  GpuFrontier frontier;
  std::vector<Baseline> baselines;
  int chosen = -1;  // index into frontier.points, -1 when none fits the budget
  std::string reason;
};

// The plan file (docs/plan-format.md), written to `os` piece by piece as it is made.
void write_plan_json(std::ostream& os, const PlanSettings& settings, const Graph& graph, const std::vector<GpuPlan>& plans);
// Every variable and its configurations, per candidate mesh (`plan --dump-space`).
std::string space_json(const std::vector<std::unique_ptr<StrategySpace>>& spaces, int gpus);

// One strategy read back: names per variable on a mesh, and the settings when it came from a plan.
struct StoredStrategy {
  std::optional<PlanSettings> settings;  // set for plan files
  std::vector<int> mesh;
  std::map<std::string, std::string> configs;  // variable name -> configuration name
  std::optional<StrategyRules> rules;          // a strategy file's rules (then configs is empty)
  std::optional<int64_t> batch;                // a strategy file's "batch", when it gives one
  std::optional<Cost> recorded;                // the plan's cost of the point
  // Plan files: the space's sharding data and the point's configuration index per variable, from
  // which resolve_sharding (planner/parallel/sharding_plan.h) gives what each worker runs with no
  // search; absent in plan files written before plans carried it, and in strategy files.
  std::optional<ShardingTable> sharding;
  std::vector<int> indices;
  std::string where;                           // "plan.json, 8 GPUs, point 3"
};
// A strategy file, or a plan file's point `point` of the frontier for `gpus` GPUs (gpus may be
// omitted when the plan has one frontier; point defaults to the chosen one).
StoredStrategy read_strategy(const std::string& path, std::optional<int> gpus, std::optional<int> point);

// InputError unless `model_path` is the file the plan was made for (its hash).
void check_plan_model(const PlanSettings& settings, const std::string& model_path);

// The assignment a stored strategy names in `space` (by configuration names, or by its rules:
// resolve_rules); InputError naming the first unknown or missing variable or configuration, or
// the rule at fault.
std::vector<int> resolve_strategy(const StoredStrategy& s, const StrategySpace& space);

}  // namespace tensoropt::planner
