// The NCCL communicator's engine: what its calls share over the NCCL table (nccl_abi.h): the
// options, the two streams (one per lane: the blocking calls', the async all-reduces'), the
// events that order them after the compute stream, the NCCL communicator of each group and lane
// (made on first use, id_exchange.h), the polling of every wait against the deadline, and the
// failure that aborts them all. nccl_communicator.cc issues the collectives through it.
//
// Owned by the communicator and shared with its Pendings (a shared_ptr), so a Pending that
// outlives its communicator still waits on live streams and events. Destruction: see
// nccl_communicator.h. Thread-safety: none (one thread issues and waits, communicator.h).
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "launcher/comm/communicator.h"
#include "launcher/comm/nccl/id_exchange.h"
#include "launcher/comm/nccl/nccl_communicator.h"

namespace tensoropt::comm::nccl_impl {

using Clock = std::chrono::steady_clock;

enum class Lane { Blocking, Async };

class Engine {
 public:
  // REQUIRES: options checked by make_nccl_communicator. Throws CommError ("init" over the
  // world) when the store cannot be opened or the streams, events or scratch cannot be made.
  Engine(const NcclOptions& options, const TensoroptNcclApi& api);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  const TensoroptNcclApi& api() const { return api_; }
  const NcclOptions& options() const { return options_; }
  int rank() const { return options_.rank; }
  Clock::time_point deadline() const { return Clock::now() + options_.timeout; }
  bool failed() const { return !failed_.empty(); }

  // A group whose collectives are local copies: one member, without nccl_for_groups_of_one.
  bool local(const Group& group) const { return group.size() == 1 && !options_.nccl_for_groups_of_one; }

  // Throws CommError when an earlier call failed (the communicator is unusable).
  void refuse_after_failure(const char* what, const Group& group) const;

  // The NCCL communicator of `group` on `lane`, made (and its members met) on first use; nullptr
  // for a group of one unless options().nccl_for_groups_of_one. Throws CommError (after failing
  // the engine) when the members do not meet or NCCL does not make it within the timeout.
  void* comm(const Group& group, Lane lane, const char* what);

  // The lane's stream, with what is queued on it from now on ordered after the work queued on the
  // compute stream so far.
  void* begin(Lane lane, const char* what, const Group& group);

  // Checks a table call's status: OK returns; FAILED fails the engine with the table's error;
  // IN_PROGRESS (a non-blocking NCCL call being issued) polls `comm`'s state until it is OK.
  void check(int status, void* comm, const char* what, const Group& group, Clock::time_point deadline);

  // Records `event` on `stream`, or fails the engine.
  void record(void* event, void* stream, const char* what, const Group& group);
  // Polls `event` (and `comm`'s asynchronous error when comm is not null) until the work before
  // it is done; fails the engine on an error or when `deadline` passes.
  void await(void* event, void* comm, const char* what, const Group& group, Clock::time_point deadline);
  // The blocking lane's: records its event on its stream and awaits it.
  void finish_blocking(void* comm, const char* what, const Group& group, Clock::time_point deadline);

  // Events for the async lane's Pendings, reused.
  void* take_event(const char* what, const Group& group);
  void give_event(void* event) { free_events_.push_back(event); }

  // A one-element float32 device buffer (the barrier's all-reduce).
  void* scratch() const { return scratch_; }

  // The table's error text on this thread.
  std::string api_error() const;

  // Aborts every NCCL communicator, makes the engine unusable and throws CommError.
  [[noreturn]] void fail(const char* what, const Group& group, const std::string& cause);

 private:
  void release() noexcept;
  void close_comms() noexcept;

  NcclOptions options_;
  const TensoroptNcclApi& api_;
  std::unique_ptr<IdExchange> exchange_;
  void* streams_[2] = {nullptr, nullptr};  // by Lane
  void* ready_ = nullptr;                  // recorded on the compute stream
  void* done_ = nullptr;                   // the blocking lane's completion
  void* scratch_ = nullptr;
  std::vector<void*> events_;       // every event made for the async lane
  std::vector<void*> free_events_;  // those not held by a Pending
  std::map<std::pair<Lane, std::vector<int>>, void*> comms_;
  std::string failed_;  // why the engine is unusable; empty while it is not
};

}  // namespace tensoropt::comm::nccl_impl
