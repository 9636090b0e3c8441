#include "launcher/elastic/meeting.h"

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "launcher/elastic/control.h"

namespace tensoropt::elastic {

std::optional<nlohmann::ordered_json> regroup_after(const std::string& control, int generation) {
  std::optional<nlohmann::ordered_json> r = control::read_json(control + "/regroup.json");
  if (r && r->value("generation", 0) > generation) return r;
  return std::nullopt;
}

int wait_for_switch(const std::string& control, int generation) {
  while (true) {
    if (std::optional<nlohmann::ordered_json> sw = control::read_json(control + "/switch.json"); sw && sw->value("generation", 0) >= generation)
      return sw->value("from", 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

void Meeting::start(const WorkerPlace& place, runtime::Backend& backend, int generation) {
  abandon_ = std::make_shared<std::atomic<bool>>(false);
  // The job's name first (TENSOROPT_JOB, set by its launcher): a store jobs share keeps them apart.
  const char* job = std::getenv("TENSOROPT_JOB");
  std::string prefix = job && *job ? std::string(job) + "/g" : std::string("g");
  prefix.append(std::to_string(generation));
  future_ = std::async(std::launch::async, [place, &backend, prefix, abandon = abandon_] {
    return std::make_unique<Group>(join_group(place, backend, prefix, abandon));
  });
}

std::unique_ptr<Group> Meeting::wait(const std::string& control, int generation) {
  while (future_.wait_for(std::chrono::milliseconds(20)) != std::future_status::ready)
    if (regroup_after(control, generation)) abandon_->store(true);
  return future_.get();
}

void Meeting::give_up() {
  if (!future_.valid()) return;
  abandon_->store(true);
  try {
    future_.get();
  } catch (...) {  // the rendezvous given up: nothing to keep
  }
}

}  // namespace tensoropt::elastic
