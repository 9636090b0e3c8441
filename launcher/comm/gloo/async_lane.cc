#include "launcher/comm/gloo/async_lane.h"

#include "launcher/comm/gloo/algorithms.h"
#include "launcher/comm/gloo/gloo_communicator.h"

namespace tensoropt::comm::gloo_impl {

void finish(AsyncState& st, std::optional<std::string> error) {
  {
    std::lock_guard<std::mutex> lock(st.m);
    st.done = true;
    st.failed = error.has_value();
    st.error = error.value_or("");
  }
  st.cv.notify_all();
}

void AsyncPending::wait() {
  block();
  if (st_->failed) throw CommError("all_reduce", st_->group, st_->rank, st_->error);
}

void AsyncPending::block() {
  std::unique_lock<std::mutex> lock(st_->m);
  st_->cv.wait(lock, [&] { return st_->done; });
}

AsyncLane::~AsyncLane() {
  {
    std::lock_guard<std::mutex> lock(m_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void AsyncLane::start(std::function<void()> run, std::shared_ptr<AsyncState> st) {
  {
    std::lock_guard<std::mutex> lock(m_);
    jobs_.push_back({std::move(run), std::move(st)});
  }
  cv_.notify_all();
}

std::string AsyncLane::failed() {
  std::lock_guard<std::mutex> lock(m_);
  return failed_;
}

void AsyncLane::poison(const std::string& cause) {
  std::lock_guard<std::mutex> lock(m_);
  if (failed_.empty()) failed_ = cause;
}

bool AsyncLane::next(Job& job, std::string& earlier) {
  std::unique_lock<std::mutex> lock(m_);
  cv_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
  if (jobs_.empty()) return false;  // stopping, nothing left
  job = std::move(jobs_.front());
  jobs_.pop_front();
  if (stop_) earlier = "the communicator was destroyed";
  else if (!failed_.empty()) earlier = "the communicator failed earlier: " + failed_;
  return true;
}

void AsyncLane::loop() {
  for (;;) {
    Job job;
    std::string earlier;
    if (!next(job, earlier)) return;
    if (!earlier.empty()) {
      finish(*job.state, std::move(earlier));
      continue;
    }
    std::optional<std::string> error;
    try {
      job.run();
    } catch (const std::exception& e) {
      error = std::string(e.what()).empty() ? std::string("unknown error") : std::string(e.what());
    } catch (...) {
      error = "unknown error";
    }
    if (error) {
      std::lock_guard<std::mutex> lock(m_);
      if (failed_.empty()) failed_ = *error;
    }
    job.run = nullptr;  // drops the job's context before the waiter may go on
    finish(*job.state, error);
  }
}

std::unique_ptr<Pending> GlooCommunicator::all_reduce_async(void* buf, int64_t count, DType dtype, const Group& group) {
  const AddFn fn = sum_fn(dtype, "all_reduce");
  check_count(count, "all_reduce");
  refuse_after_failure("all_reduce", group);
  check_group(group, "all_reduce");
  auto st = std::make_shared<AsyncState>();
  st->group = group;
  st->rank = rank();
  // The lane's own context for the group: made here, on the calling thread, where every member
  // makes it at the same point of the same call sequence (the store is used by one thread only).
  GroupContext& g = context(group, "all_reduce", lane_contexts_, "a");
  if (!g.context || count == 0) {
    finish(*st, std::nullopt);
    return std::make_unique<AsyncPending>(st);
  }
  if (!lane_) lane_ = std::make_unique<AsyncLane>();
  std::shared_ptr<gloo::Context> ctx = g.context;
  const uint32_t tag = g.tag++;
  const std::chrono::milliseconds timeout = options_.timeout;
  lane_->start([ctx, tag, buf, count, dtype, fn, timeout] { gloo_all_reduce(ctx, tag, buf, count, dtype, fn, timeout); },
               st);
  return std::make_unique<AsyncPending>(st);
}

}  // namespace tensoropt::comm::gloo_impl
