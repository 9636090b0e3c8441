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

int64_t chunk_offset(int64_t n, int parts, int index) {
  TO_CHECK(parts >= 1 && index >= 0 && index < parts && n >= 0);
  const int64_t c = (n + parts - 1) / parts;
  return std::min(c * index, n);
}

std::optional<Layout> parse_layout(const std::string& text) {
  if (text.size() < 2 || text.front() != '[' || text.back() != ']') return std::nullopt;
  std::vector<Placement> p;
  size_t i = 1;
  while (i < text.size() - 1) {
    if (text[i] == 'R') {
      p.push_back(Placement::replicate());
      ++i;
    } else if (text[i] == 'P') {
      p.push_back(Placement::partial());
      ++i;
    } else if (text.compare(i, 2, "S(") == 0) {
      const size_t close = text.find(')', i);
      if (close == std::string::npos || close == i + 2 || close - i > 8) return std::nullopt;
      int dim = 0;
      for (size_t k = i + 2; k < close; ++k) {
        if (text[k] < '0' || text[k] > '9') return std::nullopt;
        dim = dim * 10 + (text[k] - '0');
      }
      p.push_back(Placement::shard(dim));
      i = close + 1;
    } else {
      return std::nullopt;
    }
    if (i < text.size() - 1) {
      if (text[i] != ',') return std::nullopt;
      ++i;
      if (i == text.size() - 1) return std::nullopt;  // a trailing comma
    }
  }
  return Layout(std::move(p));
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

std::vector<int64_t> shard_offset(const Shape& global, const Layout& layout, const DeviceMesh& mesh, const std::vector<int>& coord) {
  check_layout(global, layout, mesh);
  TO_CHECK(static_cast<int>(coord.size()) == mesh.ndim());
  std::vector<int64_t> offset(global.size(), 0);
  Shape size = global;
  for (int a = 0; a < mesh.ndim(); ++a) {
    if (!layout[a].is_shard()) continue;
    const auto d = static_cast<size_t>(layout[a].dim());
    const int p = mesh.axis(a).size, k = coord[static_cast<size_t>(a)];
    offset[d] += chunk_offset(size[d], p, k);
    size[d] = chunk_size(size[d], p, k);
  }
  return offset;
}

Shape max_local_shape(const Shape& global, const Layout& layout, const DeviceMesh& mesh) {
  // Chunk 0 is a largest chunk at every level, so coordinates 0 hold a largest shard.
  return local_shape(global, layout, mesh, std::vector<int>(static_cast<size_t>(mesh.ndim()), 0));
}

int64_t max_local_bytes(const Shape& global, int dtype_bytes, const Layout& layout, const DeviceMesh& mesh) {
  return numel(max_local_shape(global, layout, mesh)) * dtype_bytes;
}

}  // namespace tensoropt::planner
