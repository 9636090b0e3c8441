#include "launcher/cluster/workload.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
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

double whole(const std::string& text, const std::string& where, const char* what) {
  const double v = number(text, where, what);
  if (v < 1 || v != std::floor(v)) throw InputError(where + ": " + what + " '" + text + "' is not a whole number >= 1");
  return v;
}

// "2017-10-09 07:01:55": seconds since 1970-01-01 00:00:00 (the trace's clock; no time zone).
double timestamp(const std::string& text, const std::string& where) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
  char tail = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2d %2d:%2d:%2d%c", &y, &mo, &d, &h, &mi, &s, &tail) != 6 || mo < 1 || mo > 12 || d < 1 || d > 31 ||
      h > 23 || mi > 59 || s > 60)
    throw InputError(where + ": timestamp '" + text + "' is not YYYY-MM-DD hh:mm:ss");
  // Days from the civil date (Howard Hinnant's algorithm).
  const int yy = y - (mo <= 2);
  const int era = (yy >= 0 ? yy : yy - 399) / 400;
  const int yoe = yy - era * 400;
  const int doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  const double days = era * 146097.0 + doe - 719468.0;
  return days * 86400 + h * 3600 + mi * 60 + s;
}

constexpr const char* kPolluxHeader = "name,time,application,num_replicas,batch_size";
constexpr const char* kPhillyHeader = "timestamp,duration,num_gpus,gpu_time,cluster";

// A Philly trace row as Pollux's workload generator derives a job from it (adaptdl
// simulator/workload.py): the application by the job's GPU time, the GPUs it asked for.
void philly_job(const std::vector<std::string>& v, const std::string& where, int row, std::vector<WorkloadJob>& jobs) {
  if (v.size() != 5) throw InputError(where + ": " + std::to_string(v.size()) + " fields, expected 5 (" + kPhillyHeader + ")");
  const double submit = timestamp(v[0], where), duration = number(v[1], where, "duration"), gpus = whole(v[2], where, "num_gpus");
  const double gpu_s = number(v[3], where, "gpu_time");
  if (duration < 60 || gpu_s >= 1000 * 3600.0) return;  // as Pollux's generator: under a minute, or 1,000 GPU-hours and more
  WorkloadJob j;
  const bool odd = row % 2 != 0;  // Pollux draws between the two at random; we alternate by row
  if (gpu_s < 3600) j.application = odd ? "ncf" : "cifar10";
  else if (gpu_s < 10 * 3600) j.application = odd ? "bert" : "deepspeech2";
  else if (gpu_s < 100 * 3600) j.application = "yolov3";
  else j.application = "imagenet";
  j.name = j.application + "-" + std::to_string(row);
  j.submit_s = submit;
  j.replicas = static_cast<int>(gpus);
  j.row = row;
  jobs.push_back(std::move(j));
}

}  // namespace

std::vector<WorkloadJob> read_workload(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw InputError(path + ": cannot open the workload");
  std::string line;
  if (!std::getline(f, line)) throw InputError(path + ": empty; expected the header " + kPolluxHeader + " or " + kPhillyHeader);
  if (!line.empty() && line.back() == '\r') line.pop_back();
  const bool philly = line == kPhillyHeader;
  if (!philly && line != kPolluxHeader)
    throw InputError(path + " line 1: expected the header " + kPolluxHeader + " (Pollux's workload CSV) or " + kPhillyHeader +
                     " (the Philly trace), got '" + line + "'");
  std::vector<WorkloadJob> jobs;
  for (int row = 2; std::getline(f, line); ++row) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const std::string where = path + " line " + std::to_string(row);
    const std::vector<std::string> v = fields(line);
    if (philly) {
      philly_job(v, where, row, jobs);
      continue;
    }
    if (v.size() != 5) throw InputError(where + ": " + std::to_string(v.size()) + " fields, expected 5 (name,time,application,num_replicas,batch_size)");
    WorkloadJob j;
    j.name = v[0];
    j.submit_s = number(v[1], where, "time");
    j.application = v[2];
    const double replicas = whole(v[3], where, "num_replicas"), batch = whole(v[4], where, "batch_size");
    if (j.name.empty() || j.application.empty()) throw InputError(where + ": an empty name or application");
    j.replicas = static_cast<int>(replicas);
    j.batch = static_cast<int64_t>(batch);
    j.row = row;
    jobs.push_back(std::move(j));
  }
  if (jobs.empty()) throw InputError(path + ": no jobs" + (philly ? " (none of a minute or more and under 1,000 GPU-hours)" : ""));
  if (philly) {  // submit times from the first job's
    double first = jobs.front().submit_s;
    for (const WorkloadJob& j : jobs) first = std::min(first, j.submit_s);
    for (WorkloadJob& j : jobs) j.submit_s -= first;
  }
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
