#include "planner/plan_file.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "graph/units.h"
#include "graph/error.h"
#include "graph/summary.h"
#include "planner/ft/thread_pool.h"
#include "planner/sharding.h"
#include "planner/sharding_json.h"
#include "planner/space_description.h"
#include "planner/strategy_rules.h"
#include "planner/strategy_summary.h"

namespace tensoropt::planner {
namespace {

using nlohmann::ordered_json;

ordered_json mesh_json(const DeviceMesh& m) {
  ordered_json shape = ordered_json::array(), links = ordered_json::array();
  for (int a = 0; a < m.ndim(); ++a) {
    shape.push_back(m.axis(a).size);
    links.push_back(m.axis(a).inter_node ? "inter" : "intra");
  }
  return {{"shape", shape}, {"links", links}};
}

ordered_json breakdown_json(const Breakdown& b) {
  ordered_json j;
  for (int i = 0; i < kTerms; ++i) {
    Term t = static_cast<Term>(i);
    if (t == Term::CommFirst || t == Term::CommLast || (t > Term::CommFirst && t < Term::CommLast)) {
      if (b[t] == 0) continue;  // communication kinds that do not occur are left out
    }
    j[term_name(t) + (is_time_term(t) ? "_s" : "_bytes")] = b[t];
  }
  return j;
}

ordered_json point_json(const StrategySpace& space, int space_index, const std::vector<int>& assignment, Cost cost,
                        int64_t batch) {
  ordered_json p;
  p["time_s"] = cost.time;
  p["memory_bytes"] = cost.memory;
  p["samples_per_s"] = cost.time > 0 ? static_cast<double>(batch) / cost.time : 0;
  p["mesh"] = mesh_json(space.mesh())["shape"];
  p["summary"] = summarize_strategy(space, assignment);
  p["breakdown"] = breakdown_json(space.breakdown(assignment));
  p["strategy"] = {{"space", space_index}, {"configs", assignment}};
  return p;
}

// As dump(1), except that arrays of numbers, strings and booleans stay on one line: a plan file
// holds one configuration index per variable per point, which dump(1) would put one per line.
void write_pretty(std::string& out, const ordered_json& v, int depth) {
  const auto flat = [](const ordered_json& a) {
    return std::none_of(a.begin(), a.end(), [](const ordered_json& e) { return e.is_structured(); });
  };
  if (!v.is_structured() || v.empty()) {
    out += v.dump();
    return;
  }
  if (v.is_array() && flat(v)) {
    out += '[';
    char digits[24];
    for (size_t i = 0; i < v.size(); ++i) {
      if (i) out += ", ";
      const ordered_json& e = v[i];
      // Configuration indices are most of a plan file: written without a dump() each.
      if (e.is_number_unsigned()) {
        out.append(digits, std::to_chars(digits, digits + sizeof digits, e.get<uint64_t>()).ptr);
      } else if (e.is_number_integer()) {
        out.append(digits, std::to_chars(digits, digits + sizeof digits, e.get<int64_t>()).ptr);
      } else {
        out += e.dump();
      }
    }
    out += ']';
    return;
  }
  const std::string pad(static_cast<size_t>(depth) + 1, ' ');
  out += v.is_object() ? "{\n" : "[\n";
  size_t i = 0;
  for (auto it = v.begin(); it != v.end(); ++it, ++i) {
    out += pad;
    if (v.is_object()) out += ordered_json(it.key()).dump() + ": ";
    write_pretty(out, it.value(), depth + 1);
    out += i + 1 < v.size() ? ",\n" : "\n";
  }
  out += std::string(static_cast<size_t>(depth), ' ');
  out += v.is_object() ? '}' : ']';
}

ordered_json settings_json(const PlanSettings& s) {
  ordered_json j;
  j["cluster"] = ordered_json::parse(cluster_json(s.cluster));
  j["training"] = {{"precision", precision_name(s.training.precision)}, {"optimizer", optimizer_name(s.training.optimizer)}};
  j["search"] = {{"epsilon", s.epsilon}, {"mesh_axes", s.mesh_axes}, {"recompute", s.recompute}, {"recompute_all", s.recompute_all}, {"zero", s.zero},
                 {"param_persistence", s.param_persistence}};
  j["cost_source"] = s.cost_source;
  if (s.cost_terms) j["cost_terms"] = {{"measured", s.cost_terms->first}, {"modelled", s.cost_terms->second}};
  j["memory_budget_bytes"] = s.memory_budget;
  return j;
}

std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw InputError(path + ": cannot be read");
  return std::string(std::istreambuf_iterator<char>(f), {});
}

[[noreturn]] void bad(const std::string& where, const std::string& what) { throw InputError(where + ": " + what); }

const ordered_json& field(const ordered_json& j, const std::string& key, const std::string& where) {
  if (!j.is_object() || !j.contains(key)) bad(where, "missing field '" + key + "'");
  return j.at(key);
}

std::vector<int> int_list(const ordered_json& j, const std::string& where) {
  if (!j.is_array()) bad(where, "must be a list of integers");
  std::vector<int> out;
  for (const auto& x : j) {
    if (!x.is_number_integer()) bad(where, "must be a list of integers");
    out.push_back(x.get<int>());
  }
  return out;
}

PlanSettings settings_from(const ordered_json& j, const std::string& path) {
  PlanSettings s;
  const auto& model = field(j, "model", path);
  s.model_path = field(model, "path", path + ": model").get<std::string>();
  // Plan files before XXH64 record FNV-1a.
  s.model_hash_algorithm = model.contains(kModelHashAlgorithm) || !model.contains("fnv1a64") ? kModelHashAlgorithm : "fnv1a64";
  s.model_hash = field(model, s.model_hash_algorithm, path + ": model").get<std::string>();
  s.batch = field(model, "batch", path + ": model").get<int64_t>();
  // Absent in plan files written before --frozen existed.
  if (model.contains("frozen")) {
    const auto& f = model["frozen"];
    if (!f.is_array()) bad(path + ": model: frozen", "must be a list of strings");
    for (const auto& p : f) {
      if (!p.is_string()) bad(path + ": model: frozen", "must be a list of strings");
      s.frozen.push_back(p.get<std::string>());
    }
  }
  s.cluster = parse_cluster(field(j, "cluster", path).dump(), path + ": cluster");
  const auto& tr = field(j, "training", path);
  s.training.precision = parse_precision(field(tr, "precision", path + ": training").get<std::string>());
  s.training.optimizer = parse_optimizer(field(tr, "optimizer", path + ": training").get<std::string>());
  const auto& se = field(j, "search", path);
  s.epsilon = field(se, "epsilon", path + ": search").get<double>();
  s.mesh_axes = field(se, "mesh_axes", path + ": search").get<int>();
  s.recompute = field(se, "recompute", path + ": search").get<bool>();
  // Absent in plan files written before --recompute all existed.
  s.recompute_all = se.contains("recompute_all") ? field(se, "recompute_all", path + ": search").get<bool>() : false;
  s.zero = field(se, "zero", path + ": search").get<bool>();
  // Absent in plan files written before --param-persistence existed: every parameter could split.
  if (se.contains("param_persistence")) {
    const auto& pp = se["param_persistence"];
    if (!pp.is_number_integer() || pp.get<int64_t>() < 0) bad(path + ": search: param_persistence", "must be a whole number >= 0");
    s.param_persistence = pp.get<int64_t>();
  }
  s.cost_source = field(j, "cost_source", path).get<std::string>();
  if (j.contains("cost_terms")) {
    const auto& ct = j["cost_terms"];
    const std::string w = path + ": cost_terms";
    s.cost_terms = {field(ct, "measured", w).get<int>(), field(ct, "modelled", w).get<int>()};
  }
  s.memory_budget = field(j, "memory_budget_bytes", path).get<double>();
  return s;
}

// A strategy file's mesh ("mesh": [..], or "gpus": N for [N]) and optional "batch".
void read_strategy_head(const ordered_json& j, const std::string& path, StoredStrategy& s) {
  if (j.contains("mesh")) s.mesh = int_list(j.at("mesh"), path + ": mesh");
  if (j.contains("gpus")) {
    if (!j.at("gpus").is_number_integer() || j.at("gpus").get<int>() < 1) bad(path + ": gpus", "must be a whole number >= 1");
    const int gpus = j.at("gpus").get<int>();
    if (s.mesh.empty()) s.mesh = {gpus};
    int64_t product = 1;
    for (int x : s.mesh) product *= x;
    if (product != gpus) bad(path, "'gpus' " + std::to_string(gpus) + " is not the size of 'mesh' (" + std::to_string(product) + ")");
  }
  if (s.mesh.empty()) bad(path, "missing field 'mesh' (or 'gpus')");
  for (int x : s.mesh)
    if (x < 1) bad(path + ": mesh", "axis sizes must be at least 1");
  if (j.contains("batch")) {
    if (!j.at("batch").is_number_integer() || j.at("batch").get<int64_t>() < 1) bad(path + ": batch", "must be a whole number >= 1");
    s.batch = j.at("batch").get<int64_t>();
  }
}

}  // namespace

namespace {

// With `described` (--dump-space) each variable also says what it is and what each configuration
// means (planner/space_description.h); a plan file's spaces carry names and sharding data only.
ordered_json spaces_value(const std::vector<std::unique_ptr<StrategySpace>>& spaces, int gpus, bool described) {
  ordered_json j;
  j["gpus"] = gpus;
  j["spaces"] = ordered_json::array();
  for (const auto& sp : spaces) {
    ordered_json s = mesh_json(sp->mesh());
    ordered_json vars = ordered_json::array();
    for (const Variable& v : sp->variables()) {
      ordered_json names = ordered_json::array();
      for (const VarConfig& c : v.configs) names.push_back(c.name);
      ordered_json var = {{"name", v.name}, {"configs", names}};
      if (described) describe_variable(*sp, v, var);
      vars.push_back(std::move(var));
    }
    s["variables"] = vars;
    j["spaces"].push_back(s);
  }
  return j;
}

// Each member of `object` on its own line at `depth` (as write_pretty lays out an object's
// members), each followed by a comma unless it is the last and nothing follows.
void write_members(std::string& out, const ordered_json& object, int depth, bool more_follow) {
  const std::string pad(static_cast<size_t>(depth), ' ');
  size_t i = 0;
  for (auto it = object.begin(); it != object.end(); ++it, ++i) {
    out += pad + ordered_json(it.key()).dump() + ": ";
    write_pretty(out, it.value(), depth);
    out += more_follow || i + 1 < object.size() ? ",\n" : "\n";
  }
}

}  // namespace

std::string space_json(const std::vector<std::unique_ptr<StrategySpace>>& spaces, int gpus) {
  std::string out;
  write_pretty(out, spaces_value(spaces, gpus, /*described=*/true), 0);
  return out;
}

void write_plan_json(std::ostream& os, const PlanSettings& settings, const Graph& graph, const std::vector<GpuPlan>& plans) {
  ordered_json head;
  head["format"] = "tensoropt-plan";
  head["version"] = kPlanFormatVersion;
  ModelSummary ms = summarize(graph);
  head["model"] = {{"path", settings.model_path}, {settings.model_hash_algorithm, settings.model_hash}, {"batch", settings.batch},
                   {"frozen", settings.frozen}, {"trainable_parameters", ms.trainable_parameters}, {"nodes", ms.nodes}};
  const ordered_json made = settings_json(settings);
  for (auto it = made.begin(); it != made.end(); ++it) head[it.key()] = it.value();
  // Written as it is built, one point at a time, in pieces of about a MiB: a frontier can hold
  // 10^5 points, each with a configuration per variable (GPT-2 XL on 64 GPUs: 0.6 GB of JSON).
  std::string out = "{\n";
  const auto flush = [&](size_t above) {
    if (out.size() < above) return;
    os.write(out.data(), static_cast<std::streamsize>(out.size()));
    out.clear();
  };
  write_members(out, head, 1, true);
  out += " \"frontiers\": [";
  for (size_t g = 0; g < plans.size(); ++g) {
    const GpuPlan& gp = plans[g];
    const GpuFrontier& f = gp.frontier;
    ordered_json fj;
    fj["gpus"] = f.gpus;
    const double within = frontier_within(f);
    fj["within"] = within >= 0 ? ordered_json(within) : ordered_json(nullptr);
    ordered_json meshes = ordered_json::array();
    for (const MeshStats& m : f.meshes)
      meshes.push_back({{"mesh", m.mesh}, {"variables", m.variables}, {"configurations", m.configurations},
                        {"frontier_points", m.frontier_points}, {"ft_seconds", m.ft.seconds}, {"width", m.ft.width},
                        {"branches", m.ft.branches}, {"branches_left_out", m.ft.branches_left_out},
                        {"peak_bytes", m.ft.peak_bytes},
                        {"points_built", m.ft.points_built}, {"exact", m.approximation.empty()}, {"approximation", m.approximation},
                        {"within", m.within >= 0 ? ordered_json(m.within) : ordered_json(nullptr)}, {"relaxed_hubs", m.relaxed_hubs},
                        {"peak_exact", m.peak_exact}});
    fj["planner"] = {{"seconds", f.seconds}, {"peak_bytes", f.peak_bytes}, {"meshes", meshes}, {"skipped", f.skipped}};
    fj["chosen"] = gp.chosen >= 0 ? ordered_json(gp.chosen) : ordered_json(nullptr);
    fj["chosen_reason"] = gp.reason;
    out += g ? ",\n  {\n" : "\n  {\n";
    write_members(out, fj, 3, true);
    out += "   \"points\": [";
    // Points are formatted (summary, breakdown, JSON) in batches on every hardware thread, then
    // written in order.
    constexpr size_t kBatch = 256;
    std::vector<std::string> formatted(kBatch);
    for (size_t first = 0; first < f.points.size(); first += kBatch) {
      const size_t n = std::min(kBatch, f.points.size() - first);
      parallel_for(n, [&](size_t i) {
        const PlanPoint& p = f.points[first + i];
        formatted[i].clear();
        write_pretty(formatted[i], point_json(*f.spaces[static_cast<size_t>(p.mesh)], p.mesh, p.assignment, p.cost, settings.batch), 4);
      });
      for (size_t i = 0; i < n; ++i) {
        out += first + i ? ",\n    " : "\n    ";
        out += formatted[i];
        flush(size_t{1} << 20);
      }
    }
    out += f.points.empty() ? "],\n" : "\n   ],\n";
    ordered_json tail;
    tail["baselines"] = ordered_json::array();
    for (const Baseline& b : gp.baselines) {
      ordered_json bj = point_json(*b.space, -1, b.assignment, b.cost, settings.batch);
      bj.erase("strategy");
      ordered_json names = ordered_json::object();
      for (size_t i = 0; i < b.assignment.size(); ++i)
        names[b.space->variables()[i].name] = b.space->variables()[i].configs[static_cast<size_t>(b.assignment[i])].name;
      bj["strategy"] = {{"mesh", mesh_json(b.space->mesh())["shape"]}, {"configs", names}};
      int dominating = dominating_point(f, b.cost);
      bj["dominated_by_point"] = dominating >= 0 ? ordered_json(dominating) : ordered_json(nullptr);
      ordered_json entry = {{"name", b.name}};
      if (!b.caveat.empty()) entry["caveat"] = b.caveat;
      for (auto it = bj.begin(); it != bj.end(); ++it) entry[it.key()] = it.value();
      tail["baselines"].push_back(entry);
    }
    tail["spaces"] = spaces_value(f.spaces, f.gpus, /*described=*/false).at("spaces");
    for (size_t m = 0; m < f.spaces.size(); ++m) add_sharding_json(tail["spaces"][m], sharding_table(*f.spaces[m]));
    write_members(out, tail, 3, false);
    out += "  }";
  }
  out += plans.empty() ? "]\n}\n" : "\n ]\n}\n";
  flush(0);
}

void check_plan_model(const PlanSettings& settings, const std::string& model_path) {
  if (file_hash(model_path, settings.model_hash_algorithm) != settings.model_hash) {
    throw InputError(model_path + ": not the model the plan was made for (" + settings.model_path + ", " + settings.model_hash_algorithm + " " +
                     settings.model_hash + ")");
  }
}

StoredStrategy read_strategy(const std::string& path, std::optional<int> gpus, std::optional<int> point) {
  ordered_json j;
  try {
    j = ordered_json::parse(read_text(path));
  } catch (const nlohmann::json::exception& e) {
    bad(path, std::string("not valid JSON (") + e.what() + ")");
  }
  try {
    StoredStrategy s;
    std::string format = field(j, "format", path).get<std::string>();
    if (field(j, "version", path).get<int>() != kPlanFormatVersion)
      bad(path, "version " + j.at("version").dump() + " is not supported (this tensoropt reads version " + std::to_string(kPlanFormatVersion) + ")");
    if (format == "tensoropt-strategy") {
      s.where = path;
      read_strategy_head(j, path, s);
      if (j.contains("rules") || j.contains("default")) {
        if (j.contains("configs")) bad(path, "give either 'configs' (a name per variable) or 'rules', not both");
        s.rules = parse_strategy_rules(j, path);
        return s;
      }
      const auto& configs = field(j, "configs", path);
      if (!configs.is_object()) bad(path, "'configs' must map variable names to configuration names");
      for (auto it = configs.begin(); it != configs.end(); ++it) {
        if (!it.value().is_string()) bad(path, "configs['" + it.key() + "'] must be a configuration name");
        s.configs[it.key()] = it.value().get<std::string>();
      }
      return s;
    }
    if (format != "tensoropt-plan") bad(path, "'format' must be tensoropt-plan or tensoropt-strategy");
    s.settings = settings_from(j, path);
    const auto& frontiers = field(j, "frontiers", path);
    const ordered_json* f = nullptr;
    std::string counts;
    for (const auto& x : frontiers) {
      counts += (counts.empty() ? "" : ", ") + x.at("gpus").dump();
      if (!gpus || x.at("gpus").get<int>() == *gpus) {
        if (f && !gpus) bad(path, "holds frontiers for " + std::to_string(frontiers.size()) + " GPU counts; choose one with --gpus");
        f = &x;
      }
    }
    if (!f) bad(path, "has no frontier for " + (gpus ? count_of(*gpus, "GPU") : std::string("any GPU count")) + " (it has: " + counts + ")");
    const auto& points = field(*f, "points", path);
    int k = point ? *point : f->at("chosen").is_null() ? -1 : f->at("chosen").get<int>();
    if (k < 0) bad(path, "no point chosen in the plan; pick one with --point");
    if (k >= static_cast<int>(points.size()))
      bad(path, "--point " + std::to_string(k) + " is out of range (the frontier has " + std::to_string(points.size()) + " points)");
    const auto& p = points.at(static_cast<size_t>(k));
    int space_index = field(field(p, "strategy", path), "space", path).get<int>();
    std::vector<int> configs = int_list(p.at("strategy").at("configs"), path + ": strategy");
    const auto& space = f->at("spaces").at(static_cast<size_t>(space_index));
    s.mesh = int_list(space.at("shape"), path + ": spaces");
    const auto& vars = space.at("variables");
    if (vars.size() != configs.size()) bad(path, "point " + std::to_string(k) + " does not match its space");
    for (size_t i = 0; i < vars.size(); ++i) {
      const auto& names = vars[i].at("configs");
      if (configs[i] < 0 || configs[i] >= static_cast<int>(names.size())) bad(path, "point " + std::to_string(k) + ": configuration index out of range");
      s.configs[vars[i].at("name").get<std::string>()] = names[static_cast<size_t>(configs[i])].get<std::string>();
    }
    s.recorded = Cost{p.at("time_s").get<double>(), p.at("memory_bytes").get<double>()};
    s.where = path + ", " + count_of(f->at("gpus").get<int64_t>(), "GPU") + ", point " + std::to_string(k);
    s.sharding = read_sharding_json(space, s.where);
    if (s.sharding) s.indices = std::move(configs);
    return s;
  } catch (const nlohmann::json::exception& e) {
    bad(path, e.what());
  }
}

std::vector<int> resolve_strategy(const StoredStrategy& s, const StrategySpace& space) {
  if (s.rules) return resolve_rules(*s.rules, space);
  std::vector<int> a(space.variables().size(), -1);
  for (const auto& [name, config] : s.configs) {
    int v = space.find_variable(name);
    if (v < 0) bad(s.where, "variable '" + name + "' is not in the model's strategy space (see plan --dump-space)");
    int k = space.variables()[static_cast<size_t>(v)].find_config(config);
    if (k < 0) bad(s.where, "variable '" + name + "' has no configuration '" + config + "' on mesh " + space.mesh().str());
    a[static_cast<size_t>(v)] = k;
  }
  int missing = 0;
  std::string first;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] >= 0) continue;
    if (missing++ == 0) first = space.variables()[i].name;
  }
  if (missing)
    bad(s.where, std::to_string(missing) + (missing == 1 ? " variable has" : " variables have") +
                     " no configuration, the first '" + first + "'");
  return a;
}

}  // namespace tensoropt::planner
