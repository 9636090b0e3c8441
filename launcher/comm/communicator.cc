#include "launcher/comm/communicator.h"

#include <algorithm>
#include <string>

#include "graph/error.h"

namespace tensoropt::comm {

int Group::index_of(int rank) const {
  auto it = std::find(ranks.begin(), ranks.end(), rank);
  return it == ranks.end() ? -1 : static_cast<int>(it - ranks.begin());
}

std::string Group::str() const {
  // Appends only: GCC 12 at -O3 warns falsely (-Wrestrict) on "," + std::to_string(...).
  std::string s = "[";
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(ranks[i]);
  }
  s += ']';
  return s;
}

Group world_group(int size) {
  Group g;
  for (int r = 0; r < size; ++r) g.ranks.push_back(r);
  return g;
}

Group mesh_axis_group(const std::vector<int>& shape, int rank, int axis) {
  int total = 1;
  for (int s : shape) {
    if (s < 1) throw InternalError("mesh_axis_group: an axis size is below 1");
    total *= s;
  }
  if (axis < 0 || axis >= static_cast<int>(shape.size()))
    throw InternalError("mesh_axis_group: axis " + std::to_string(axis) + " outside a mesh of " +
                        std::to_string(shape.size()) + " axes");
  if (rank < 0 || rank >= total)
    throw InternalError("mesh_axis_group: rank " + std::to_string(rank) + " outside a mesh of " +
                        std::to_string(total) + " devices");
  // Row-major: the stride of an axis is the product of the sizes after it.
  int stride = 1;
  for (size_t a = static_cast<size_t>(axis) + 1; a < shape.size(); ++a) stride *= shape[a];
  const int n = shape[static_cast<size_t>(axis)];
  const int coord = rank / stride % n;
  const int first = rank - coord * stride;
  Group g;
  for (int i = 0; i < n; ++i) g.ranks.push_back(first + i * stride);
  return g;
}

int64_t comm_dtype_size(DType dtype) {
  switch (dtype) {
    case DType::F64: case DType::I64: case DType::U64: return 8;
    case DType::F32: case DType::I32: case DType::U32: return 4;
    case DType::F16: case DType::BF16: case DType::I16: case DType::U16: return 2;
    case DType::I8: case DType::U8: case DType::Bool: return 1;
    case DType::Undefined: case DType::String: return 0;
  }
  return 0;
}

CommError::CommError(std::string collective, const Group& group, int rank, const std::string& cause)
    : std::runtime_error(collective + " over group " + group.str() + " failed on rank " + std::to_string(rank) +
                         ": " + cause),
      collective_(std::move(collective)),
      group_(group),
      rank_(rank) {}

void Communicator::all_gather(const void* in, void* out, int64_t count, DType dtype, const Group& group) {
  all_gather_v(in, out, std::vector<int64_t>(group.ranks.size(), count), dtype, group);
}

void Communicator::reduce_scatter(const void* in, void* out, int64_t count, DType dtype, const Group& group) {
  reduce_scatter_v(in, out, std::vector<int64_t>(group.ranks.size(), count), dtype, group);
}

void Communicator::all_to_all(const void* in, void* out, int64_t count, DType dtype, const Group& group) {
  std::vector<int64_t> counts(group.ranks.size(), count);
  all_to_all_v(in, counts, out, counts, dtype, group);
}

namespace {

class Finished final : public Pending {
 public:
  void wait() override {}
};

}  // namespace

std::unique_ptr<Pending> Communicator::all_reduce_async(void* buf, int64_t count, DType dtype, const Group& group) {
  all_reduce(buf, count, dtype, group);
  return std::make_unique<Finished>();
}

}  // namespace tensoropt::comm
