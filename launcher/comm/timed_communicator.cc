#include "launcher/comm/timed_communicator.h"

namespace tensoropt::comm {
namespace {

using Clock = std::chrono::steady_clock;

// Adds its wait's duration to the communicator's count (which outlives it: see the header).
class TimedPending final : public Pending {
 public:
  TimedPending(std::unique_ptr<Pending> inner, double& blocked) : inner_(std::move(inner)), blocked_(blocked) {}
  void wait() override {
    const auto t0 = Clock::now();
    try {
      inner_->wait();
    } catch (...) {
      blocked_ += std::chrono::duration<double>(Clock::now() - t0).count();
      throw;
    }
    blocked_ += std::chrono::duration<double>(Clock::now() - t0).count();
  }

 private:
  std::unique_ptr<Pending> inner_;
  double& blocked_;
};

}  // namespace

template <typename Fn>
void TimedCommunicator::timed(Fn&& fn) {
  const auto t0 = Clock::now();
  try {
    fn();
  } catch (...) {
    blocked_ += std::chrono::duration<double>(Clock::now() - t0).count();
    throw;
  }
  blocked_ += std::chrono::duration<double>(Clock::now() - t0).count();
}

void TimedCommunicator::all_reduce(void* buf, int64_t count, DType dtype, const Group& group) {
  timed([&] { inner_.all_reduce(buf, count, dtype, group); });
}

std::unique_ptr<Pending> TimedCommunicator::all_reduce_async(void* buf, int64_t count, DType dtype, const Group& group) {
  std::unique_ptr<Pending> p;
  timed([&] { p = inner_.all_reduce_async(buf, count, dtype, group); });  // a base class's runs at once
  return std::make_unique<TimedPending>(std::move(p), blocked_);
}

void TimedCommunicator::all_gather_v(const void* in, void* out, const std::vector<int64_t>& counts, DType dtype,
                                     const Group& group) {
  timed([&] { inner_.all_gather_v(in, out, counts, dtype, group); });
}

void TimedCommunicator::reduce_scatter_v(const void* in, void* out, const std::vector<int64_t>& counts, DType dtype,
                                         const Group& group) {
  timed([&] { inner_.reduce_scatter_v(in, out, counts, dtype, group); });
}

void TimedCommunicator::all_to_all_v(const void* in, const std::vector<int64_t>& send_counts, void* out,
                                     const std::vector<int64_t>& recv_counts, DType dtype, const Group& group) {
  timed([&] { inner_.all_to_all_v(in, send_counts, out, recv_counts, dtype, group); });
}

void TimedCommunicator::broadcast(void* buf, int64_t count, DType dtype, int root, const Group& group) {
  timed([&] { inner_.broadcast(buf, count, dtype, root, group); });
}

void TimedCommunicator::barrier(const Group& group) {
  timed([&] { inner_.barrier(group); });
}

}  // namespace tensoropt::comm
