#include "launcher/elastic/control.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "graph/error.h"
#include "launcher/elastic/remote.h"

namespace tensoropt::control {

void write_json(const std::string& path, const nlohmann::ordered_json& doc) {
  const std::string temporary = path + ".tmp" + std::to_string(getpid());
  {
    std::ofstream f(temporary);
    f << doc.dump(1) << "\n";
    if (!f) throw InternalError("cannot write " + temporary);
  }
  std::error_code ec;
  std::filesystem::rename(temporary, path, ec);
  if (ec) throw InternalError("cannot rename " + temporary + " to " + path + ": " + ec.message());
}

std::optional<nlohmann::ordered_json> read_json(const std::string& path) {
  std::ifstream f(path);
  if (!f) return std::nullopt;
  std::stringstream ss;
  ss << f.rdbuf();
  nlohmann::ordered_json doc = nlohmann::ordered_json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return std::nullopt;
  return doc;
}

bool job_alive(const std::string& dir) {
  if (std::filesystem::exists(dir + "/ended.json")) return false;
  // A launcher on another machine (the directory is shared): alive while its beat file changes,
  // which it does about every 0.2 s.
  if (const std::optional<nlohmann::ordered_json> job = read_json(dir + "/job.json"))
    if (const std::string launcher = job->value("launcher", std::string()); !launcher.empty() && !remote::on_this_host(launcher))
      return remote::beats_within(dir + "/launcher.beat", std::chrono::milliseconds(600));
  std::ifstream f(dir + "/launcher.pid");
  long pid = 0;
  if (!(f >> pid) || pid <= 0) return false;
  return kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH;
}

void open_control(const std::string& dir, int min_gpus, int max_gpus) {
  std::error_code ec;
  std::filesystem::create_directories(dir + "/ready", ec);
  if (ec) throw InputError("--control " + dir + ": cannot make the directory (" + ec.message() + ")");
  if (job_alive(dir)) throw InputError("--control " + dir + ": another elastic job runs there");
  // A job before this one in the same directory left its files: a restart must not resume from its
  // checkpoint, nor status and resize read its state.
  // Nor a machine offer a worker to it, nor a group meet that job's keys in its file store.
  for (const char* stale : {"request.json", "switch.json", "regroup.json", "status.json", "recovery.json", "history.json", "checkpoint.onnx",
                            "checkpoint.onnx.optim", "job.json", "ended.json", "launcher.beat", "elastic-plan.json"})
    std::filesystem::remove(dir + "/" + stale, ec);
  for (const char* stale : {"/elastic-joins", "/elastic-store"}) std::filesystem::remove_all(dir + stale, ec);
  for (const auto& entry : std::filesystem::directory_iterator(dir + "/ready", ec)) std::filesystem::remove(entry.path(), ec);
  std::filesystem::create_directories(dir + "/elastic-joins", ec);
  write_json(dir + "/limits.json", {{"min_gpus", min_gpus}, {"max_gpus", max_gpus}});
  std::ofstream(dir + "/launcher.pid") << getpid() << "\n";
}

void request_resize(const std::string& dir, int gpus) {
  const std::optional<nlohmann::ordered_json> limits = read_json(dir + "/limits.json");
  if (!limits) throw InputError(dir + ": not the control directory of an elastic job (run --elastic --control DIR)");
  if (!job_alive(dir)) throw InputError(dir + ": the job is gone (its launcher no longer runs)");
  const int lo = limits->at("min_gpus").get<int>(), hi = limits->at("max_gpus").get<int>();
  if (gpus < lo || gpus > hi) {
    throw InputError("--gpus " + std::to_string(gpus) + " is outside the job's " + std::to_string(lo) + ".." + std::to_string(hi) +
                     " (its --min-gpus and --max-gpus)");
  }
  const std::optional<nlohmann::ordered_json> last = read_json(dir + "/request.json");
  const int64_t id = last ? last->value("id", int64_t{0}) + 1 : 1;
  write_json(dir + "/request.json", {{"gpus", gpus}, {"id", id}});
}

nlohmann::ordered_json read_status(const std::string& dir) {
  if (!read_json(dir + "/limits.json")) throw InputError(dir + ": not the control directory of an elastic job (run --elastic --control DIR)");
  std::optional<nlohmann::ordered_json> status = read_json(dir + "/status.json");
  if (!status) throw InputError(dir + ": the job has not finished a step yet (no status.json)");
  status->emplace("running", job_alive(dir));
  return *status;
}

std::string ready_path(const std::string& dir, int generation, int rank) {
  return dir + "/ready/" + std::to_string(generation) + "." + std::to_string(rank);
}

}  // namespace tensoropt::control
