#include "launcher/cluster/workload.h"

#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "graph/error.h"

namespace tensoropt::cluster {
namespace {

std::vector<std::string> fields(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream ss(line);
  std::string f;
  while (std::getline(ss, f, ',')) out.push_back(f);
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

double number(const std::string& text, const std::string& where, const char* what) {
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v) || v < 0)
    throw InputError(where + ": " + what + " '" + text + "' is not a number >= 0");
  return v;
}

}  // namespace

std::vector<WorkloadJob> read_workload(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw InputError(path + ": cannot open the workload");
  std::string line;
  if (!std::getline(f, line)) throw InputError(path + ": empty; expected the header name,time,application,num_replicas,batch_size");
  if (!line.empty() && line.back() == '\r') line.pop_back();
  if (line != "name,time,application,num_replicas,batch_size")
    throw InputError(path + " line 1: expected the header name,time,application,num_replicas,batch_size (Pollux's workload CSV), got '" + line + "'");
  std::vector<WorkloadJob> jobs;
  for (int row = 2; std::getline(f, line); ++row) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const std::string where = path + " line " + std::to_string(row);
    const std::vector<std::string> v = fields(line);
    if (v.size() != 5) throw InputError(where + ": " + std::to_string(v.size()) + " fields, expected 5 (name,time,application,num_replicas,batch_size)");
    WorkloadJob j;
    j.name = v[0];
    j.submit_s = number(v[1], where, "time");
    j.application = v[2];
    const double replicas = number(v[3], where, "num_replicas"), batch = number(v[4], where, "batch_size");
    if (replicas < 1 || replicas != std::floor(replicas)) throw InputError(where + ": num_replicas '" + v[3] + "' is not a whole number >= 1");
    if (batch < 1 || batch != std::floor(batch)) throw InputError(where + ": batch_size '" + v[4] + "' is not a whole number >= 1");
    if (j.name.empty() || j.application.empty()) throw InputError(where + ": an empty name or application");
    j.replicas = static_cast<int>(replicas);
    j.batch = static_cast<int64_t>(batch);
    j.row = row;
    jobs.push_back(std::move(j));
  }
  if (jobs.empty()) throw InputError(path + ": no jobs");
  return jobs;
}

Mapping read_mapping(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw InputError(path + ": cannot open the mapping");
  const nlohmann::json doc = nlohmann::json::parse(f, nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("applications") || !doc["applications"].is_object())
    throw InputError(path + ": not a mapping (a JSON object with \"applications\": {name: {model, batch, samples}})");
  const std::filesystem::path dir = std::filesystem::absolute(path).parent_path();
  Mapping m;
  for (const auto& [name, a] : doc["applications"].items()) {
    const std::string where = path + " application " + name;
    if (!a.is_object() || !a.contains("model") || !a["model"].is_string()) throw InputError(where + ": needs \"model\" (an ONNX file)");
    if (!a.contains("batch") || !a["batch"].is_number_integer() || a["batch"].get<int64_t>() < 1) throw InputError(where + ": needs \"batch\" (a whole number >= 1)");
    if (!a.contains("samples") || !a["samples"].is_number() || a["samples"].get<double>() <= 0) throw InputError(where + ": needs \"samples\" (a number > 0)");
    Application app;
    const std::filesystem::path model = a["model"].get<std::string>();
    app.model = (model.is_absolute() ? model : dir / model).lexically_normal().string();
    app.batch = a["batch"].get<int64_t>();
    app.samples = a["samples"].get<double>();
    app.note = a.value("note", "");
    m[name] = app;
  }
  if (m.empty()) throw InputError(path + ": no applications");
  return m;
}

void check_applications(const std::vector<WorkloadJob>& jobs, const Mapping& mapping, const std::string& workload) {
  for (const WorkloadJob& j : jobs) {
    if (mapping.count(j.application)) continue;
    std::string known;
    for (const auto& [name, a] : mapping) known.append(known.empty() ? "" : ", ").append(name);
    throw InputError(workload + " line " + std::to_string(j.row) + ": application '" + j.application + "' is not in the mapping (" + known + ")");
  }
}

}  // namespace tensoropt::cluster
