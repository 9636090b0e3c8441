// A worker's communicators (run's and profile's workers): Gloo for what lives on the host (figures
// gathered at the end, barriers), and, on a GPU backend, NCCL for the tensors, ordered after the
// backend's compute stream. The tensors' communicator goes through a clock (TimedCommunicator), so
// the time a step spends blocked in collectives can be reported.
// Errors: CommError from a rendezvous that does not complete; InputError for a bad rendezvous.
// Not thread-safe.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "launcher/comm/communicator.h"
#include "launcher/comm/timed_communicator.h"
#include "launcher/launch/place.h"
#include "launcher/runtime/backend.h"

namespace tensoropt {

struct Group {
  std::unique_ptr<comm::Communicator> gloo;
  std::unique_ptr<comm::Communicator> nccl;  // a cuda backend only
  std::unique_ptr<comm::TimedCommunicator> timed;
  const char* tensors_over = "Gloo";
  comm::Communicator& host() { return *gloo; }
  comm::TimedCommunicator& tensors() { return *timed; }
};

// `prefix` namespaces the group's keys in the store: an elastic job's generations ("g1", "g2", ...)
// meet in the same store, each as its own group. `abandon` (when not null) set by another thread
// ends the Gloo rendezvous early with a CommError (an elastic job regrouping without this group).
Group join_group(const WorkerPlace& place, runtime::Backend& backend, const std::string& prefix = "",
                 std::shared_ptr<const std::atomic<bool>> abandon = nullptr);

}  // namespace tensoropt
