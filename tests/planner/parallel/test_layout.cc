// Placement and Layout: printed forms, equality and hash, uneven local shapes, bytes.
#include <doctest/doctest.h>

#include <unordered_set>

#include "graph/error.h"
#include "planner/parallel/cluster.h"
#include "tests/planner/parallel/placements.h"
#include "planner/parallel/layout.h"

namespace tensoropt::planner {
namespace {

using test::mesh;
using test::P;
using test::R;
using test::S;


TEST_CASE("layout: printed forms") {
  CHECK(S(0).str() == "S(0)");
  CHECK(S(12).str() == "S(12)");
  CHECK(R.str() == "R");
  CHECK(P.str() == "P");
  CHECK(Layout({S(0), R}).str() == "[S(0),R]");
  CHECK(Layout({P, S(1), R}).str() == "[P,S(1),R]");
  CHECK(Layout::replicated(2).str() == "[R,R]");
}

TEST_CASE("layout: equality and hash") {
  CHECK(S(0) == S(0));
  CHECK_FALSE(S(0) == S(1));
  CHECK_FALSE(R == P);
  CHECK(Layout({S(0), R}) == Layout({S(0), R}));
  CHECK_FALSE(Layout({S(0), R}) == Layout({R, S(0)}));
  std::unordered_set<Layout> set;
  for (auto a : {R, P, S(0), S(1)})
    for (auto b : {R, P, S(0), S(1)}) set.insert(Layout({a, b}));
  set.insert(Layout({S(1), P}));
  CHECK(set.size() == 16);
  CHECK(std::hash<Layout>{}(Layout({S(0), R})) != std::hash<Layout>{}(Layout({R, S(0)})));
  CHECK(Layout({R, R}).with(1, S(0)) == Layout({R, S(0)}));
}

TEST_CASE("layout: the ceil rule for uneven splits, zero allowed") {
  CHECK(std::vector<int64_t>{chunk_size(10, 4, 0), chunk_size(10, 4, 1), chunk_size(10, 4, 2), chunk_size(10, 4, 3)} ==
        std::vector<int64_t>{3, 3, 3, 1});
  CHECK(std::vector<int64_t>{chunk_size(3, 4, 0), chunk_size(3, 4, 3)} == std::vector<int64_t>{1, 0});
  CHECK(chunk_size(5, 4, 2) == 1);
  CHECK(chunk_size(5, 4, 3) == 0);  // c = 2: 2,2,1,0
  CHECK(chunk_size(8, 1, 0) == 8);
}

TEST_CASE("layout: local shapes on one and two axes, uneven") {
  auto m = mesh({4});
  std::vector<int64_t> rows;
  for (int k = 0; k < 4; ++k) rows.push_back(local_shape({10, 6}, Layout({S(0)}), m, {k})[0]);
  CHECK(rows == std::vector<int64_t>{3, 3, 3, 1});
  CHECK(local_shape({10, 6}, Layout({R}), m, {3}) == Shape{10, 6});
  CHECK(local_shape({10, 6}, Layout({P}), m, {3}) == Shape{10, 6});

  auto m2 = mesh({2, 4});
  // Both axes shard dim 0: axis 0 halves 10 into 5,5; axis 1 splits 5 four ways: 2,2,1,0.
  CHECK(local_shape({10, 6}, Layout({S(0), S(0)}), m2, {1, 2}) == Shape{1, 6});
  CHECK(local_shape({10, 6}, Layout({S(0), S(0)}), m2, {1, 3}) == Shape{0, 6});
  CHECK(local_shape({10, 6}, Layout({S(1), S(0)}), m2, {1, 3}) == Shape{1, 3});
  CHECK(max_local_shape({10, 6}, Layout({S(0), S(0)}), m2) == Shape{2, 6});
  // Every device's shard fits in the largest; the shards of [S(0),S(0)] add up to the tensor.
  int64_t total = 0;
  for (int r = 0; r < m2.size(); ++r) {
    auto s = local_shape({10, 6}, Layout({S(0), S(0)}), m2, m2.coords(r));
    CHECK(s[0] <= 2);
    total += numel(s);
  }
  CHECK(total == 60);
}

TEST_CASE("layout: bytes") {
  auto m2 = mesh({2, 4});
  CHECK(max_local_bytes({1024, 1024}, 4, Layout({R, R}), m2) == 4 << 20);
  CHECK(max_local_bytes({1024, 1024}, 2, Layout({S(0), S(1)}), m2) == 1024 * 1024 * 2 / 8);
  CHECK(max_local_bytes({10, 6}, 4, Layout({S(0), S(0)}), m2) == 2 * 6 * 4);
  CHECK(max_local_bytes({10, 6}, 4, Layout({P, S(1)}), m2) == 10 * 2 * 4);
}

TEST_CASE("layout: a layout that does not fit is refused") {
  auto m2 = mesh({2, 4});
  CHECK_THROWS_AS(check_layout({10, 6}, Layout({S(0)}), m2), InputError);
  CHECK_THROWS_AS(check_layout({10, 6}, Layout({S(2), R}), m2), InputError);
  CHECK_NOTHROW(check_layout({10, 6}, Layout({S(1), S(1)}), m2));
}

}  // namespace
}  // namespace tensoropt::planner
