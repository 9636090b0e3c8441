// The collectives of the NCCL communicator (nccl_communicator.h): argument checks (the Gloo
// communicator's rules: gloo/sums.h), then the NCCL calls on the group's communicator and the
// lane's stream, through the engine (engine.h), which orders, waits and fails.
#include "launcher/comm/nccl/nccl_communicator.h"

#include <set>

#include "graph/error.h"
#include "launcher/comm/gloo/sums.h"
#include "launcher/comm/gloo_communicator.h"
#include "launcher/comm/nccl/engine.h"
#include "launcher/comm/nccl/point_to_point.h"

namespace tensoropt::comm {
namespace nccl_impl {
namespace {

constexpr int kBytes = static_cast<int>(DType::U8);  // copies move bytes

size_t bytes(int64_t count, int64_t elem_size) { return static_cast<size_t>(count * elem_size); }
const char* at(const void* p, int64_t offset) { return static_cast<const char*>(p) + offset; }
char* at(void* p, int64_t offset) { return static_cast<char*>(p) + offset; }

// An all_reduce_async in flight: its event on the async lane's stream.
class NcclPending final : public Pending {
 public:
  NcclPending(std::shared_ptr<Engine> engine, void* event, void* comm, Group group)
      : engine_(std::move(engine)), event_(event), comm_(comm), group_(std::move(group)) {}
  ~NcclPending() override {
    try {
      wait();
    } catch (const std::exception&) {  // dropped, as communicator.h says
    }
  }
  void wait() override {
    if (done_) {
      if (!error_.empty()) throw CommError("all_reduce", group_, engine_->rank(), error_);
      return;
    }
    done_ = true;
    try {
      engine_->refuse_after_failure("all_reduce", group_);
      engine_->await(event_, comm_, "all_reduce", group_, engine_->deadline());
    } catch (const CommError& e) {
      error_ = e.what();
      throw;
    }
    engine_->give_event(event_);
  }

 private:
  std::shared_ptr<Engine> engine_;
  void* event_;
  void* comm_;
  Group group_;
  bool done_ = false;
  std::string error_;
};

class Finished final : public Pending {
 public:
  void wait() override {}
};

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(const NcclOptions& o, const TensoroptNcclApi& api) : e_(std::make_shared<Engine>(o, api)), api_(api) {}

  std::string_view backend() const override { return "nccl"; }
  int rank() const override { return e_->options().rank; }
  int size() const override { return e_->options().size; }
  std::chrono::milliseconds timeout() const override { return e_->options().timeout; }

  void all_reduce(void* buf, int64_t count, DType dtype, const Group& group) override {
    (void)gloo_impl::sum_fn(dtype, "all_reduce");
    check_count(count, "all_reduce");
    run("all_reduce", group, count > 0 && !e_->local(group), [&](void* comm, void* stream) -> int {
      return api_.all_reduce(buf, static_cast<size_t>(count), static_cast<int>(dtype), comm, stream);
    });
  }

  std::unique_ptr<Pending> all_reduce_async(void* buf, int64_t count, DType dtype, const Group& group) override {
    (void)gloo_impl::sum_fn(dtype, "all_reduce");
    check_count(count, "all_reduce");
    e_->refuse_after_failure("all_reduce", group);
    check_group(group, "all_reduce");
    if (count == 0 || e_->local(group)) return std::make_unique<Finished>();
    void* comm = e_->comm(group, Lane::Async, "all_reduce");
    const auto until = e_->deadline();
    void* stream = e_->begin(Lane::Async, "all_reduce", group);
    e_->check(api_.all_reduce(buf, static_cast<size_t>(count), static_cast<int>(dtype), comm, stream), comm, "all_reduce",
              group, until);
    void* event = e_->take_event("all_reduce", group);
    e_->record(event, stream, "all_reduce", group);
    return std::make_unique<NcclPending>(e_, event, comm, group);
  }

  void all_gather_v(const void* in, void* out, const std::vector<int64_t>& counts, DType dtype, const Group& group) override {
    const int64_t es = gloo_impl::copy_size(dtype, "all_gather");
    check_counts(counts, group, "all_gather");
    run("all_gather", group, total(counts) > 0, [&](void* comm, void* stream) -> int {
      const int me = group.index_of(rank());
      if (!comm) return counts[0] > 0 ? api_.copy_async(out, in, bytes(counts[0], es), stream) : TO_NCCL_OK;
      if (equal_counts(counts)) return api_.all_gather(in, out, bytes(counts[0], es), kBytes, comm, stream);
      return point_to_point(gather_plan(counts, me, es), in, out, comm, stream, "all_gather", group);
    });
  }

  void reduce_scatter_v(const void* in, void* out, const std::vector<int64_t>& counts, DType dtype,
                        const Group& group) override {
    (void)gloo_impl::sum_fn(dtype, "reduce_scatter");
    check_counts(counts, group, "reduce_scatter");
    const int64_t es = comm_dtype_size(dtype);
    run("reduce_scatter", group, total(counts) > 0, [&](void* comm, void* stream) -> int {
      if (!comm) return counts[0] > 0 ? api_.copy_async(out, in, bytes(counts[0], es), stream) : TO_NCCL_OK;
      const int t = static_cast<int>(dtype);
      if (equal_counts(counts)) return api_.reduce_scatter(in, out, static_cast<size_t>(counts[0]), t, comm, stream);
      // One ncclReduce per piece, rooted at its member; a non-root's receive buffer is never
      // written, so it names its own piece of the input.
      const int me = group.index_of(rank());
      const std::vector<int64_t> offsets = piece_offsets(counts);
      return grouped("reduce_scatter", group, [&]() -> int {
        for (int j = 0; j < group.size(); ++j) {
          const size_t u = static_cast<size_t>(j);
          if (counts[u] == 0) continue;
          const void* piece = at(in, offsets[u] * es);
          void* dst = j == me ? out : const_cast<void*>(piece);
          if (int s = api_.reduce(piece, dst, static_cast<size_t>(counts[u]), t, j, comm, stream); s == TO_NCCL_FAILED) return s;
        }
        return TO_NCCL_OK;
      });
    });
  }

  void all_to_all_v(const void* in, const std::vector<int64_t>& send_counts, void* out, const std::vector<int64_t>& recv_counts,
                    DType dtype, const Group& group) override {
    const int64_t es = gloo_impl::copy_size(dtype, "all_to_all");
    check_counts(send_counts, group, "all_to_all");
    check_counts(recv_counts, group, "all_to_all");
    const size_t me = static_cast<size_t>(group.index_of(rank()));
    if (me < send_counts.size() && send_counts[me] != recv_counts[me])
      throw InternalError("all_to_all: member " + std::to_string(me) + " of group " + group.str() + " sends itself " +
                          std::to_string(send_counts[me]) + " elements and receives " + std::to_string(recv_counts[me]));
    // Every member of a non-local group takes part, even with nothing to move: its counts are its
    // own, and members must agree on who makes the group's communicator.
    run("all_to_all", group, !e_->local(group) || send_counts[0] > 0, [&](void* comm, void* stream) -> int {
      if (!comm) return send_counts[0] > 0 ? api_.copy_async(out, in, bytes(send_counts[0], es), stream) : TO_NCCL_OK;
      return point_to_point(all_to_all_plan(send_counts, recv_counts, es), in, out, comm, stream, "all_to_all", group);
    });
  }

  void broadcast(void* buf, int64_t count, DType dtype, int root, const Group& group) override {
    const int64_t es = gloo_impl::copy_size(dtype, "broadcast");
    check_count(count, "broadcast");
    if (root < 0 || root >= group.size())
      throw InternalError("broadcast: root " + std::to_string(root) + " is not a rank of group " + group.str());
    run("broadcast", group, count > 0 && !e_->local(group), [&](void* comm, void* stream) -> int {
      return api_.broadcast(buf, bytes(count, es), kBytes, root, comm, stream);
    });
  }

  void barrier(const Group& group) override {
    run("barrier", group, !e_->local(group), [&](void* comm, void* stream) -> int {
      return api_.all_reduce(e_->scratch(), 1, static_cast<int>(DType::F32), comm, stream);
    });
  }

 private:
  // Checks; then, when there is `work` (members agree on it: it follows from the counts), the
  // group's communicator, the collective issued by `issue(comm, stream)` on the blocking lane
  // after the compute stream's work, and the wait for it. `comm` is null for a local group.
  template <typename Issue>
  void run(const char* what, const Group& group, bool work, Issue&& issue) {
    e_->refuse_after_failure(what, group);
    check_group(group, what);
    if (!work) return;
    void* comm = e_->comm(group, Lane::Blocking, what);
    const auto until = e_->deadline();
    void* stream = e_->begin(Lane::Blocking, what, group);
    e_->check(issue(comm, stream), comm, what, group, until);
    e_->finish_blocking(comm, what, group, until);
  }

  // body() issues NCCL calls between ncclGroupStart and ncclGroupEnd; returns group_end's status,
  // or fails the engine with the first failed call's error.
  template <typename Body>
  int grouped(const char* what, const Group& group, Body&& body) {
    if (api_.group_start() == TO_NCCL_FAILED) e_->fail(what, group, e_->api_error());
    if (body() == TO_NCCL_FAILED) {
      const std::string why = e_->api_error();
      (void)api_.group_end();
      e_->fail(what, group, why);
    }
    return api_.group_end();
  }

  int point_to_point(const PointToPoint& plan, const void* in, void* out, void* comm, void* stream, const char* what,
                     const Group& group) {
    return grouped(what, group, [&]() -> int {
      for (const Transfer& t : plan.sends)
        if (api_.send(at(in, t.offset), static_cast<size_t>(t.bytes), kBytes, t.peer, comm, stream) == TO_NCCL_FAILED)
          return TO_NCCL_FAILED;
      for (const Transfer& t : plan.recvs)
        if (api_.recv(at(out, t.offset), static_cast<size_t>(t.bytes), kBytes, t.peer, comm, stream) == TO_NCCL_FAILED)
          return TO_NCCL_FAILED;
      return TO_NCCL_OK;
    });
  }

  void check_group(const Group& g, const char* what) const {
    std::set<int> seen;
    for (int r : g.ranks)
      if (r < 0 || r >= size() || !seen.insert(r).second)
        throw InternalError(std::string(what) + ": group " + g.str() + " is not a set of distinct ranks of a world of " +
                            std::to_string(size()));
    if (g.index_of(rank()) < 0)
      throw InternalError(std::string(what) + ": rank " + std::to_string(rank()) + " is not in group " + g.str());
  }
  static int64_t total(const std::vector<int64_t>& counts) {
    int64_t n = 0;
    for (int64_t c : counts) n += c;
    return n;
  }
  static void check_count(int64_t count, const char* what) {
    if (count < 0) throw InternalError(std::string(what) + ": negative count " + std::to_string(count));
  }
  static void check_counts(const std::vector<int64_t>& counts, const Group& g, const char* what) {
    if (counts.size() != g.ranks.size())
      throw InternalError(std::string(what) + ": " + std::to_string(counts.size()) + " counts for group " + g.str());
    for (int64_t c : counts) check_count(c, what);
  }

  std::shared_ptr<Engine> e_;
  const TensoroptNcclApi& api_;
};

}  // namespace
}  // namespace nccl_impl

std::unique_ptr<Communicator> make_nccl_communicator(const NcclOptions& o, const TensoroptNcclApi& api) {
  const std::string me = "nccl communicator: ";
  if (o.size < 1) throw InputError(me + "world size " + std::to_string(o.size) + " is below 1");
  if (o.rank < 0 || o.rank >= o.size)
    throw InputError(me + "rank " + std::to_string(o.rank) + " outside 0.." + std::to_string(o.size - 1));
  if (o.timeout.count() <= 0) throw InputError(me + "the timeout must be positive");
  if (o.device < 0) throw InputError(me + "device " + std::to_string(o.device) + " is not a CUDA device ordinal");
  parse_rendezvous(o.rendezvous);
  int gpus = 0;
  std::string why;
  if (api.device_count(&gpus) != TO_NCCL_OK) {
    char text[512] = "";
    api.error(text, sizeof text);
    why = std::string(": ") + text;
    gpus = 0;
  }
  if (o.device >= gpus)
    throw InputError(me + "device " + std::to_string(o.device) + " is not a visible GPU (" + std::to_string(gpus) + " visible" + why +
                     ")");
  return std::make_unique<nccl_impl::NcclCommunicator>(o, api);
}

}  // namespace tensoropt::comm
