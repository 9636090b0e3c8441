// Short names for tests that write layouts by hand: R, P, S(d), and meshes of the h100-sxm preset.
#pragma once

#include <vector>

#include "planner/parallel/cluster.h"
#include "planner/parallel/layout.h"
#include "planner/parallel/mesh.h"

namespace tensoropt::planner::test {

inline const Placement R = Placement::replicate();
inline const Placement P = Placement::partial();
inline Placement S(int d) { return Placement::shard(d); }
inline DeviceMesh mesh(std::vector<int> shape) { return DeviceMesh::with_shape(load_cluster("h100-sxm"), shape); }

}  // namespace tensoropt::planner::test
