// TimedCommunicator: a Communicator that forwards every call to another and counts the seconds its
// caller spent blocked in collectives: each blocking call end to end, and each Pending::wait of an
// async all-reduce (starting one costs nothing; what overlaps the caller's work is not counted).
// That is the communication a step exposes, the figure `run` sets against the plan's collectives.
//
// The wrapped communicator must outlive this one and every Pending it returned. Thread-safety: as
// communicator.h (one calling thread).
#pragma once

#include <chrono>
#include <memory>

#include "launcher/comm/communicator.h"

namespace tensoropt::comm {

class TimedCommunicator final : public Communicator {
 public:
  explicit TimedCommunicator(Communicator& inner) : inner_(inner) {}

  // Seconds blocked in collectives since construction.
  double blocked_seconds() const { return blocked_; }

  std::string_view backend() const override { return inner_.backend(); }
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  std::chrono::milliseconds timeout() const override { return inner_.timeout(); }

  void all_reduce(void* buf, int64_t count, DType dtype, const Group& group) override;
  std::unique_ptr<Pending> all_reduce_async(void* buf, int64_t count, DType dtype, const Group& group) override;
  void all_gather_v(const void* in, void* out, const std::vector<int64_t>& counts, DType dtype, const Group& group) override;
  void reduce_scatter_v(const void* in, void* out, const std::vector<int64_t>& counts, DType dtype,
                        const Group& group) override;
  void all_to_all_v(const void* in, const std::vector<int64_t>& send_counts, void* out,
                    const std::vector<int64_t>& recv_counts, DType dtype, const Group& group) override;
  void broadcast(void* buf, int64_t count, DType dtype, int root, const Group& group) override;
  void barrier(const Group& group) override;

 private:
  template <typename Fn>
  void timed(Fn&& fn);

  Communicator& inner_;
  double blocked_ = 0;
};

}  // namespace tensoropt::comm
