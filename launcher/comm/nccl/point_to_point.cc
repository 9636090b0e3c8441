#include "launcher/comm/nccl/point_to_point.h"

#include <algorithm>
#include <functional>

namespace tensoropt::comm::nccl_impl {

std::vector<int64_t> piece_offsets(const std::vector<int64_t>& counts) {
  std::vector<int64_t> offsets(counts.size(), 0);
  for (size_t i = 1; i < counts.size(); ++i) offsets[i] = offsets[i - 1] + counts[i - 1];
  return offsets;
}

bool equal_counts(const std::vector<int64_t>& counts) {
  return std::adjacent_find(counts.begin(), counts.end(), std::not_equal_to<>()) == counts.end();
}

PointToPoint gather_plan(const std::vector<int64_t>& counts, int me, int64_t elem_size) {
  PointToPoint p;
  const std::vector<int64_t> offsets = piece_offsets(counts);
  const int64_t mine = counts[static_cast<size_t>(me)] * elem_size;
  for (size_t j = 0; j < counts.size(); ++j) {
    if (mine > 0) p.sends.push_back({static_cast<int>(j), 0, mine});
    if (counts[j] > 0) p.recvs.push_back({static_cast<int>(j), offsets[j] * elem_size, counts[j] * elem_size});
  }
  return p;
}

PointToPoint all_to_all_plan(const std::vector<int64_t>& send_counts, const std::vector<int64_t>& recv_counts,
                             int64_t elem_size) {
  PointToPoint p;
  const std::vector<int64_t> send_offsets = piece_offsets(send_counts), recv_offsets = piece_offsets(recv_counts);
  for (size_t j = 0; j < send_counts.size(); ++j) {
    if (send_counts[j] > 0) p.sends.push_back({static_cast<int>(j), send_offsets[j] * elem_size, send_counts[j] * elem_size});
    if (recv_counts[j] > 0) p.recvs.push_back({static_cast<int>(j), recv_offsets[j] * elem_size, recv_counts[j] * elem_size});
  }
  return p;
}

}  // namespace tensoropt::comm::nccl_impl
