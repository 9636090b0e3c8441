#include "tests/launcher/comm/known_answers.h"

#include <doctest/doctest.h>

namespace tensoropt::comm {

std::ostream& operator<<(std::ostream& os, const Group& g) { return os << g.str(); }

namespace test_known {

GlooOptions options(int rank, int size, const std::string& rendezvous, std::chrono::milliseconds timeout) {
  GlooOptions o;
  o.rank = rank;
  o.size = size;
  o.rendezvous = rendezvous;
  o.timeout = timeout;
  o.hostname = "127.0.0.1";
  return o;
}

void check_all_ok(const std::vector<ChildResult>& results) {
  for (size_t i = 0; i < results.size(); ++i) {
    INFO("child " << i);
    CHECK(results[i].message == "ok");
  }
}

void check_collectives(Communicator& c, const Group& g) {
  const int n = g.size();
  check_all_reduce<float>(c, g, DType::F32, "float32");
  check_all_reduce<double>(c, g, DType::F64, "float64");
  check_all_reduce<int64_t>(c, g, DType::I64, "int64");
  check_all_reduce<int32_t>(c, g, DType::I32, "int32");
  std::vector<int64_t> equal(static_cast<size_t>(n), 5), uneven;
  for (int j = 0; j < n; ++j) uneven.push_back((j * 2) % 3);  // 0, 2, 1, 0, ...
  check_all_gather<float>(c, g, DType::F32, equal, "float32 equal");
  check_all_gather<int64_t>(c, g, DType::I64, uneven, "int64 uneven");
  check_all_gather<uint16_t>(c, g, DType::BF16, uneven, "bfloat16 uneven");
  check_all_gather<uint16_t>(c, g, DType::F16, equal, "float16 equal");
  std::vector<int64_t> uneven_rs;
  for (int j = 0; j < n; ++j) uneven_rs.push_back((j + 2) % 3 + (j == 0 ? 3 : 0));  // 5, 0, 1, 2, ...
  check_reduce_scatter<double>(c, g, DType::F64, equal, "float64 equal");
  check_reduce_scatter<float>(c, g, DType::F32, uneven_rs, "float32 uneven");
  check_reduce_scatter<int32_t>(c, g, DType::I32, uneven_rs, "int32 uneven");
  check_reduce_scatter<int64_t>(c, g, DType::I64, equal, "int64 equal");
  // Equal counts at the halving-doubling limit (256 KiB of float32 input on a power-of-two group)
  // and just over it, twice each: the second call runs the cached algorithm.
  for (int64_t bytes : {int64_t{1} << 18, (int64_t{1} << 18) + 4 * n})
    for (int again = 0; again < 2; ++again)
      check_reduce_scatter<float>(c, g, DType::F32, std::vector<int64_t>(static_cast<size_t>(n), bytes / 4 / n),
                                  "float32 equal, " + std::to_string(bytes) + " bytes");
  // Over 1 MiB of input, with an empty piece.
  std::vector<int64_t> large;
  for (int j = 0; j < n; ++j) large.push_back(j == 1 ? 0 : 300000 + j);
  check_reduce_scatter<float>(c, g, DType::F32, large, "float32 uneven, over 1 MiB");
  check_all_to_all<int32_t>(c, g, DType::I32, [](int, int) { return int64_t{3}; }, "int32 equal");
  check_all_to_all<double>(c, g, DType::F64, [](int a, int b) { return int64_t{(a + 2 * b) % 3}; }, "float64 uneven");
  check_broadcast<float>(c, g, DType::F32, "float32");
  check_broadcast<uint16_t>(c, g, DType::BF16, "bfloat16");
  check_bf16_sums(c, g);
  c.barrier(g);
  // The equal-count helpers are the _v calls with equal counts.
  std::vector<float> x(static_cast<size_t>(2 * n), static_cast<float>(c.rank())), y(static_cast<size_t>(2 * n), -1.0f);
  c.all_to_all(x.data(), y.data(), 2, DType::F32, g);
  for (int j = 0; j < n; ++j)
    expect(std::vector<float>(y.begin() + 2 * j, y.begin() + 2 * j + 2), std::vector<float>(2, static_cast<float>(g.ranks[static_cast<size_t>(j)])),
           "all_to_all equal over " + g.str());
}

void check_world(int n) {
  TempDir dir;
  auto results = run_children(n, [&](int rank) {
    auto c = make_gloo_communicator(options(rank, n, "file:" + dir.path));
    if (c->rank() != rank || c->size() != n || c->backend() != "gloo") throw std::runtime_error("identity");
    check_collectives(*c, c->world());
  }, kChildLimit);
  check_all_ok(results);
}

}  // namespace test_known
}  // namespace tensoropt::comm
