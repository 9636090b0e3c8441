// `tensoropt evaluate`: the cost of one given strategy (a plan file's point, or a hand-written
// strategy file), with every term of its breakdown.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <ostream>

#include "cli/commands.h"
#include "cli/profile_use.h"
#include "cli/explain_output.h"
#include "cli/format.h"
#include "graph/error.h"
#include "graph/import.h"
#include "planner/plan_file.h"
#include "planner/strategy_summary.h"

namespace tensoropt::cli {

namespace {

using namespace planner;

// The plan's points were costed with its own settings: a flag that says otherwise is refused
// rather than silently ignored.
void check_flags_agree(const EvaluateArgs& args, const PlanSettings& s) {
  const auto disagree = [&](const std::string& flag, const std::string& given, const std::string& planned) {
    throw InputError(flag + " " + given + " differs from the plan's " + planned + " (" + args.strategy +
                     "): leave it out, or plan again with it");
  };
  if (args.batch && *args.batch != s.batch) disagree("--batch", std::to_string(*args.batch), "batch " + std::to_string(s.batch));
  auto joined = [](const std::vector<std::string>& v) {
    std::string r;
    for (const auto& p : v) r += (r.empty() ? "" : ",") + p;
    return "'" + r + "'";
  };
  if (args.frozen && *args.frozen != s.frozen) disagree("--frozen", joined(*args.frozen), "frozen " + joined(s.frozen));
  if (args.cluster && load_cluster(*args.cluster).name != s.cluster.name) disagree("--cluster", *args.cluster, "cluster " + s.cluster.name);
  if (args.dtype && parse_precision(*args.dtype) != s.training.precision)
    disagree("--dtype", *args.dtype, "dtype " + std::string(precision_name(s.training.precision)));
  if (args.optimizer && parse_optimizer(*args.optimizer) != s.training.optimizer)
    disagree("--optimizer", *args.optimizer, "optimizer " + std::string(optimizer_name(s.training.optimizer)));
}

// The settings to cost with: a plan file's own, else the flags' with their defaults.
PlanSettings evaluate_settings(const EvaluateArgs& args, const StoredStrategy& stored) {
  PlanSettings s;
  if (stored.settings) {
    s = *stored.settings;
    check_plan_model(s, args.model);
    check_flags_agree(args, s);
  } else {
    s.cluster = load_cluster(args.cluster.value_or("h100-sxm"));
    s.training.precision = parse_precision(args.dtype.value_or("fp32"));
    s.training.optimizer = parse_optimizer(args.optimizer.value_or("adam"));
    s.recompute_all = true;  // a hand-written strategy may recompute any op that can
    if (args.batch && stored.batch && *args.batch != *stored.batch)
      throw InputError("--batch " + std::to_string(*args.batch) + " differs from the strategy's batch " + std::to_string(*stored.batch) +
                       " (" + args.strategy + "): leave it out, or change the file");
    if (!args.batch && !stored.batch)
      throw InputError("--batch is needed with a strategy file that gives no \"batch\" (a plan file records its own)");
    s.batch = args.batch ? *args.batch : *stored.batch;
    s.frozen = args.frozen.value_or(std::vector<std::string>{});
  }
  return s;
}

// One strategy's cost and breakdown, and whether they match what its plan file recorded.
struct Evaluation {
  const StoredStrategy& stored;
  const StrategySpace& space;
  std::vector<int> assignment;
  Cost cost;
  Breakdown b;
  int64_t batch;
  bool matches;
  std::string source;  // what priced this evaluation: "analytic" or "profile FILE"
};

void print_json(const Evaluation& e, std::ostream& out) {
  nlohmann::ordered_json j;
  j["strategy"] = e.stored.where;
  j["mesh"] = e.stored.mesh;
  j["time_s"] = e.cost.time;
  j["memory_bytes"] = e.cost.memory;
  j["samples_per_s"] = static_cast<double>(e.batch) / e.cost.time;
  j["summary"] = summarize_strategy(e.space, e.assignment);
  for (int i = 0; i < kTerms; ++i) {
    Term t = static_cast<Term>(i);
    j["breakdown"][term_name(t) + (is_time_term(t) ? "_s" : "_bytes")] = e.b[t];
  }
  if (e.stored.recorded) j["matches_plan"] = e.matches;
  j["cost_source"] = e.source;
  out << j.dump(2) << "\n";
}

void print_text(const Evaluation& e, std::ostream& out) {
  out << "strategy  " << e.stored.where << ", mesh " << e.space.mesh().str() << "\n";
  out << "summary   " << summarize_strategy(e.space, e.assignment) << "\n";
  char line[256];
  std::snprintf(line, sizeof line, "time      %s per step, %.1f samples/s (batch %lld)\n", seconds_human(e.cost.time).c_str(),
                static_cast<double>(e.batch) / e.cost.time, static_cast<long long>(e.batch));
  out << line;
  for (int i = 0; i < kTerms; ++i) {
    Term t = static_cast<Term>(i);
    if (!is_time_term(t) || e.b[t] == 0) continue;
    std::snprintf(line, sizeof line, "  %-36s %12s\n", term_name(t).c_str(), seconds_human(e.b[t]).c_str());
    out << line;
  }
  out << "memory    " << bytes_human(e.cost.memory) << " per GPU\n";
  for (int i = 0; i < kTerms; ++i) {
    Term t = static_cast<Term>(i);
    if (is_time_term(t) || e.b[t] == 0) continue;
    std::snprintf(line, sizeof line, "  %-36s %12s\n", term_name(t).c_str(), bytes_human(e.b[t]).c_str());
    out << line;
  }
  if (!e.stored.recorded) return;
  const std::string planned = e.stored.settings ? e.stored.settings->cost_source : "analytic";
  if (e.matches) out << "matches the plan's cost of this point exactly\n";
  else if (planned != e.source)
    out << "differs from the plan's recorded cost (" + seconds_human(e.stored.recorded->time) + ", " + bytes_human(e.stored.recorded->memory) +
               "): the plan was priced by " + planned + ", this by " + e.source + "\n";
  else
    out << "DIFFERS from the plan's recorded cost (" + seconds_human(e.stored.recorded->time) + ", " +
               bytes_human(e.stored.recorded->memory) + "): was the plan made by another tensoropt version?\n";
}

}  // namespace

int run_evaluate(const EvaluateArgs& args, std::ostream& out, std::ostream& err) {
  StoredStrategy stored = read_strategy(args.strategy, args.gpus, args.point);
  PlanSettings s = evaluate_settings(args, stored);
  ImportOptions io;
  io.batch = s.batch;
  io.frozen = s.frozen;
  Graph graph = import_onnx_file(args.model, io);
  int64_t devices = 1;
  for (int x : stored.mesh) devices *= x;
  const profiler::ProfileCosts costs = cli_costs(args.profile, s.cluster, s.training.precision, static_cast<int>(devices));
  if (!costs.warning.empty()) err << "tensoropt: warning: " << costs.warning << "\n";
  SpaceOptions so;
  so.training = s.training;
  so.recompute = s.recompute;
  so.recompute_all = s.recompute_all;
  so.zero = s.zero;
  so.param_persistence = s.param_persistence;  // the plan's; for a strategy file 0, any parameter may be split
  StrategySpace space(graph, DeviceMesh::with_shape(costs.cluster, stored.mesh), *costs.compute, so);
  std::vector<int> assignment = resolve_strategy(stored, space);
  Cost cost = space.cost(assignment);
  Breakdown b = space.breakdown(assignment);
  bool matches = stored.recorded && stored.recorded->time == cost.time && stored.recorded->memory == cost.memory;
  if (args.by_layer || args.by_node) {
    const Explanation x = explain(space, assignment, args.by_node);
    if (args.json) print_explanation_json(space, assignment, x, args.by_node, out);
    else print_explanation_text(space, assignment, x, args.by_node, out);
    return 0;
  }
  const Evaluation e{stored, space, std::move(assignment), cost, b, s.batch, matches, costs.source};
  if (args.json) print_json(e, out);
  else print_text(e, out);
  if (costs.profiled && !args.json) out << "costs     " << costs.counts_text() << "\n";
  return 0;
}

}  // namespace tensoropt::cli
