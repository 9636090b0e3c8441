// `tensoropt evaluate`: the cost of one given strategy (a plan file's point, or a hand-written
// strategy file), with every term of its breakdown.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <ostream>

#include "cli/commands.h"
#include "cli/format.h"
#include "graph/error.h"
#include "graph/import.h"
#include "planner/plan_file.h"
#include "planner/strategy_summary.h"

namespace tensoropt::cli {

using namespace planner;

int run_evaluate(const EvaluateArgs& args, std::ostream& out) {
  StoredStrategy stored = read_strategy(args.strategy, args.gpus, args.point);
  PlanSettings s;
  if (stored.settings) {
    s = *stored.settings;
    check_plan_model(s, args.model);
    // The plan's points were costed with its own settings: a flag that says otherwise is refused
    // rather than silently ignored.
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
  } else {
    s.cluster = load_cluster(args.cluster.value_or("h100-sxm"));
    s.training.precision = parse_precision(args.dtype.value_or("fp32"));
    s.training.optimizer = parse_optimizer(args.optimizer.value_or("adam"));
    s.recompute_all = true;  // a hand-written strategy may recompute any op that can
    if (!args.batch) throw InputError("--batch is needed with a strategy file (a plan file records its own)");
    s.batch = *args.batch;
    s.frozen = args.frozen.value_or(std::vector<std::string>{});
  }
  ImportOptions io;
  io.batch = s.batch;
  io.frozen = s.frozen;
  Graph graph = import_onnx_file(args.model, io);
  AnalyticCompute compute(s.cluster, s.training.precision);
  SpaceOptions so;
  so.training = s.training;
  so.recompute = s.recompute;
  so.recompute_all = s.recompute_all;
  so.zero = s.zero;
  so.param_persistence = s.param_persistence;  // the plan's; for a strategy file 0, any parameter may be split
  StrategySpace space(graph, DeviceMesh::with_shape(s.cluster, stored.mesh), compute, so);
  std::vector<int> assignment = resolve_strategy(stored, space);
  Cost cost = space.cost(assignment);
  Breakdown b = space.breakdown(assignment);
  bool matches = stored.recorded && stored.recorded->time == cost.time && stored.recorded->memory == cost.memory;

  if (args.json) {
    nlohmann::ordered_json j;
    j["strategy"] = stored.where;
    j["mesh"] = stored.mesh;
    j["time_s"] = cost.time;
    j["memory_bytes"] = cost.memory;
    j["samples_per_s"] = static_cast<double>(s.batch) / cost.time;
    j["summary"] = summarize_strategy(space, assignment);
    for (int i = 0; i < kTerms; ++i) {
      Term t = static_cast<Term>(i);
      j["breakdown"][term_name(t) + (is_time_term(t) ? "_s" : "_bytes")] = b[t];
    }
    if (stored.recorded) j["matches_plan"] = matches;
    out << j.dump(2) << "\n";
    return 0;
  }
  out << "strategy  " << stored.where << ", mesh " << space.mesh().str() << "\n";
  out << "summary   " << summarize_strategy(space, assignment) << "\n";
  char line[256];
  std::snprintf(line, sizeof line, "time      %s per step, %.1f samples/s (batch %lld)\n", seconds_human(cost.time).c_str(),
                static_cast<double>(s.batch) / cost.time, static_cast<long long>(s.batch));
  out << line;
  for (int i = 0; i < kTerms; ++i) {
    Term t = static_cast<Term>(i);
    if (!is_time_term(t) || b[t] == 0) continue;
    std::snprintf(line, sizeof line, "  %-36s %12s\n", term_name(t).c_str(), seconds_human(b[t]).c_str());
    out << line;
  }
  out << "memory    " << bytes_human(cost.memory) << " per GPU\n";
  for (int i = 0; i < kTerms; ++i) {
    Term t = static_cast<Term>(i);
    if (is_time_term(t) || b[t] == 0) continue;
    std::snprintf(line, sizeof line, "  %-36s %12s\n", term_name(t).c_str(), bytes_human(b[t]).c_str());
    out << line;
  }
  if (stored.recorded)
    out << (matches ? "matches the plan's cost of this point exactly\n"
                    : "DIFFERS from the plan's recorded cost (" + seconds_human(stored.recorded->time) + ", " +
                          bytes_human(stored.recorded->memory) + "): was the plan made by another tensoropt version?\n");
  return 0;
}

}  // namespace tensoropt::cli
