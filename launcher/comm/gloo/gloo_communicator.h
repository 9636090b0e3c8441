// GlooCommunicator: the class behind make_gloo_communicator (../gloo_communicator.h, whose contract
// it implements: rendezvous specs, groups, algorithms, async all-reduce, timeouts, errors). This
// header is internal to launcher/comm: it includes Gloo's headers, which only tensoropt_comm sees.
//
// Its definitions are split by concept:
//   gloo_communicator.cc  construction (the store, the device, the world's context), the factory,
//                         argument checks, and failure: after any error the communicator is
//                         unusable and closes its connections (so the peers fail fast too);
//   groups.cc             the per-group contexts (groups.h) and the group check;
//   collectives.cc        the blocking collectives, each run on its group's context by run();
//   async_lane.cc         all_reduce_async over the async lane (async_lane.h);
//   algorithms.cc         Gloo's algorithms for the sums and the choice between them (algorithms.h);
//   rendezvous.cc, sums.cc  the store and connections (rendezvous.h), the per-dtype sums (sums.h).
//
// Thread-safety: none (communicator.h), except that the async lane's thread runs Gloo's allreduce
// on contexts and buffers handed to it. Must be created after any fork(): Gloo runs a network
// thread.
#pragma once

#include <gloo/transport/device.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "launcher/comm/communicator.h"
#include "launcher/comm/gloo/algorithms.h"
#include "launcher/comm/gloo/groups.h"
#include "launcher/comm/gloo/rendezvous.h"
#include "launcher/comm/gloo_communicator.h"

namespace tensoropt::comm::gloo_impl {

class AsyncLane;

class GlooCommunicator final : public Communicator {
 public:
  // Meets the world (its context is made here), or throws CommError ("rendezvous" over the world).
  // REQUIRES: options checked by make_gloo_communicator.
  explicit GlooCommunicator(const GlooOptions& o);
  ~GlooCommunicator() override;

  std::string_view backend() const override { return "gloo"; }
  int rank() const override { return options_.rank; }
  int size() const override { return options_.size; }
  std::chrono::milliseconds timeout() const override { return options_.timeout; }

  void all_reduce(void* buf, int64_t count, DType dtype, const Group& group) override;
  std::unique_ptr<Pending> all_reduce_async(void* buf, int64_t count, DType dtype, const Group& group) override;
  void all_gather_v(const void* in, void* out, const std::vector<int64_t>& counts, DType dtype,
                    const Group& group) override;
  void reduce_scatter_v(const void* in, void* out, const std::vector<int64_t>& counts, DType dtype,
                        const Group& group) override;
  void all_to_all_v(const void* in, const std::vector<int64_t>& send_counts, void* out,
                    const std::vector<int64_t>& recv_counts, DType dtype, const Group& group) override;
  void broadcast(void* buf, int64_t count, DType dtype, int root, const Group& group) override;
  void barrier(const Group& group) override;

 private:
  // Argument checks (InternalError naming `what`): a negative count; counts that do not match the
  // group; a group that is not a set of distinct ranks of the world containing this rank.
  static void check_count(int64_t count, const char* what);
  static void check_counts(const std::vector<int64_t>& counts, const Group& g, const char* what);
  void check_group(const Group& g, const char* what) const;

  // The group's context in `cache` (the blocking calls' or the async lane's), made on first use:
  // its members meet in the store under the group's key after `lane` ("" or "a"). Throws CommError
  // (`what` over the group) when they do not.
  GroupContext& context(const Group& g, const char* what, GroupContexts& cache, const char* lane = "");

  // Throws CommError ("unusable") when this communicator or its async lane failed earlier.
  void refuse_after_failure(const char* what, const Group& group);
  // Runs one collective on the group's context; every failure becomes a CommError, after which
  // this communicator is unusable and its connections are closed (so the peers fail fast too).
  template <typename Fn>
  void run(const char* what, const Group& group, Fn&& fn);
  [[noreturn]] void fail(const char* what, const Group& group, const std::string& cause);

  void halving_doubling_reduce_scatter(const Group& group, const void* in, void* out, const std::vector<int64_t>& counts,
                                       DType dtype);

  // Declaration order is destruction order in reverse: the cached algorithms go before the
  // contexts they run on, and the contexts before the device and the stores.
  GlooOptions options_;
  Stores stores_;
  std::shared_ptr<gloo::transport::Device> device_;
  GroupContexts contexts_;
  GroupContexts lane_contexts_;                   // the async lane's, one per group
  std::unique_ptr<AsyncLane> lane_;               // started by the first async collective
  GroupContexts hd_contexts_;                     // halving-doubling reduce-scatters', one per group
  std::map<std::vector<int>, HalvingDoublingCache> hd_cache_;
  std::vector<uint8_t> scratch_;                  // direct_reduce_scatter's
  std::string failed_;
};

}  // namespace tensoropt::comm::gloo_impl
