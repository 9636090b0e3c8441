// `tensoropt plan`: the Pareto frontier of (time per step, memory per GPU) for each GPU count, as a
// table, a JSON plan file and a plot, with the point chosen for the memory budget.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <ostream>
#include <sstream>

#include "cli/commands.h"
#include "cli/profile_use.h"
#include "cli/format.h"
#include "cli/plot_svg.h"
#include "graph/error.h"
#include "graph/import.h"
#include "graph/merged_weights.h"
#include "graph/summary.h"
#include "planner/gpu_counts.h"
#include "planner/plan_file.h"
#include "planner/strategy_summary.h"

namespace tensoropt::cli {
namespace {

using namespace planner;

// Writes an output file with write(stream): to `out` for "-", else to PATH.part, renamed to PATH
// when complete, so a failure part way leaves an earlier PATH as it was, not half a file.
template <class Write>
void write_output(const std::string& path, const std::string& flag, std::ostream& out, const Write& write) {
  if (path == "-") {
    write(out);
    return;
  }
  const std::string part = path + ".part";
  const auto discard = [&] {
    std::error_code ignored;
    std::filesystem::remove(part, ignored);
  };
  try {
    std::ofstream f(part, std::ios::binary);
    if (f) write(f);
    if (!f.flush()) throw InputError(flag + ": cannot write '" + part + "'");
    f.close();
    std::filesystem::rename(part, path);
  } catch (const std::filesystem::filesystem_error& e) {
    discard();
    throw InputError(flag + ": cannot write '" + path + "': " + e.code().message());
  } catch (...) {
    discard();
    throw;
  }
}

// Refuses an output file that cannot be written before any planning, which can take minutes.
// Leaves an existing file as it is and removes one it had to create.
void check_writable(const std::optional<std::string>& path, const std::string& flag) {
  if (!path || *path == "-") return;
  std::error_code ec;
  const bool existed = std::filesystem::exists(*path, ec);
  {
    std::ofstream f(*path, std::ios::binary | std::ios::app);
    if (!f) throw InputError(flag + ": cannot write '" + *path + "'");
  }
  if (!existed) std::filesystem::remove(*path, ec);
}

std::string mesh_shape(const DeviceMesh& m) {
  std::string s = "[";
  for (int a = 0; a < m.ndim(); ++a) {
    if (a) s += ',';
    s += std::to_string(m.axis(a).size);
  }
  return s + "]";
}

// Rows to show: all, or `rows` spread evenly over the frontier, always with the first, the last
// and the chosen point; one row is the chosen point (the fastest when none is chosen).
std::vector<size_t> rows_to_show(size_t n, int rows, int chosen) {
  std::vector<size_t> out;
  if (rows <= 0 || n <= static_cast<size_t>(rows)) {
    for (size_t i = 0; i < n; ++i) out.push_back(i);
    return out;
  }
  if (rows == 1) return {chosen >= 0 ? static_cast<size_t>(chosen) : 0};
  for (int r = 0; r < rows; ++r) out.push_back(static_cast<size_t>(std::llround(static_cast<double>(r) * static_cast<double>(n - 1) / (rows - 1))));
  if (chosen >= 0) out.push_back(static_cast<size_t>(chosen));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

constexpr size_t kHintPoints = 1000;
constexpr double kHintSeconds = 10;

// What the merged frontier is: "on the exact frontier", "within 1.2% of the exact frontier" (the
// largest bound of an approximate mesh, or --epsilon), or "on an approximate frontier, no bound known".
std::string frontier_words(const GpuFrontier& f) {
  const double within = frontier_within(f);
  if (within == 0) return "on the exact frontier";
  if (within < 0) return "on an approximate frontier, no bound known";
  return "within " + share_percent(within) + " of the exact frontier";
}

void print_frontier(const GpuPlan& gp, int64_t batch, int rows, double epsilon, std::ostream& out) {
  const GpuFrontier& f = gp.frontier;
  auto searched = [&](const Baseline& b) {
    for (const auto& s : f.spaces)
      if (s->mesh().shape() == b.space->mesh().shape()) return true;
    return false;
  };
  std::string meshes;
  for (const MeshStats& m : f.meshes) meshes += (meshes.empty() ? "" : ", ") + m.mesh;
  // The mesh list grows with the GPU count (a dozen meshes at 4096): streamed, never cut short.
  char tail[128];
  std::snprintf(tail, sizeof tail, "; planned in %.2f s, planner peak %s)\n", f.seconds,
                bytes_human(static_cast<double>(f.peak_bytes)).c_str());
  out << f.gpus << (f.gpus == 1 ? " GPU: " : " GPUs: ") << f.points.size() << " points " << frontier_words(f) << " (meshes " << meshes
      << tail;
  for (const std::string& s : f.skipped) out << "  skipped mesh " << s << "\n";
  for (const MeshStats& m : f.meshes)
    if (!m.approximation.empty()) out << "  mesh " << m.mesh << ": " << m.approximation << "\n";
  out << "       #     time/step   samples/s   memory/GPU  mesh     strategy\n";
  std::vector<size_t> show = rows_to_show(f.points.size(), rows, gp.chosen);
  for (size_t i : show) {
    const PlanPoint& p = f.points[i];
    const StrategySpace& sp = *f.spaces[static_cast<size_t>(p.mesh)];
    char line[512];
    std::snprintf(line, sizeof line, "  %s %5zu  %12s  %10.1f  %11s  %-7s  %s\n", static_cast<int>(i) == gp.chosen ? "*" : " ", i,
                  seconds_human(p.cost.time).c_str(), static_cast<double>(batch) / p.cost.time,
                  bytes_human(p.cost.memory).c_str(), mesh_shape(sp.mesh()).c_str(),
                  summarize_strategy(sp, p.assignment).c_str());
    out << line;
  }
  if (show.size() < f.points.size())
    out << "  (" << show.size() << " of " << f.points.size() << " points shown; --rows 0 shows all, --json writes all)\n";
  out << "  " << gp.reason << "\n";
  // Exact frontiers of big models hold thousands of points microseconds and kilobytes apart:
  // say how to get one a person can read, and faster.
  const bool all_exact = std::all_of(f.meshes.begin(), f.meshes.end(), [](const MeshStats& m) { return m.approximation.empty(); });
  if (epsilon == 0 && all_exact && (f.points.size() > kHintPoints || f.seconds > kHintSeconds))
    out << "  note: the exact frontier has " << f.points.size()
        << " points; --epsilon 0.01 thins it to points about 1% apart\n";
  if (!gp.baselines.empty()) {
    out << "  baselines, as the frontier sees them:\n";
    for (const Baseline& b : gp.baselines) {
      int dom = dominating_point(f, b.cost);
      char line[512];
      std::snprintf(line, sizeof line, "    %-22s %12s  %11s  %-7s  %s; %s\n", b.name.c_str(), seconds_human(b.cost.time).c_str(),
                    bytes_human(b.cost.memory).c_str(), mesh_shape(b.space->mesh()).c_str(),
                    summarize_strategy(*b.space, b.assignment).c_str(),
                    dom >= 0 ? ("point " + std::to_string(dom) + " is as fast or faster with no more memory").c_str()
                    : !all_exact       ? "not dominated: this frontier is approximate (see above)"
                    : epsilon > 0      ? "not dominated: --epsilon thinned the frontier"
                    : !searched(b)     ? "not dominated: its mesh is outside the --mesh-axes searched"
                                       : "NOT dominated by the frontier (a bug: please report)");
      out << line;
      if (!b.caveat.empty()) out << "      note: " << b.caveat << "\n";
    }
    if (!f.points.empty()) out << "    fastest plan           point 0, " << seconds_human(f.points[0].cost.time) << "\n";
  }
  out << "\n";
}

// `more`: what else could make a point fit, beyond more GPUs (empty: nothing).
void choose(GpuPlan& gp, double budget, const std::string& budget_why, const std::string& more) {
  const auto& pts = gp.frontier.points;
  for (size_t i = 0; i < pts.size(); ++i) {
    if (pts[i].cost.memory <= budget) {
      gp.chosen = static_cast<int>(i);
      const size_t fit = pts.size() - i;
      gp.reason = "chosen: point " + std::to_string(i) + (fit == 1 ? ", the only point" : ", the fastest of the " + std::to_string(fit) + " points") +
                  " within the memory budget of " + bytes_human(budget) + " (" + budget_why + ")";
      return;
    }
  }
  gp.reason = "no point fits the memory budget of " + bytes_human(budget) + " (" + budget_why + "); the smallest needs " +
              (pts.empty() ? std::string("?") : bytes_human(pts.back().cost.memory)) + ": use more GPUs" + more;
}

void check_args(const PlanArgs& args) {
  if (!(args.epsilon >= 0) || args.epsilon >= 1) throw InputError("--epsilon must be at least 0 and below 1");
  if (args.mesh_axes < 1 || args.mesh_axes > 3) throw InputError("--mesh-axes must be 1, 2 or 3");
  if (args.rows < 0) throw InputError("--rows must be 0 (all) or more");
}

// The settings the flags give, and the memory budget's origin in words (for the chosen point's reason).
struct SettingsAndBudget {
  PlanSettings settings;
  std::string budget_why;
};

SettingsAndBudget plan_settings(const PlanArgs& args, const std::vector<int>& counts) {
  PlanSettings settings;
  settings.model_path = args.model;
  settings.cluster = load_cluster(args.cluster);
  settings.training.precision = parse_precision(args.dtype);
  settings.training.optimizer = parse_optimizer(args.optimizer);
  // --no-recompute and --recompute exclude each other (cli/main.cc); the mode is checked here, as
  // --optimizer and --dtype are.
  if (args.recompute_mode != "selective" && args.recompute_mode != "all" && args.recompute_mode != "none") {
    throw InputError("--recompute must be selective, all or none, not '" + args.recompute_mode + "'");
  }
  settings.recompute = args.recompute && args.recompute_mode != "none";
  settings.recompute_all = settings.recompute && args.recompute_mode == "all";
  settings.zero = args.zero;
  settings.param_persistence = args.param_persistence;
  settings.mesh_axes = args.mesh_axes;
  settings.epsilon = args.epsilon;
  settings.batch = args.batch ? *args.batch : kDefaultBatchPerDevice * static_cast<int64_t>(counts.back());
  std::string budget_why;
  if (args.memory_budget) {
    settings.memory_budget = parse_bytes(*args.memory_budget, "--memory-budget");
    budget_why = "--memory-budget";
  } else {
    settings.memory_budget = settings.cluster.usable_memory();
    const bool cpu = settings.cluster.cpu_workers();
    budget_why = bytes_human(settings.cluster.gpu.memory_bytes) + (cpu ? " of memory per CPU worker less a " : " of GPU memory less a ") +
                 bytes_human(settings.cluster.memory_reserve_bytes) +
                 (cpu ? " reserve for the process, Gloo and allocator slack" : " reserve for the CUDA context, NCCL and allocator slack");
  }
  return {std::move(settings), std::move(budget_why)};
}

using Clock = std::chrono::steady_clock;

// The planner's options; its progress lines go to `err` once planning has taken over a second,
// with one hint at --epsilon when an exact frontier takes long (`hinted`: given already).
PlanOptions plan_options(const PlanArgs& args, const PlanSettings& settings, Clock::time_point start, bool& hinted,
                         std::ostream& err) {
  PlanOptions options;
  options.space.training = settings.training;
  options.space.recompute = settings.recompute;
  options.space.recompute_all = settings.recompute_all;
  options.space.zero = settings.zero;
  options.space.param_persistence = settings.param_persistence;
  options.epsilon = settings.epsilon;
  options.max_mesh_axes = settings.mesh_axes;
  if (args.exact) options.max_exact_points = 0;
  options.max_planner_bytes =
      args.planner_memory == "0" ? 0 : static_cast<int64_t>(parse_bytes(args.planner_memory, "--planner-memory"));
  options.progress = [&err, start, &hinted, epsilon = settings.epsilon](const std::string& line) {
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    if (elapsed > 1) err << "tensoropt: " << line << std::endl;
    if (elapsed > kHintSeconds && epsilon == 0 && !hinted) {
      hinted = true;
      err << "tensoropt: this exact search is taking a while; --epsilon 0.01 keeps points about 1% apart, which saves time only where the frontiers themselves are large (the planner memory in these lines)"
          << std::endl;
    }
  };
  return options;
}

// --dump-space: every candidate mesh's strategy space for each GPU count.
void dump_space(const std::string& path, const std::vector<int>& counts, const PlanSettings& settings, const Graph& graph,
                const AnalyticCompute& compute, const SpaceOptions& space_options, std::ostream& out) {
  std::string all = "[";
  for (size_t i = 0; i < counts.size(); ++i) {
    std::vector<std::unique_ptr<StrategySpace>> spaces;
    for (const DeviceMesh& m : candidate_meshes(settings.cluster, counts[i], settings.mesh_axes))
      spaces.push_back(std::make_unique<StrategySpace>(graph, m, compute, space_options));
    all += (i ? ",\n" : "\n") + space_json(spaces, counts[i]);
  }
  write_output(path, "--dump-space", out, [&](std::ostream& os) { os << all << "\n]\n"; });
}

void print_header(const PlanArgs& args, const PlanSettings& settings, const Graph& graph, std::ostream& text) {
  const MergedWeights merged = merged_weights(graph);
  if (merged.copies > 0) text << "warning  " << merged_weights_note(merged, summarize(graph).trainable_parameters) << "\n";
  text << "model    " << args.model << ", batch " << settings.batch << " (global), " << args.dtype << ", " << args.optimizer
       << "\ncluster  " << settings.cluster.name << ": " << settings.cluster.gpu.name << ", " << settings.cluster.gpus_per_node
       << " per node; memory budget " << bytes_human(settings.memory_budget) << " per GPU\ncost     "
       << (args.profile ? "profile " + *args.profile + " where it has measurements (docs/profile.md), else the analytic model"
                        : std::string("analytic model (docs/cost-model.md)"))
       << "\nsearch   " << (settings.epsilon > 0 ? "within " + share_percent(settings.epsilon) + " of the exact frontier asked for (--epsilon)" : std::string("exact frontier asked for"))
       << "; each GPU count says what it got\n\n";
}

// The frontier of each GPU count with its chosen point (and baselines), each printed to `text` as it is found.
std::vector<GpuPlan> plan_counts(const PlanArgs& args, const std::vector<int>& counts, SettingsAndBudget& s, const Graph& graph,
                                 const PlanOptions& options, std::ostream& text, std::ostream& err) {
  PlanSettings& settings = s.settings;
  std::vector<GpuPlan> plans;
  int measured = 0, modelled = 0;
  for (int gpus : counts) {
    GpuPlan gp;
    const profiler::ProfileCosts costs = cli_costs(args.profile, settings.cluster, settings.training.precision, gpus);
    if (!costs.warning.empty() && gpus == counts.front()) err << "tensoropt: warning: " << costs.warning << "\n";
    const planner::ComputeModel& compute = *costs.compute;
    gp.frontier = plan_frontier(graph, costs.cluster, gpus, compute, options);
    choose(gp, settings.memory_budget, s.budget_why,
           !settings.recompute_all
               ? ", or plan with --recompute all (chains of ops recompute: far less memory for activations)"
               : "");
    if (args.baselines) gp.baselines = find_baselines(graph, costs.cluster, gpus, compute, options);
    print_frontier(gp, settings.batch, args.rows, settings.epsilon, text);
    if (costs.profiled) {
      text << "costs    " << costs.counts_text() << "\n\n";
      const profiler::TermCounts n = costs.counts();
      measured += n.measured;
      modelled += n.modelled;
      settings.cost_source = costs.source;
      settings.cost_terms = {measured, modelled};
    }
    plans.push_back(std::move(gp));
  }
  return plans;
}

PlotSpec plot_spec(const PlanArgs& args, const PlanSettings& settings, const std::vector<GpuPlan>& plans) {
  PlotSpec spec;
  spec.title = args.model + ", batch " + std::to_string(settings.batch) + ", " + settings.cluster.name;
  for (size_t i = 0; i < plans.size(); ++i) {
    PlotCurve c;
    c.label = std::to_string(plans[i].frontier.gpus) + " GPU" + (plans[i].frontier.gpus == 1 ? "" : "s");
    for (const PlanPoint& p : plans[i].frontier.points) c.points.push_back({p.cost.time, p.cost.memory});
    spec.curves.push_back(c);
    for (const Baseline& b : plans[i].baselines)
      // Megatron's name carries its degrees ("Megatron TP8 x DP2"): one kind whatever the count.
      spec.markers.push_back({b.name + " (" + c.label + ")", b.name.rfind("Megatron", 0) == 0 ? "Megatron TP" : b.name,
                              {b.cost.time, b.cost.memory}, static_cast<int>(i)});
  }
  const GpuPlan& last = plans.back();
  if (last.chosen >= 0) {
    const Cost& c = last.frontier.points[static_cast<size_t>(last.chosen)].cost;
    spec.chosen = PlotPoint{c.time, c.memory};
  }
  spec.memory_budget_bytes = settings.memory_budget;
  return spec;
}

}  // namespace

int run_plan(const PlanArgs& args, std::ostream& out, std::ostream& err) {
  const auto start = Clock::now();
  std::vector<int> counts = parse_gpu_counts(args.gpus);
  check_args(args);
  SettingsAndBudget s = plan_settings(args, counts);
  PlanSettings& settings = s.settings;
  check_writable(args.json, "--json");
  check_writable(args.plot, "--plot");
  check_writable(args.dump_space, "--dump-space");
  ImportOptions io;
  io.batch = settings.batch;
  io.frozen = args.frozen;
  settings.frozen = args.frozen;
  Graph graph = import_onnx_file(args.model, io);
  settings.model_hash = file_hash(args.model);
  const AnalyticCompute compute(settings.cluster, settings.training.precision);

  const bool to_stdout = args.json && *args.json == "-";
  std::ostream& text = to_stdout ? err : out;
  bool hinted = false;
  const PlanOptions options = plan_options(args, settings, start, hinted, err);
  if (args.dump_space) dump_space(*args.dump_space, counts, settings, graph, compute, options.space, out);

  print_header(args, settings, graph, text);
  std::vector<GpuPlan> plans = plan_counts(args, counts, s, graph, options, text, err);
  if (args.json) write_output(*args.json, "--json", out, [&](std::ostream& os) { write_plan_json(os, settings, graph, plans); });
  if (args.plot) write_svg(plot_spec(args, settings, plans), *args.plot);
  return 0;
}

}  // namespace tensoropt::cli
