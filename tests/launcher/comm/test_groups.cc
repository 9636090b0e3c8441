// mesh_axis_group: the groups along each axis of a row-major mesh, held equal to the planner's
// DeviceMesh::group, and its misuse.
#include <doctest/doctest.h>

#include <vector>

#include "graph/error.h"
#include "planner/parallel/cluster.h"
#include "planner/parallel/mesh.h"
#include "tests/launcher/comm/known_answers.h"

namespace tensoropt::comm {
namespace {

TEST_CASE("comm: mesh_axis_group gives the groups along each axis, as DeviceMesh::group does") {
  CHECK(mesh_axis_group({2, 3}, 4, 1) == Group{{3, 4, 5}});
  CHECK(mesh_axis_group({2, 3}, 4, 0) == Group{{1, 4}});
  CHECK(mesh_axis_group({2, 2}, 0, 0) == Group{{0, 2}});
  CHECK(mesh_axis_group({2, 2}, 3, 1) == Group{{2, 3}});
  CHECK(mesh_axis_group({2, 3, 2}, 7, 1) == Group{{7, 9, 11}});
  CHECK(mesh_axis_group({4}, 2, 0) == world_group(4));
  CHECK(mesh_axis_group({2, 3}, 4, 1).str() == "[3,4,5]");
  const planner::Cluster cluster = planner::load_cluster("h100-sxm");
  for (const std::vector<int>& shape : std::vector<std::vector<int>>{{1}, {6}, {2, 2}, {2, 3}, {3, 2}, {2, 1, 4}, {2, 3, 2}}) {
    const auto mesh = planner::DeviceMesh::with_shape(cluster, shape);
    for (int r = 0; r < mesh.size(); ++r)
      for (int a = 0; a < mesh.ndim(); ++a) {
        INFO("shape " << shape.size() << " axes, rank " << r << ", axis " << a);
        CHECK(mesh_axis_group(shape, r, a).ranks == mesh.group(r, a));
      }
  }
  CHECK_THROWS_AS(mesh_axis_group({2, 3}, 6, 0), InternalError);
  CHECK_THROWS_AS(mesh_axis_group({2, 3}, 0, 2), InternalError);
  CHECK_THROWS_AS(mesh_axis_group({2, 0}, 0, 0), InternalError);
}

}  // namespace
}  // namespace tensoropt::comm
