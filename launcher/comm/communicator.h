// Communicator: the collectives a worker's shard of a plan performs, behind one interface that a
// Gloo (CPU, gloo_communicator.h) and an NCCL (GPU, next) implementation both serve. Every step
// that planner/parallel/redistribute.h returns (AllGather, ReduceScatter, AllReduce, AllToAll on a
// mesh axis) is one call here over the group of that axis (mesh_axis_group below).
//
// Buffers are raw pointers + element counts + a dtype, never a host-only type, so device pointers
// fit: an implementation reads and writes them on its own device. Element types:
//   copies (all_gather, all_to_all, broadcast): every dtype with a size (float16/bfloat16 included:
//     bytes are moved, not interpreted);
//   sums (all_reduce, reduce_scatter): float32, float64, int32, int64, and bfloat16 (each pair
//     added in float32 and rounded to nearest even, as NCCL sums bfloat16: mixed precision's
//     gradients and partial sums travel as the plan costs them).
// Counts are per group rank; uneven contributions (the layout rules' uneven shards) use the _v
// calls, whose results are concatenated in group order. Equal calls are the _v calls with equal
// counts.
//
// Groups. A Group is a list of distinct world ranks in the order that numbers them inside the group
// (group rank i is ranks[i]). Every member calls the same collectives on the same group in the same
// order, with the same counts; non-members do not call. mesh_axis_group gives the group along one
// axis of a row-major device mesh: for shape [a,b], the groups along axis 1 are the ranks sharing
// the axis-0 coordinate ({0..b-1}, {b..2b-1}, ...) and the groups along axis 0 share the axis-1
// coordinate ({0, b, 2b, ...}, ...). Same rule and order as planner/parallel DeviceMesh::group
// (a test holds them equal), without depending on the planner.
//
// Errors.
//   CommError: a wait that ran past the timeout (default 30 s, every wait has one), a peer that
//     died or closed its connection, a rendezvous that did not complete. Its message names the
//     collective, the group and this rank. After a CommError the communicator is unusable: every
//     later call throws CommError at once (as NCCL's communicators after an abort).
//   InternalError (graph/error.h): the caller's bug: a group this rank is not in, a rank outside
//     the world, a repeated rank, counts that do not match the group, a sum on a dtype that has
//     none, a root outside the group.
//   InputError (graph/error.h): a malformed rendezvous spec or option (implementations' factories).
//
// Asynchronous all-reduce (all_reduce_async): starts the sum and returns a Pending at once, so a
// backward pass goes on while a gradient bucket is summed (as DDP overlaps them). Async
// collectives run one after another in the order they were started, beside the blocking ones and
// not ordered with them; every member starts the same async collectives in the same order. The
// buffer is the collective's until Pending::wait returns: neither read nor written before. A
// failure is thrown by wait (CommError) and leaves the communicator unusable, as a blocking one
// does. A Pending destroyed without wait waits for its collective first (errors dropped), so its
// buffer is never written after its owner is gone. The base class runs the sum at once (blocking)
// and returns a finished Pending; an implementation overlaps where its transport allows (Gloo: a
// thread of its own; NCCL: a stream of its own).
//
// Shutdown: a member that destroys its communicator right after a collective may leave a peer
// failing in that collective (Gloo's halving-doubling reduce-scatter returns before its last
// notifications are on the wire); members pass a last barrier (or any blocking collective) first,
// as `run`'s workers do with their closing all-gather.
//
// Thread-safety: none. One thread at a time issues collectives on a communicator, and waits its
// Pendings; a blocking call returns when its own part of the collective is done (the buffers may
// be reused then).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "graph/dtype.h"

namespace tensoropt::comm {

// Distinct world ranks; group rank i is ranks[i].
struct Group {
  std::vector<int> ranks;

  int size() const { return static_cast<int>(ranks.size()); }
  // The position of world rank `rank` in the group, -1 when it is not a member.
  int index_of(int rank) const;
  // "[0,2,4]"
  std::string str() const;
  bool operator==(const Group&) const = default;
};

// Ranks 0..size-1.
Group world_group(int size);
// The group along `axis` of a row-major mesh of `shape` that contains `rank`, in axis-coordinate
// order. REQUIRES (InternalError): every axis size >= 1, 0 <= axis < shape.size(),
// 0 <= rank < product(shape).
Group mesh_axis_group(const std::vector<int>& shape, int rank, int axis);

// Bytes of one element for the dtypes a communicator moves; 0 for Undefined and String.
int64_t comm_dtype_size(DType dtype);

class CommError : public std::runtime_error {
 public:
  CommError(std::string collective, const Group& group, int rank, const std::string& cause);
  const std::string& collective() const { return collective_; }
  const Group& group() const { return group_; }
  int rank() const { return rank_; }  // this process's world rank

 private:
  std::string collective_;
  Group group_;
  int rank_;
};

// An asynchronous collective in flight (all_reduce_async).
class Pending {
 public:
  virtual ~Pending() = default;
  // Returns once the collective is done on this member (its buffer then holds the result);
  // throws CommError when it failed. Later calls return at once (or throw the same error).
  virtual void wait() = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual std::string_view backend() const = 0;  // "gloo", "nccl"
  virtual int rank() const = 0;                  // world rank
  virtual int size() const = 0;                  // world size
  virtual std::chrono::milliseconds timeout() const = 0;
  Group world() const { return world_group(size()); }

  // buf[count] <- the element-wise sum of every member's buf[count].
  virtual void all_reduce(void* buf, int64_t count, DType dtype, const Group& group) = 0;
  // The same sum, started now and done when the Pending's wait returns (see above).
  virtual std::unique_ptr<Pending> all_reduce_async(void* buf, int64_t count, DType dtype, const Group& group);

  // out[sum(counts)] <- the concatenation of every member's in, in group order; member i
  // contributes in[counts[i]]. `in` and `out` do not overlap.
  virtual void all_gather_v(const void* in, void* out, const std::vector<int64_t>& counts, DType dtype,
                            const Group& group) = 0;
  void all_gather(const void* in, void* out, int64_t count, DType dtype, const Group& group);

  // Every member holds in[sum(counts)]; member i gets out[counts[i]] <- the sum over members of
  // their piece i (the counts[i] elements after the first counts[0] + ... + counts[i-1]).
  virtual void reduce_scatter_v(const void* in, void* out, const std::vector<int64_t>& counts, DType dtype,
                                const Group& group) = 0;
  void reduce_scatter(const void* in, void* out, int64_t count, DType dtype, const Group& group);

  // Member i sends its piece j of in (send_counts[j] elements, pieces in group order) to member j,
  // and receives member j's piece i into its piece j of out (recv_counts[j] elements).
  // REQUIRES: my recv_counts[j] equals member j's send_counts[i].
  virtual void all_to_all_v(const void* in, const std::vector<int64_t>& send_counts, void* out,
                            const std::vector<int64_t>& recv_counts, DType dtype, const Group& group) = 0;
  // count elements to and from each member: in and out hold group.size() * count elements.
  void all_to_all(const void* in, void* out, int64_t count, DType dtype, const Group& group);

  // buf[count] <- group member `root`'s buf (root is a group rank, not a world rank).
  virtual void broadcast(void* buf, int64_t count, DType dtype, int root, const Group& group) = 0;

  // Returns once every member has entered it.
  virtual void barrier(const Group& group) = 0;
};

}  // namespace tensoropt::comm
