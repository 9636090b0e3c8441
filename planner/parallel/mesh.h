// The logical device mesh of a plan: N devices of one Cluster arranged as 1-3 axes, each axis
// carrying the link level its collectives run over. Ranks are physical: rank r is GPU r % gpus_per_node
// of node r / gpus_per_node. Mesh coordinates are row-major (the last axis varies fastest).
//
// Shapes chosen by for_cluster(c, N):
//   N <= gpus_per_node                  [N]                  intra-node
//   N a multiple of gpus_per_node       [N/gpn, gpn]         axis 0 inter-node, axis 1 intra-node
//   otherwise (e.g. 12 GPUs, 8 a node)  [N]                  inter-node
// The last case is a flat axis costed at the inter-node level: a ring over all N devices crosses
// the node boundary, and a ring runs at the pace of its slowest hop. A planner that wants the fast
// link for part of the work asks for factorizations() instead (12 = [3,4]: the 4-axis stays in a node).
//
// Link level of an axis (with_shape, factorizations): intra-node iff every group along the axis lies
// inside one node; otherwise inter-node, even when only some of its hops cross nodes (conservative:
// the ring is as slow as its slowest hop). E.g. 16 GPUs, 8 a node, [4,4]: axis 1 intra, axis 0 inter.
//
// Errors: a device count or axis size below 1, or a shape whose product is not the device count
// throws InputError. Values are immutable; thread-safe to read.
#pragma once

#include <string>
#include <vector>

#include "planner/parallel/cluster.h"

namespace tensoropt::planner {

struct MeshAxis {
  int size = 1;
  bool inter_node = false;  // true: collectives along this axis cross nodes
  LinkLevel link;           // the cluster's inter_node or intra_node level, per inter_node
};

class DeviceMesh {
 public:
  // The default mesh for `devices` GPUs of `cluster` (table above).
  static DeviceMesh for_cluster(const Cluster& cluster, int devices);
  // `devices` = product of `shape`, viewed as that shape; link levels by the rule above.
  static DeviceMesh with_shape(const Cluster& cluster, const std::vector<int>& shape);

  int size() const { return size_; }
  int ndim() const { return static_cast<int>(axes_.size()); }
  const MeshAxis& axis(int a) const { return axes_.at(static_cast<size_t>(a)); }
  std::vector<int> shape() const;

  // REQUIRES: 0 <= rank < size(); coords has ndim() entries within the axis sizes.
  std::vector<int> coords(int rank) const;
  int rank(const std::vector<int>& coords) const;
  // The ranks taking part with `rank` in a collective along axis `a`, in axis-coordinate order.
  std::vector<int> group(int rank, int a) const;

  // Every view of the same devices as 1..max_axes axes of size >= 2 whose product is size()
  // (just [1] for one device), ordered by number of axes, then lexicographically by shape.
  // Both [2,4] and [4,2] appear. Each axis gets its link level by the rule above.
  std::vector<DeviceMesh> factorizations(int max_axes = 3) const;

  // "[2 inter, 8 intra]"
  std::string str() const;

 private:
  DeviceMesh() = default;
  int size_ = 1;
  int gpus_per_node_ = 1;
  LinkLevel intra_, inter_;
  std::vector<MeshAxis> axes_;
};

}  // namespace tensoropt::planner
