#include "profiler/database.h"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>

#include "graph/error.h"

namespace tensoropt::profiler {

namespace {

using nlohmann::ordered_json;

[[noreturn]] void bad(const std::string& where, const std::string& what) { throw InputError(where + ": " + what); }

const ordered_json& field(const ordered_json& j, const char* key, const std::string& where) {
  if (!j.is_object()) bad(where, "must be an object");
  auto it = j.find(key);
  if (it == j.end()) bad(where, std::string("missing field '") + key + "'");
  return *it;
}

std::string text(const ordered_json& j, const char* key, const std::string& where) {
  const auto& v = field(j, key, where);
  if (!v.is_string()) bad(where + ": " + key, "must be a string");
  return v.get<std::string>();
}

double seconds(const ordered_json& j, const char* key, const std::string& where) {
  const auto& v = field(j, key, where);
  if (!v.is_number() || v.get<double>() < 0) bad(where + ": " + key, "must be a number >= 0");
  return v.get<double>();
}

int count(const ordered_json& j, const char* key, const std::string& where, int least) {
  const auto& v = field(j, key, where);
  if (!v.is_number_integer() || v.get<int64_t>() < least || v.get<int64_t>() > (1 << 30))
    bad(where + ": " + key, "must be a whole number >= " + std::to_string(least));
  return v.get<int>();
}

Points points(const ordered_json& j, const std::string& where) {
  const auto& v = field(j, "points", where);
  if (!v.is_array() || v.empty()) bad(where + ": points", "must be a non-empty list of [bytes, seconds]");
  Points p;
  for (const auto& e : v) {
    if (!e.is_array() || e.size() != 2 || !e[0].is_number() || !e[1].is_number() || e[0].get<double>() < 0 || e[1].get<double>() < 0)
      bad(where + ": points", "each must be [bytes, seconds], both numbers >= 0");
    p.emplace_back(e[0].get<double>(), e[1].get<double>());
  }
  std::sort(p.begin(), p.end());
  for (size_t i = 1; i < p.size(); ++i)
    if (p[i].first == p[i - 1].first) bad(where + ": points", "two points of the same size");
  return p;
}

ordered_json points_json(const Points& p) {
  ordered_json a = ordered_json::array();
  for (const auto& [b, t] : p) a.push_back({b, t});
  return a;
}

auto op_key(const OpEntry& e) { return std::tie(e.signature, e.workers, e.threads); }
auto collective_key(const CollectiveEntry& e) { return std::tie(e.kind, e.level, e.group, e.workers); }
auto optimizer_key(const OptimizerEntry& e) { return std::tie(e.kind, e.dtype, e.workers, e.threads); }
auto executor_key(const ExecutorEntry& e) { return std::tie(e.dtype, e.workers, e.threads); }
auto overlap_key(const OverlapEntry& e) { return std::tie(e.group, e.workers); }

template <typename T, typename K>
void sort_by(std::vector<T>& v, K key) {
  std::sort(v.begin(), v.end(), [&](const T& a, const T& b) { return key(a) < key(b); });
}

template <typename T, typename K>
void merge_into(std::vector<T>& into, const std::vector<T>& add, K key) {
  for (const T& e : add) {
    auto it = std::find_if(into.begin(), into.end(), [&](const T& x) { return key(x) == key(e); });
    if (it != into.end()) *it = e;
    else into.push_back(e);
  }
}

}  // namespace

std::string DeviceId::line() const {
  std::string s = backend + " " + name + " (" + std::to_string(units) + (backend == "cpu" ? " cores" : " SMs");
  std::string f;
  for (const auto& [k, v] : facts) f += (f.empty() ? "" : ", ") + k + " " + v;
  if (!f.empty()) s += "; " + f;
  return s + "; tensoropt " + tensoropt + ")";
}

ProfileDb read_profile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path + ": cannot be read");
  std::stringstream ss;
  ss << in.rdbuf();
  ordered_json j;
  try {
    j = ordered_json::parse(ss.str());
  } catch (const std::exception&) {
    bad(path, "not a JSON file (a profile is written by `tensoropt profile`)");
  }
  if (!j.is_object() || !j.contains("format") || j["format"] != "tensoropt-profile")
    bad(path, "not a tensoropt profile (\"format\": \"tensoropt-profile\" is missing)");
  const int version = count(j, "version", path, 1);
  if (version != kProfileVersion)
    bad(path, "profile version " + std::to_string(version) + "; this tensoropt reads version " + std::to_string(kProfileVersion));
  ProfileDb db;
  const std::string dw = path + ": device";
  const auto& d = field(j, "device", path);
  db.device.backend = text(d, "backend", dw);
  db.device.name = text(d, "name", dw);
  db.device.units = count(d, "units", dw, 1);
  db.device.tensoropt = text(d, "tensoropt", dw);
  const auto& facts = field(d, "facts", dw);
  if (!facts.is_object()) bad(dw + ": facts", "must be an object of strings");
  for (auto it = facts.begin(); it != facts.end(); ++it) {
    if (!it.value().is_string()) bad(dw + ": facts: " + it.key(), "must be a string");
    db.device.facts[it.key()] = it.value().get<std::string>();
  }
  // Each list's entries, read by `read` with the entry and where it is ("FILE: ops[3]").
  auto entries = [&](const char* key, const auto& read) {
    const auto& v = field(j, key, path);
    if (!v.is_array()) bad(path + ": " + key, "must be a list");
    for (size_t i = 0; i < v.size(); ++i) read(v[i], path + ": " + key + "[" + std::to_string(i) + "]");
  };
  entries("ops", [&](const ordered_json& x, const std::string& w) {
    OpEntry e;
    e.op = text(x, "op", w);
    e.signature = text(x, "signature", w);
    if (e.signature.rfind(e.op + "|", 0) != 0) bad(w + ": signature", "does not begin with its op '" + e.op + "|'");
    e.workers = count(x, "workers", w, 1);
    e.threads = count(x, "threads", w, 0);
    e.forward_s = seconds(x, "forward_s", w);
    e.backward_s = seconds(x, "backward_s", w);
    e.repeats = count(x, "repeats", w, 1);
    db.ops.push_back(std::move(e));
  });
  entries("collectives", [&](const ordered_json& x, const std::string& w) {
    CollectiveEntry e;
    e.kind = text(x, "kind", w);
    if (e.kind != "all_reduce" && e.kind != "all_gather" && e.kind != "reduce_scatter" && e.kind != "all_to_all")
      bad(w + ": kind", "'" + e.kind + "' is not all_reduce, all_gather, reduce_scatter or all_to_all");
    e.level = text(x, "level", w);
    if (e.level != "intra" && e.level != "inter") bad(w + ": level", "must be \"intra\" or \"inter\"");
    e.group = count(x, "group", w, 2);
    e.workers = count(x, "workers", w, e.group);
    e.points = points(x, w);
    e.latency_s = seconds(x, "latency_s", w);
    e.bandwidth_Bps = seconds(x, "bandwidth_Bps", w);
    db.collectives.push_back(std::move(e));
  });
  entries("optimizer", [&](const ordered_json& x, const std::string& w) {
    OptimizerEntry e;
    e.kind = text(x, "kind", w);
    e.dtype = text(x, "dtype", w);
    e.workers = count(x, "workers", w, 1);
    e.threads = count(x, "threads", w, 0);
    e.points = points(x, w);
    e.fixed_s = seconds(x, "fixed_s", w);
    e.per_byte_s = seconds(x, "per_byte_s", w);
    db.optimizer.push_back(std::move(e));
  });
  entries("executor", [&](const ordered_json& x, const std::string& w) {
    ExecutorEntry e;
    e.dtype = text(x, "dtype", w);
    e.workers = count(x, "workers", w, 1);
    e.threads = count(x, "threads", w, 0);
    e.per_call_s = seconds(x, "per_call_s", w);
    e.steps = count(x, "steps", w, 1);
    db.executor.push_back(std::move(e));
  });
  entries("overlap", [&](const ordered_json& x, const std::string& w) {
    OverlapEntry e;
    e.group = count(x, "group", w, 2);
    e.workers = count(x, "workers", w, e.group);
    e.bytes = seconds(x, "bytes", w);
    e.exposed = seconds(x, "exposed", w);
    db.overlap.push_back(e);
  });
  return db;
}

void write_profile(ProfileDb db, const std::string& path) {
  sort_by(db.ops, op_key);
  sort_by(db.collectives, collective_key);
  sort_by(db.optimizer, optimizer_key);
  sort_by(db.executor, executor_key);
  sort_by(db.overlap, overlap_key);
  ordered_json j;
  j["format"] = "tensoropt-profile";
  j["version"] = kProfileVersion;
  ordered_json d;
  d["backend"] = db.device.backend;
  d["name"] = db.device.name;
  d["units"] = db.device.units;
  d["facts"] = ordered_json::object();
  for (const auto& [k, v] : db.device.facts) d["facts"][k] = v;
  d["tensoropt"] = db.device.tensoropt;
  j["device"] = d;
  j["ops"] = ordered_json::array();
  for (const OpEntry& e : db.ops)
    j["ops"].push_back({{"op", e.op}, {"signature", e.signature}, {"workers", e.workers}, {"threads", e.threads},
                        {"forward_s", e.forward_s}, {"backward_s", e.backward_s}, {"repeats", e.repeats}});
  j["collectives"] = ordered_json::array();
  for (const CollectiveEntry& e : db.collectives)
    j["collectives"].push_back({{"kind", e.kind}, {"level", e.level}, {"group", e.group}, {"workers", e.workers},
                                {"points", points_json(e.points)}, {"latency_s", e.latency_s}, {"bandwidth_Bps", e.bandwidth_Bps}});
  j["optimizer"] = ordered_json::array();
  for (const OptimizerEntry& e : db.optimizer)
    j["optimizer"].push_back({{"kind", e.kind}, {"dtype", e.dtype}, {"workers", e.workers}, {"threads", e.threads},
                              {"points", points_json(e.points)}, {"fixed_s", e.fixed_s}, {"per_byte_s", e.per_byte_s}});
  j["executor"] = ordered_json::array();
  for (const ExecutorEntry& e : db.executor)
    j["executor"].push_back({{"dtype", e.dtype}, {"workers", e.workers}, {"threads", e.threads}, {"per_call_s", e.per_call_s}, {"steps", e.steps}});
  j["overlap"] = ordered_json::array();
  for (const OverlapEntry& e : db.overlap)
    j["overlap"].push_back({{"group", e.group}, {"workers", e.workers}, {"bytes", e.bytes}, {"exposed", e.exposed}});
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    if (!out) throw InputError(path + ": cannot be written");
    out << j.dump(1) << "\n";
    if (!out) throw InputError(path + ": cannot be written");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) throw InputError(path + ": cannot be written");
}

void merge_profile(ProfileDb& into, const ProfileDb& add) {
  merge_into(into.ops, add.ops, op_key);
  merge_into(into.collectives, add.collectives, collective_key);
  merge_into(into.optimizer, add.optimizer, optimizer_key);
  merge_into(into.executor, add.executor, executor_key);
  merge_into(into.overlap, add.overlap, overlap_key);
}

std::pair<double, double> fit_line(const Points& p) {
  if (p.empty()) return {0, 0};
  if (p.size() == 1) return {p[0].second, 0};
  double n = static_cast<double>(p.size()), sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const auto& [x, y] : p) {
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
  }
  const double den = n * sxx - sx * sx;
  double b = den > 0 ? (n * sxy - sx * sy) / den : 0;
  b = std::max(b, 0.0);
  const double a = std::max((sy - b * sx) / n, 0.0);
  return {a, b};
}

}  // namespace tensoropt::profiler
