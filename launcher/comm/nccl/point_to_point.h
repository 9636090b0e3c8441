// The point-to-point plans of the NCCL communicator's uneven collectives: which bytes member `me`
// sends to and receives from each member inside one ncclGroupStart/End. all_to_all_v always runs
// this way; all_gather_v when its counts differ (equal counts are ncclAllGather). A member's own
// piece is a send to and a receive from itself (NCCL copies it), so a one-rank communicator runs
// the same code as a large one.
//
// Zero-byte transfers are left out on both sides alike: member i's send to j is planned exactly
// when j's receive from i is, with the same byte count (counts are the same on every member, and
// all_to_all_v REQUIRES recv_counts[j] of member i == send_counts[i] of member j), so the NCCL
// calls of every pair match (tests/launcher/comm/test_nccl.cc checks it for every pair).
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <vector>

namespace tensoropt::comm::nccl_impl {

struct Transfer {
  int peer = 0;        // group rank
  int64_t offset = 0;  // bytes from the start of the input (sends) or the output (receives)
  int64_t bytes = 0;   // > 0
  bool operator==(const Transfer&) const = default;
};

struct PointToPoint {
  std::vector<Transfer> sends, recvs;
};

// offsets[i] = counts[0] + ... + counts[i-1].
std::vector<int64_t> piece_offsets(const std::vector<int64_t>& counts);
bool equal_counts(const std::vector<int64_t>& counts);

// all_gather_v: member `me` sends its in[counts[me]] to every member and receives member j's
// into out at piece j.
PointToPoint gather_plan(const std::vector<int64_t>& counts, int me, int64_t elem_size);
// all_to_all_v: member `me` sends its piece j of in to member j and receives member j's into its
// piece j of out.
PointToPoint all_to_all_plan(const std::vector<int64_t>& send_counts, const std::vector<int64_t>& recv_counts,
                             int64_t elem_size);

}  // namespace tensoropt::comm::nccl_impl
