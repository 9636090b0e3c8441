// The Gloo communicator's asynchronous lane (all_reduce_async): one thread of the communicator's
// own, started by the first such call, runs the async collectives in call order, each on a second
// context of its group (members meet under "a" + the group's key, made on the calling thread when
// the group is first used asynchronously), so the lane never shares tags or connections with the
// blocking calls that go on beside it.
//
// A job that fails makes every later one fail at once (the lane's connections may be broken
// mid-message), and leaves `failed()` set for the communicator to refuse its blocking calls too;
// after the communicator failed elsewhere, `poison` does the same to what is queued. Destroying
// the lane waits for its running job (bounded by the communicator's timeout) and fails the rest.
//
// Thread-safety: start, failed and poison may be called from one thread beside the lane's own;
// an AsyncState is shared by the lane (which finishes it) and its AsyncPending (which waits on it),
// so neither outlives what it needs.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "launcher/comm/communicator.h"

namespace tensoropt::comm::gloo_impl {

// The async lane's view of one all_reduce_async: done and its error, shared by the lane (which
// sets them) and the Pending (which waits on them), so neither outlives what it needs.
struct AsyncState {
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  bool failed = false;
  std::string error;  // why, when failed
  Group group;
  int rank = 0;
};

// Marks `st` done, failed with `error` when it has one, and wakes its waiter.
void finish(AsyncState& st, std::optional<std::string> error);

// Waits on an AsyncState; wait throws CommError ("all_reduce" over its group) when it failed.
class AsyncPending final : public Pending {
 public:
  explicit AsyncPending(std::shared_ptr<AsyncState> st) : st_(std::move(st)) {}
  ~AsyncPending() override { block(); }
  void wait() override;

 private:
  void block();
  std::shared_ptr<AsyncState> st_;
};

// One thread that runs the async collectives in the order they were started. A job that fails
// makes every later one fail at once (the lane's connections may be broken mid-message), and
// leaves `failed()` set for the communicator to refuse its blocking calls too.
class AsyncLane {
 public:
  AsyncLane() : thread_([this] { loop(); }) {}
  ~AsyncLane();
  // Queues `run`, whose end (or exception) finishes `st`.
  void start(std::function<void()> run, std::shared_ptr<AsyncState> st);
  // Empty when no collective of the lane failed.
  std::string failed();
  // After the communicator failed elsewhere: every collective not yet started fails at once.
  void poison(const std::string& cause);

 private:
  struct Job {
    std::function<void()> run;
    std::shared_ptr<AsyncState> state;
  };
  void loop();
  // The next job, or false when stopping with nothing left; `earlier` says why it must fail
  // without running ("" when it may run).
  bool next(Job& job, std::string& earlier);

  std::mutex m_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  bool stop_ = false;
  std::string failed_;
  std::thread thread_;  // last: starts after the members it reads are made
};

}  // namespace tensoropt::comm::gloo_impl
