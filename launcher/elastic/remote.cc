#include "launcher/elastic/remote.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <iterator>
#include <fstream>
#include <thread>

#include "launcher/elastic/control.h"

namespace tensoropt::remote {

std::string joins_dir(const std::string& control) { return control + "/elastic-joins"; }
std::string offer_path(const std::string& control, const std::string& member) { return joins_dir(control) + "/" + member + ".json"; }
std::string beat_path(const std::string& control, const std::string& member) { return joins_dir(control) + "/" + member + ".beat"; }
std::string assign_path(const std::string& control, const std::string& member) { return joins_dir(control) + "/" + member + ".assign.json"; }
std::string stop_path(const std::string& control, const std::string& member) { return joins_dir(control) + "/" + member + ".stop.json"; }
std::string exit_path(const std::string& control, const std::string& member) { return joins_dir(control) + "/" + member + ".exit.json"; }

void beat(const std::string& path) {
  static std::atomic<uint64_t> count{0};
  std::ofstream(path, std::ios::trunc) << getpid() << " " << ++count << "\n";
}

std::vector<std::string> offers(const std::string& control) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(joins_dir(control), ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() <= 5 || name.substr(name.size() - 5) != ".json") continue;
    const std::string member = name.substr(0, name.size() - 5);
    if (member.find('.') != std::string::npos) continue;  // M.assign.json, M.stop.json, M.exit.json, temporaries
    out.push_back(member);
  }
  std::sort(out.begin(), out.end());
  return out;
}

void write_assignment(const std::string& control, const std::string& member, const Assignment& a) {
  control::write_json(assign_path(control, member), {{"generation", a.generation}, {"rank", a.rank}, {"workers", a.workers}, {"restart", a.restart}});
}

std::optional<Assignment> read_assignment(const std::string& control, const std::string& member) {
  const std::optional<nlohmann::ordered_json> j = control::read_json(assign_path(control, member));
  if (!j) return std::nullopt;
  return Assignment{j->value("generation", 0), j->value("rank", 0), j->value("workers", 1), j->value("restart", false)};
}

void write_stop(const std::string& control, const std::string& member, const Stop& s) {
  control::write_json(stop_path(control, member), {{"generation", s.generation}, {"why", s.why}, {"rejoin", s.rejoin}, {"failed", s.failed}});
}

std::optional<Stop> read_stop(const std::string& control, const std::string& member) {
  const std::optional<nlohmann::ordered_json> j = control::read_json(stop_path(control, member));
  if (!j) return std::nullopt;
  return Stop{j->value("generation", -1), j->value("why", std::string()), j->value("rejoin", false), j->value("failed", false)};
}

void write_exit(const std::string& control, const std::string& member, int generation, int status) {
  control::write_json(exit_path(control, member), {{"generation", generation}, {"status", status}});
}

std::optional<int> read_exit(const std::string& control, const std::string& member, int generation) {
  const std::optional<nlohmann::ordered_json> j = control::read_json(exit_path(control, member));
  if (!j || j->value("generation", -1) != generation) return std::nullopt;
  return j->value("status", 0);
}

std::string this_host() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  std::string h = host[0] ? host : "host";
  for (char& c : h)
    if (c == '.' || c == '/') c = '_';
  return h;
}

std::string this_member() { return this_host() + "-" + std::to_string(getpid()); }

bool on_this_host(const std::string& member) {
  const size_t dash = member.rfind('-');
  return dash != std::string::npos && member.substr(0, dash) == this_host();
}

std::chrono::steady_clock::duration Pulse::silent_for() {
  const auto now = std::chrono::steady_clock::now();
  std::ifstream f(path_);
  if (f) {
    std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    if (!seen_ || text != *seen_) {
      if (seen_) changed_ = now;
      seen_ = std::move(text);
    }
  }
  return now - changed_;
}

bool beats_within(const std::string& path, std::chrono::steady_clock::duration within) {
  Pulse pulse(path);
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - start < within) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (pulse.silent_for() < std::chrono::steady_clock::now() - start) return true;  // it changed since the first look
  }
  return false;
}

}  // namespace tensoropt::remote
