#include "launcher/comm/nccl/engine.h"

#include <thread>

namespace tensoropt::comm::nccl_impl {
namespace {

// Between polls: yield for the first ~thousand (a small collective is done in microseconds), then
// sleep 100 us (a long one need not burn a core).
void pause(int& polls) {
  if (++polls < 1000) std::this_thread::yield();
  else std::this_thread::sleep_for(std::chrono::microseconds(100));
}

const char* lane_key(Lane lane) { return lane == Lane::Blocking ? "" : "a"; }

std::string ms(std::chrono::milliseconds t) { return std::to_string(t.count()) + " ms"; }

}  // namespace

Engine::Engine(const NcclOptions& o, const TensoroptNcclApi& api) : options_(o), api_(api) {
  const Group world = world_group(o.size);
  auto made = [&](int status, const char* what) {
    if (status == TO_NCCL_OK) return;
    const std::string why = std::string(what) + " on device " + std::to_string(o.device) + ": " + api_error();
    release();
    throw CommError("init", world, o.rank, why);
  };
  try {
    exchange_ = std::make_unique<IdExchange>(o.rendezvous, o.prefix, o.timeout);
  } catch (const std::exception& e) {
    throw CommError("init", world, o.rank, std::string("the rendezvous store: ") + e.what());
  }
  made(api_.stream_create(o.device, &streams_[0]), "the communication stream");
  made(api_.stream_create(o.device, &streams_[1]), "the async all-reduce stream");
  made(api_.event_create(o.device, &ready_), "an event");
  made(api_.event_create(o.device, &done_), "an event");
  made(api_.malloc(o.device, sizeof(float), &scratch_), "the barrier's scratch");
  const float zero = 0;
  made(api_.memcpy(scratch_, &zero, sizeof zero), "the barrier's scratch");
}

Engine::~Engine() {
  if (!failed()) {
    // What is in flight finishes first (each lane's stream), bounded by the timeout.
    try {
      const Group world = world_group(options_.size);
      for (void* stream : streams_) {
        record(done_, stream, "shutdown", world);
        await(done_, nullptr, "shutdown", world, deadline());
      }
    } catch (const std::exception&) {  // failed: the communicators are aborted
    }
  }
  close_comms();
  release();
}

void Engine::close_comms() noexcept {
  for (auto& [key, c] : comms_) {
    if (!c) continue;
    bool closed = false;
    if (!failed() && api_.comm_finalize(c) != TO_NCCL_FAILED) {
      const Clock::time_point until = deadline();
      for (int polls = 0; Clock::now() < until; pause(polls)) {
        const int s = api_.comm_status(c);
        if (s == TO_NCCL_OK) {
          (void)api_.comm_destroy(c);  // frees it whatever it returns: never aborted after
          closed = true;
        }
        if (s != TO_NCCL_IN_PROGRESS) break;
      }
    }
    if (!closed) (void)api_.comm_abort(c);
  }
  comms_.clear();
}

void Engine::release() noexcept {
  for (void* e : events_) (void)api_.event_destroy(e);
  events_.clear();
  free_events_.clear();
  if (ready_) (void)api_.event_destroy(ready_);
  if (done_) (void)api_.event_destroy(done_);
  for (void*& s : streams_) {
    if (s) (void)api_.stream_destroy(s);
    s = nullptr;
  }
  if (scratch_) (void)api_.free(scratch_);
  ready_ = done_ = scratch_ = nullptr;
}

std::string Engine::api_error() const {
  std::string text(512, '\0');
  const size_t n = api_.error(text.data(), text.size());
  if (n >= text.size()) {
    text.assign(n + 1, '\0');
    api_.error(text.data(), text.size());
  }
  text.resize(n);
  return text;
}

void Engine::refuse_after_failure(const char* what, const Group& group) const {
  if (failed()) throw CommError(what, group, rank(), "the communicator is unusable after an earlier error: " + failed_);
}

void Engine::fail(const char* what, const Group& group, const std::string& cause) {
  failed_ = std::string(what) + " over group " + group.str() + ": " + cause;
  for (auto& [key, c] : comms_)
    if (c) (void)api_.comm_abort(c);
  comms_.clear();
  throw CommError(what, group, rank(), cause);
}

void* Engine::comm(const Group& group, Lane lane, const char* what) {
  const auto key = std::make_pair(lane, group.ranks);
  if (auto it = comms_.find(key); it != comms_.end()) return it->second;
  if (local(group)) return nullptr;
  const int index = group.index_of(rank());
  auto make_id = [&] {
    NcclId id;
    if (api_.get_unique_id(id.data()) != TO_NCCL_OK) throw std::runtime_error(api_error());
    return id;
  };
  NcclId id{};
  try {
    id = group.size() == 1 ? make_id() : exchange_->exchange(nccl_id_key(group, lane_key(lane)), index, make_id);
  } catch (const std::exception& e) {
    fail(what, group, std::string("the NCCL id's rendezvous: ") + e.what());
  }
  void* c = nullptr;
  const int status = api_.comm_init(&c, group.size(), id.data(), index, options_.device);
  if (c) comms_.emplace(key, c);  // before waiting, so a failure aborts it too
  if (status == TO_NCCL_FAILED || !c) fail(what, group, "making its NCCL communicator: " + api_error());
  const Clock::time_point until = deadline();
  for (int polls = 0;; pause(polls)) {
    const int s = api_.comm_status(c);
    if (s == TO_NCCL_OK) return c;
    if (s == TO_NCCL_FAILED) fail(what, group, "making its NCCL communicator: " + api_error());
    if (Clock::now() >= until)
      fail(what, group, "its NCCL communicator was not made within " + ms(options_.timeout) +
                            " (a member that never came, or died, on key " + nccl_id_key(group, lane_key(lane)) + ")");
  }
}

void* Engine::begin(Lane lane, const char* what, const Group& group) {
  void* stream = streams_[lane == Lane::Blocking ? 0 : 1];
  record(ready_, options_.compute_stream, what, group);
  if (api_.stream_wait_event(stream, ready_) != TO_NCCL_OK) fail(what, group, api_error());
  return stream;
}

void Engine::check(int status, void* comm, const char* what, const Group& group, Clock::time_point until) {
  if (status == TO_NCCL_OK) return;
  if (status == TO_NCCL_FAILED) fail(what, group, api_error());
  for (int polls = 0;; pause(polls)) {
    const int s = api_.comm_status(comm);
    if (s == TO_NCCL_OK) return;
    if (s == TO_NCCL_FAILED) fail(what, group, api_error());
    if (Clock::now() >= until) fail(what, group, "NCCL did not take the call within " + ms(options_.timeout));
  }
}

void Engine::record(void* event, void* stream, const char* what, const Group& group) {
  if (api_.event_record(event, stream) != TO_NCCL_OK) fail(what, group, api_error());
}

void Engine::await(void* event, void* comm, const char* what, const Group& group, Clock::time_point until) {
  for (int polls = 0;; pause(polls)) {
    const int s = api_.event_query(event);
    if (s == TO_NCCL_OK) return;
    if (s == TO_NCCL_FAILED) fail(what, group, api_error());
    if (comm && api_.comm_status(comm) == TO_NCCL_FAILED) fail(what, group, api_error());
    if (Clock::now() >= until)
      fail(what, group, "not done within " + ms(options_.timeout) + " (a member that died, or never called it)");
  }
}

void Engine::finish_blocking(void* comm, const char* what, const Group& group, Clock::time_point until) {
  record(done_, streams_[0], what, group);
  await(done_, comm, what, group, until);
}

void* Engine::take_event(const char* what, const Group& group) {
  if (!free_events_.empty()) {
    void* e = free_events_.back();
    free_events_.pop_back();
    return e;
  }
  void* e = nullptr;
  if (api_.event_create(options_.device, &e) != TO_NCCL_OK) fail(what, group, api_error());
  events_.push_back(e);
  return e;
}

}  // namespace tensoropt::comm::nccl_impl
