// How one tensor lies on a DeviceMesh: per mesh axis a Placement, the closed vocabulary of
// PyTorch DTensor and OneFlow SBP:
//   Shard(d)   "S(d)"  the tensor is split along tensor dimension d across this axis
//   Replicate  "R"     every device along this axis holds the same values
//   Partial    "P"     devices along this axis hold addends; the tensor is their sum
// A Layout prints as "[S(0),R]" (mesh axis 0 first). Values are immutable, comparable, hashable.
//
// Uneven splits (the ceil rule, as torch.chunk / DTensor): a dimension of n split p ways gives
// chunk k the range [k*c, min((k+1)*c, n)) with c = ceil(n/p). 10 four ways: 3,3,3,1. The last
// devices may get less, and ZERO when n <= (p-1)*c (3 four ways: 1,1,1,0): allowed, so every
// layout is legal for every shape and the planner never needs a special case; the cost of the empty
// shard is what it is (collectives pad every piece to c, see redistribute.h).
// Several mesh axes sharding the same dimension nest in axis order: axis 0 splits the dimension,
// the next sharding axis splits axis 0's chunk, and so on (DTensor's order).
//
// Errors: a layout with a different number of placements than the mesh has axes, or a Shard of a
// dimension the tensor does not have, throws InputError naming the layout and the shape.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "graph/ir.h"
#include "planner/parallel/mesh.h"

namespace tensoropt::planner {

class Placement {
 public:
  enum class Kind : uint8_t { Replicate, Partial, Shard };
  static Placement replicate() { return Placement(Kind::Replicate, -1); }
  static Placement partial() { return Placement(Kind::Partial, -1); }  // partial sums
  static Placement shard(int dim);                                     // REQUIRES: dim >= 0

  Kind kind() const { return kind_; }
  int dim() const { return dim_; }  // the sharded tensor dimension; -1 unless a Shard
  bool is_replicate() const { return kind_ == Kind::Replicate; }
  bool is_partial() const { return kind_ == Kind::Partial; }
  bool is_shard() const { return kind_ == Kind::Shard; }
  bool is_shard(int d) const { return kind_ == Kind::Shard && dim_ == d; }

  bool operator==(const Placement&) const = default;
  size_t hash() const { return static_cast<size_t>(kind_) * 1000003u + static_cast<size_t>(dim_ + 1); }
  std::string str() const;  // "S(0)", "R", "P"

 private:
  Placement(Kind k, int d) : kind_(k), dim_(d) {}
  Kind kind_;
  int dim_;
};

class Layout {
 public:
  Layout(std::initializer_list<Placement> p) : p_(p) {}
  explicit Layout(std::vector<Placement> p) : p_(std::move(p)) {}
  static Layout replicated(int mesh_ndim) { return Layout(std::vector<Placement>(static_cast<size_t>(mesh_ndim), Placement::replicate())); }

  int size() const { return static_cast<int>(p_.size()); }
  const Placement& operator[](int axis) const { return p_.at(static_cast<size_t>(axis)); }
  const std::vector<Placement>& placements() const { return p_; }
  Layout with(int axis, Placement p) const;  // a copy with one axis changed

  bool operator==(const Layout&) const = default;
  size_t hash() const;
  std::string str() const;  // "[S(0),R]"

 private:
  std::vector<Placement> p_;
};

// Size of chunk `index` when n is split `parts` ways by the ceil rule (may be 0).
int64_t chunk_size(int64_t n, int parts, int index);
// First element of chunk `index` under the same rule: min(index * ceil(n/parts), n).
int64_t chunk_offset(int64_t n, int parts, int index);

// The layout `text` names in Layout::str()'s form ("[S(0),R]", "[P]"); nullopt when it is not one.
std::optional<Layout> parse_layout(const std::string& text);

// Throws InputError unless `layout` fits `global` on `mesh` (see the contract above).
void check_layout(const Shape& global, const Layout& layout, const DeviceMesh& mesh);
// The shape of the shard held by the device at mesh coordinates `coord`.
Shape local_shape(const Shape& global, const Layout& layout, const DeviceMesh& mesh, const std::vector<int>& coord);
// Per tensor axis, the global index of the first element of that shard (nested chunks in mesh-axis
// order, as local_shape sizes them).
std::vector<int64_t> shard_offset(const Shape& global, const Layout& layout, const DeviceMesh& mesh, const std::vector<int>& coord);
// The largest local shard (every device's shard fits in it): the device at coordinates 0 holds it.
Shape max_local_shape(const Shape& global, const Layout& layout, const DeviceMesh& mesh);
int64_t max_local_bytes(const Shape& global, int dtype_bytes, const Layout& layout, const DeviceMesh& mesh);

}  // namespace tensoropt::planner

template <>
struct std::hash<tensoropt::planner::Placement> {
  size_t operator()(const tensoropt::planner::Placement& p) const { return p.hash(); }
};
template <>
struct std::hash<tensoropt::planner::Layout> {
  size_t operator()(const tensoropt::planner::Layout& l) const { return l.hash(); }
};
