// The control directory of an elastic job (`run --elastic --control DIR`): how the launcher, its
// workers and the `status` and `resize` commands talk (docs/runtime.md "Elastic jobs").
//
// Every file is written whole under a temporary name and renamed, so a reader never sees half of
// one. What DIR holds:
//   launcher.pid   the launcher's process id: the job is gone when no such process lives;
//   limits.json    {"min_gpus": A, "max_gpus": B}, written before any worker starts;
//   request.json   {"gpus": N, "id": K}: `tensoropt resize` asks for N workers (K counts requests);
//   switch.json    {"generation": G, "workers": N, "requested_at": T}: the launcher's go-ahead, once
//                  every joining worker is loaded (at once to shrink); the running group's rank 0
//                  reads it after each step, and the group moves to generation G at that step's end;
//   ready/G.R      worker R of generation G is loaded and waits for the old group to hand over;
//   regroup.json   {"generation": G, "workers": N, "ranks": {"PID": R, ...}, "lost_ranks": [...],
//                  "how": "...", "from": M}: a worker was lost; the workers left (by process id)
//                  meet as generation G with these ranks and go on from the state they hold
//                  (launcher/elastic/worker.h), or exit kExitNoReplica when none holds it whole;
//   status.json    the running job as rank 0 last saw it (read_status's fields), after each step
//                  at most every 0.2 s and at every resize and at the end;
//   elastic-plan.json  the plan the launcher made for the job (when --plan was not given);
//   elastic-store/     the file store the job's groups meet in (unless --rendezvous names another);
//   job.json, launcher.beat, ended.json, elastic-joins/: how workers from other machines join
//                  (remote.h). Only these names are removed when a job starts in DIR.
//
// Thread-safety: free functions; the files are the only shared state. Errors: InputError naming
// DIR for a directory that is not an elastic job's, a job that is gone or an N outside its limits.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace tensoropt::control {

// A worker's exit code when, after a lost worker, no member of its new group holds the whole
// state: the launcher then restarts the group from the checkpoint.
constexpr int kExitNoReplica = 75;

// `doc` written to `path` whole (a temporary file renamed over it).
void write_json(const std::string& path, const nlohmann::ordered_json& doc);
// The JSON document at `path`; nullopt when there is none (or it cannot be parsed: being replaced).
std::optional<nlohmann::ordered_json> read_json(const std::string& path);

// Whether the job's launcher still runs: the process DIR/launcher.pid names, on this machine; a
// launcher on another machine (job.json names it) by its beat file changing within 0.6 s. A job
// that wrote ended.json is gone.
bool job_alive(const std::string& dir);

// Makes DIR (and its parents) a control directory for this process's job with those limits, the
// files of a job that ran there before removed (its checkpoint too): InputError when it belongs to
// a job that still runs.
void open_control(const std::string& dir, int min_gpus, int max_gpus);

// `tensoropt resize DIR --gpus N`: writes the request and returns at once. InputError when DIR is
// not an elastic job's, the job is gone, or N is outside its limits.
void request_resize(const std::string& dir, int gpus);

// `tensoropt status DIR`: the last status.json of a job (a finished job's too); InputError when DIR
// has none.
nlohmann::ordered_json read_status(const std::string& dir);

// Where worker `rank` of generation `generation` says it is ready.
std::string ready_path(const std::string& dir, int generation, int rank);

}  // namespace tensoropt::control
