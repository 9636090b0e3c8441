#include "planner/parallel/mesh.h"

#include <functional>

#include "graph/error.h"

namespace tensoropt::planner {

DeviceMesh DeviceMesh::for_cluster(const Cluster& cluster, int devices) {
  if (devices < 1) throw InputError("device mesh: device count must be at least 1, got " + std::to_string(devices));
  int gpn = cluster.gpus_per_node;
  if (devices <= gpn || devices % gpn != 0) return with_shape(cluster, {devices});
  return with_shape(cluster, {devices / gpn, gpn});
}

DeviceMesh DeviceMesh::with_shape(const Cluster& cluster, const std::vector<int>& shape) {
  if (shape.empty()) throw InputError("device mesh: a shape needs at least one axis");
  DeviceMesh m;
  m.gpus_per_node_ = cluster.gpus_per_node;
  m.intra_ = cluster.intra_node;
  m.inter_ = cluster.inter_node;
  long long n = 1;
  for (int s : shape) {
    if (s < 1) throw InputError("device mesh: axis sizes must be at least 1");
    n *= s;
    if (n > (1 << 24)) throw InputError("device mesh: too many devices");
  }
  m.size_ = static_cast<int>(n);
  int stride = m.size_;
  for (int s : shape) {
    stride /= s;
    // Groups along this axis: {base + k*stride}. Ranks grow along a group and node = rank / gpn grows
    // with rank, so a group lies in one node iff its first and last member do.
    bool inter = false;
    for (int r = 0; r < m.size_ && !inter; ++r) {
      if ((r / stride) % s != 0) continue;  // r is not the first member of its group
      int last = r + (s - 1) * stride;
      inter = r / m.gpus_per_node_ != last / m.gpus_per_node_;
    }
    m.axes_.push_back({s, inter, inter ? m.inter_ : m.intra_});
  }
  return m;
}

std::vector<int> DeviceMesh::shape() const {
  std::vector<int> s;
  for (const auto& a : axes_) s.push_back(a.size);
  return s;
}

std::vector<int> DeviceMesh::coords(int r) const {
  TO_CHECK(r >= 0 && r < size_);
  std::vector<int> c(axes_.size());
  for (int a = ndim() - 1; a >= 0; --a) {
    int s = axes_[static_cast<size_t>(a)].size;
    c[static_cast<size_t>(a)] = r % s;
    r /= s;
  }
  return c;
}

int DeviceMesh::rank(const std::vector<int>& c) const {
  TO_CHECK(c.size() == axes_.size());
  int r = 0;
  for (size_t a = 0; a < axes_.size(); ++a) {
    TO_CHECK(c[a] >= 0 && c[a] < axes_[a].size);
    r = r * axes_[a].size + c[a];
  }
  return r;
}

std::vector<int> DeviceMesh::group(int r, int a) const {
  TO_CHECK(a >= 0 && a < ndim());
  std::vector<int> c = coords(r);
  std::vector<int> g;
  for (int k = 0; k < axes_[static_cast<size_t>(a)].size; ++k) {
    c[static_cast<size_t>(a)] = k;
    g.push_back(rank(c));
  }
  return g;
}

std::vector<DeviceMesh> DeviceMesh::factorizations(int max_axes) const {
  Cluster c;
  c.gpus_per_node = gpus_per_node_;
  c.intra_node = intra_;
  c.inter_node = inter_;
  if (size_ == 1) return {with_shape(c, {1})};
  std::vector<DeviceMesh> out;
  std::vector<int> cur;
  // Ordered factorizations with exactly `axes` factors >= 2, lexicographic by construction.
  std::function<void(int, int)> rec = [&](int rest, int axes) {
    if (axes == 1) {
      cur.push_back(rest);
      out.push_back(with_shape(c, cur));
      cur.pop_back();
      return;
    }
    for (int f = 2; f < rest; ++f) {
      if (rest % f != 0) continue;
      cur.push_back(f);
      rec(rest / f, axes - 1);
      cur.pop_back();
    }
  };
  for (int k = 1; k <= max_axes; ++k) rec(size_, k);
  return out;
}

std::string DeviceMesh::str() const {
  std::string s = "[";
  for (size_t a = 0; a < axes_.size(); ++a) {
    if (a) s += ", ";
    s += std::to_string(axes_[a].size) + (axes_[a].inter_node ? " inter" : " intra");
  }
  return s + "]";
}

}  // namespace tensoropt::planner
