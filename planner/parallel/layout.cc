#include "planner/parallel/layout.h"

#include <algorithm>

#include "graph/error.h"

namespace tensoropt::planner {

Placement Placement::shard(int dim) {
  TO_CHECK(dim >= 0);
  return Placement(Kind::Shard, dim);
}

std::string Placement::str() const {
  switch (kind_) {
    case Kind::Replicate: return "R";
    case Kind::Partial: return "P";
    case Kind::Shard: return "S(" + std::to_string(dim_) + ")";
  }
  return "?";
}

Layout Layout::with(int axis, Placement p) const {
  Layout l = *this;
  l.p_.at(static_cast<size_t>(axis)) = p;
  return l;
}

size_t Layout::hash() const {
  size_t h = p_.size();
  for (const auto& p : p_) h = h * 31 + p.hash();
  return h;
}

std::string Layout::str() const {
  std::string s = "[";
  for (size_t i = 0; i < p_.size(); ++i) {
    if (i) s += ',';
    s += p_[i].str();
  }
  return s + "]";
}

int64_t chunk_size(int64_t n, int parts, int index) {
  TO_CHECK(parts >= 1 && index >= 0 && index < parts && n >= 0);
  int64_t c = (n + parts - 1) / parts;
  int64_t begin = c * index;
  return begin >= n ? 0 : std::min(c, n - begin);
}

static std::string shape_str(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? "," : "") + std::to_string(s[i]);
  return out + "]";
}

void check_layout(const Shape& global, const Layout& layout, const DeviceMesh& mesh) {
  if (layout.size() != mesh.ndim())
    throw InputError("layout " + layout.str() + " has " + std::to_string(layout.size()) + " placements but the mesh " +
                     mesh.str() + " has " + std::to_string(mesh.ndim()) + " axes");
  for (const auto& p : layout.placements())
    if (p.is_shard() && p.dim() >= static_cast<int>(global.size()))
      throw InputError("layout " + layout.str() + " shards dimension " + std::to_string(p.dim()) + " of a tensor of shape " +
                       shape_str(global));
  for (int64_t d : global)
    if (d < 0) throw InputError("tensor shape " + shape_str(global) + " has a negative dimension");
}

Shape local_shape(const Shape& global, const Layout& layout, const DeviceMesh& mesh, const std::vector<int>& coord) {
  check_layout(global, layout, mesh);
  TO_CHECK(static_cast<int>(coord.size()) == mesh.ndim());
  Shape s = global;
  for (int a = 0; a < mesh.ndim(); ++a) {  // axis order = nesting order
    const Placement& p = layout[a];
    if (!p.is_shard()) continue;
    auto& d = s[static_cast<size_t>(p.dim())];
    d = chunk_size(d, mesh.axis(a).size, coord[static_cast<size_t>(a)]);
  }
  return s;
}

Shape max_local_shape(const Shape& global, const Layout& layout, const DeviceMesh& mesh) {
  // Chunk 0 is a largest chunk at every level, so coordinates 0 hold a largest shard.
  return local_shape(global, layout, mesh, std::vector<int>(static_cast<size_t>(mesh.ndim()), 0));
}

int64_t max_local_bytes(const Shape& global, int dtype_bytes, const Layout& layout, const DeviceMesh& mesh) {
  return numel(max_local_shape(global, layout, mesh)) * dtype_bytes;
}

}  // namespace tensoropt::planner
