// How an elastic job's workers meet (launcher/elastic/worker.h): each generation is a group under
// its own prefix in the job's store ("JOB/g0", "JOB/g1", ...; JOB from TENSOROPT_JOB), met on a side thread so that the meeting
// overlaps training, and given up when the launcher regroups the job past it (regroup.json,
// control.h); a joining worker waits for the launcher's go-ahead (switch.json).
// Errors: CommError from a group that does not meet or is given up. Not thread-safe (a Meeting is
// one worker's).
#pragma once

#include <atomic>
#include <future>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "launcher/launch/group.h"
#include "launcher/launch/place.h"
#include "launcher/runtime/backend.h"

namespace tensoropt::elastic {

// The launcher's regroup after a lost worker (regroup.json), when it is newer than `generation`.
std::optional<nlohmann::ordered_json> regroup_after(const std::string& control, int generation);

// Waits for the launcher's go-ahead to `generation` (a joining worker: it dies with the launcher,
// which stops it when the job ends first); returns the workers of the group handing over.
int wait_for_switch(const std::string& control, int generation);

// A generation's group, met on a side thread.
class Meeting {
 public:
  // Starts meeting generation `generation` as `place` (its rank and world in it).
  void start(const WorkerPlace& place, runtime::Backend& backend, int generation);
  bool valid() const { return future_.valid(); }
  // The group; CommError when it does not meet, or when the launcher regroups past `generation`
  // meanwhile (the rendezvous is given up within 0.1 s).
  std::unique_ptr<Group> wait(const std::string& control, int generation);
  // Gives the meeting up (when one is under way) and waits for its thread.
  void give_up();

 private:
  std::shared_ptr<std::atomic<bool>> abandon_;
  std::future<std::unique_ptr<Group>> future_;
};

}  // namespace tensoropt::elastic
