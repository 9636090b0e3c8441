// Workers of an elastic job that its launcher did not start: `tensoropt join DIR` on another
// machine (docs/runtime.md "Workers from other machines"). The launcher and each joining machine
// talk through the job's control directory, which both see (a shared file system), in files
// written whole (control.h write_json):
//   job.json        {"job": ID, "store": SPEC, "argv": [...], "cwd": ..., "launcher": HOST-PID}:
//                   how a worker of this job is started, where the groups meet (file:DIR or
//                   redis://HOST:PORT), the key every group's prefix starts with;
//   launcher.beat   rewritten by the launcher about every 0.2 s while the job runs;
//   ended.json      the job is over: a joining machine stops waiting;
//   elastic-joins/M.json         machine M ("HOST-PID" of its join process) offers one worker;
//   elastic-joins/M.beat         rewritten by M's join process about every 0.2 s;
//   elastic-joins/M.assign.json  {"generation": G, "rank": R, "workers": N, "restart": bool}: the
//                                launcher makes M's worker rank R of generation G (a newer one
//                                after a restart);
//   elastic-joins/M.stop.json    {"generation": G, "why": ..., "rejoin": bool, "failed": bool}: the
//                                launcher stops M's worker of G (M kills it);
//   elastic-joins/M.exit.json    {"generation": G, "status": W}: how M's worker of G ended (a
//                                wait status).
// Liveness is judged by a beat file's content (a count) changing, on the watcher's own clock, so
// clocks need not agree across machines. The count is written in place and read by opening the
// file: NFS's close-to-open consistency shows each open the last close's data, where a file's
// modification time may be cached for up to a minute.
// Thread-safety: free functions and a Pulse per watcher; the files are the only shared state.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace tensoropt::remote {

// A beat file silent this long means its writer is gone.
constexpr std::chrono::seconds kSilence{10};

std::string joins_dir(const std::string& control);
std::string offer_path(const std::string& control, const std::string& member);
std::string beat_path(const std::string& control, const std::string& member);
std::string assign_path(const std::string& control, const std::string& member);
std::string stop_path(const std::string& control, const std::string& member);
std::string exit_path(const std::string& control, const std::string& member);

// Writes the next count of this process's beats into `path`, in place.
void beat(const std::string& path);

// The members that offered a worker (elastic-joins/*.json, not the assign/stop/exit files), sorted.
std::vector<std::string> offers(const std::string& control);

// The launcher's word to member M, and M's answer (the files above).
struct Assignment {
  int generation = 0, rank = 0, workers = 1;
  bool restart = false;  // from the job's checkpoint
};
struct Stop {
  int generation = 0;  // of the worker to stop
  std::string why;
  bool rejoin = false;  // M is named again (a restart from the checkpoint)
  bool failed = false;  // the job stops for a failure
};
void write_assignment(const std::string& control, const std::string& member, const Assignment& a);
std::optional<Assignment> read_assignment(const std::string& control, const std::string& member);
void write_stop(const std::string& control, const std::string& member, const Stop& s);
std::optional<Stop> read_stop(const std::string& control, const std::string& member);
void write_exit(const std::string& control, const std::string& member, int generation, int status);
// The wait status M's worker of `generation` ended with, once M wrote it.
std::optional<int> read_exit(const std::string& control, const std::string& member, int generation);

// "HOST-PID": this process as a member; this machine's host name as it appears there.
std::string this_member();
std::string this_host();
// Whether a member name ("HOST-PID") names a process of this machine.
bool on_this_host(const std::string& member);

// Watches one beat file: how long since its content last changed, on this clock
// (from the first look when it never changed; a missing file is silent).
class Pulse {
 public:
  explicit Pulse(std::string path) : path_(std::move(path)) {}
  std::chrono::steady_clock::duration silent_for();

 private:
  std::string path_;
  std::optional<std::string> seen_;
  std::chrono::steady_clock::time_point changed_ = std::chrono::steady_clock::now();
};

// Whether the beat file at `path` changes within `within` (watched from now).
bool beats_within(const std::string& path, std::chrono::steady_clock::duration within);

}  // namespace tensoropt::remote
