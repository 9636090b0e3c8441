// Every collective against its known answer (known_answers.h) on 1-4 forked processes and on the
// axes of 2x2 and 2x3 meshes (equal and uneven counts, several dtypes), and misuse.
#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <vector>

#include "graph/error.h"
#include "tests/launcher/comm/known_answers.h"

namespace tensoropt::comm {
namespace {

using namespace std::chrono_literals;
using namespace test_known;

TEST_CASE("comm: every collective matches its known answer on 2 processes") { check_world(2); }
TEST_CASE("comm: every collective matches its known answer on 3 processes") { check_world(3); }
TEST_CASE("comm: every collective matches its known answer on 4 processes") { check_world(4); }

TEST_CASE("comm: collectives along each axis of a 2x2 and a 2x3 mesh, axes interleaved") {
  for (const std::vector<int>& shape : std::vector<std::vector<int>>{{2, 2}, {2, 3}}) {
    TempDir dir;
    const int n = shape[0] * shape[1];
    INFO("mesh " << shape[0] << "x" << shape[1]);
    auto results = run_children(n, [&](int rank) {
      auto c = make_gloo_communicator(options(rank, n, "file:" + dir.path));
      const Group g0 = mesh_axis_group(shape, rank, 0), g1 = mesh_axis_group(shape, rank, 1);
      check_collectives(*c, g1);
      check_collectives(*c, g0);
      check_all_reduce<float>(*c, g1, DType::F32, "float32 again");  // the cached contexts
      check_all_reduce<float>(*c, c->world(), DType::F32, "float32 world");
      check_reduce_scatter<float>(*c, g0, DType::F32, std::vector<int64_t>(2, 1000), "float32 large");
      c->barrier(c->world());  // the last collective before the communicator goes (communicator.h)
    }, kChildLimit);
    check_all_ok(results);
  }
}

TEST_CASE("comm: a world of one copies locally, and misuse is an InternalError") {
  TempDir dir;
  auto results = run_children(1, [&](int) {
    auto c = make_gloo_communicator(options(0, 1, "file:" + dir.path));
    check_collectives(*c, c->world());
    float x = 1;
    const auto internal = [&](const std::function<void()>& f, const char* what) {
      try {
        f();
      } catch (const InternalError&) {
        return;
      }
      throw std::runtime_error(std::string("no InternalError for ") + what);
    };
    internal([&] { c->all_reduce(&x, 1, DType::F32, Group{{1}}); }, "a rank outside the world");
    internal([&] { c->all_reduce(&x, 1, DType::F32, Group{{0, 0}}); }, "a repeated rank");
    internal([&] { c->all_reduce(&x, 1, DType::F16, c->world()); }, "a sum of float16");
    internal([&] { c->all_reduce(&x, -1, DType::F32, c->world()); }, "a negative count");
    internal([&] { c->all_gather_v(&x, &x, {1, 1}, DType::F32, c->world()); }, "two counts for a group of one");
    internal([&] { c->broadcast(&x, 1, DType::F32, 1, c->world()); }, "a root outside the group");
    internal([&] { c->all_gather(&x, &x, 1, DType::String, c->world()); }, "a dtype without a size");
  }, kChildLimit);
  check_all_ok(results);
}

}  // namespace
}  // namespace tensoropt::comm
