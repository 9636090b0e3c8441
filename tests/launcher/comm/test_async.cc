// all_reduce_async: async all-reduces beside blocking collectives, in order, a dropped Pending,
// and a peer killed during async all-reduces.
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "tests/launcher/comm/known_answers.h"

namespace tensoropt::comm {
namespace {

using namespace std::chrono_literals;
using namespace test_known;

TEST_CASE("comm: async all-reduces run beside blocking collectives, in order, and equal the known sums") {
  const std::vector<int> shape{2, 2};
  const int n = 4;
  TempDir dir;
  auto results = run_children(n, [&](int rank) {
    auto c = make_gloo_communicator(options(rank, n, "file:" + dir.path));
    const Group g0 = mesh_axis_group(shape, rank, 0), g1 = mesh_axis_group(shape, rank, 1);
    // Bucket-like buffers of several sizes, some summed over both axes in turn (the second sum
    // must see the first's result: the lane keeps their order).
    const std::vector<int64_t> sizes{1, 1000, 1 << 18, 37, 1 << 16};
    std::vector<std::vector<float>> bufs;
    std::vector<std::unique_ptr<Pending>> pending;
    for (size_t b = 0; b < sizes.size(); ++b) {
      bufs.emplace_back(static_cast<size_t>(sizes[b]));
      for (size_t i = 0; i < bufs[b].size(); ++i) bufs[b][i] = static_cast<float>((rank + 1) * ((i % 7) + b + 1));
      pending.push_back(c->all_reduce_async(bufs[b].data(), sizes[b], DType::F32, b % 2 ? g0 : c->world()));
      if (b % 2) pending.push_back(c->all_reduce_async(bufs[b].data(), sizes[b], DType::F32, g1));
      // Blocking collectives go on meanwhile, on the same groups.
      check_all_reduce<float>(*c, g1, DType::F32, "blocking float32 beside async");
      check_all_reduce<double>(*c, c->world(), DType::F64, "blocking float64 beside async");
    }
    // A Pending dropped without wait still completes before its buffer could go.
    std::vector<double> dropped(100, 1.0);
    c->all_reduce_async(dropped.data(), 100, DType::F64, c->world()).reset();
    for (double x : dropped)
      if (x != n) throw std::runtime_error("a dropped Pending did not complete its sum");
    for (auto& p : pending) p->wait();
    for (auto& p : pending) p->wait();  // a second wait returns at once
    // Every rank's (rank + 1) summed over the world (both axes, or the world at once): 1+2+3+4.
    for (size_t b = 0; b < sizes.size(); ++b)
      for (size_t i = 0; i < bufs[b].size(); ++i)
        if (bufs[b][i] != static_cast<float>(10 * ((i % 7) + b + 1)))
          throw std::runtime_error("bucket " + std::to_string(b) + " element " + std::to_string(i) + " is " +
                                   std::to_string(bufs[b][i]));
  }, kChildLimit);
  check_all_ok(results);
}

TEST_CASE("comm: a peer killed during async all-reduces makes wait throw CommError, and the communicator unusable") {
  TempDir dir;
  const int n = 3;
  auto results = run_children(
      n,
      [&](int rank) {
        auto c = make_gloo_communicator(options(rank, n, "file:" + dir.path, 3s));
        std::vector<float> a(1 << 16, 1.0f), b(1 << 16, 1.0f);
        try {
          for (;;) {
            auto p = c->all_reduce_async(a.data(), static_cast<int64_t>(a.size()), DType::F32, c->world());
            auto q = c->all_reduce_async(b.data(), static_cast<int64_t>(b.size()), DType::F32, c->world());
            p->wait();
            q->wait();
          }
        } catch (const CommError& e) {
          const std::string first = e.what();
          try {
            c->barrier(c->world());
          } catch (const CommError& again) {
            if (std::string(again.what()).find("unusable") == std::string::npos)
              throw std::runtime_error(std::string("second error: ") + again.what());
            throw std::runtime_error(first);
          }
          throw std::runtime_error("a call after a CommError succeeded");
        }
      },
      /*limit=*/20s, /*kill_rank=*/2, /*kill_after=*/1500ms);
  CHECK(results[2].message == "killed by signal 9");
  for (int r = 0; r < 2; ++r) {
    const std::string& msg = results[static_cast<size_t>(r)].message;
    INFO(msg);
    CHECK(msg.find("all_reduce over group [0,1,2] failed on rank " + std::to_string(r)) != std::string::npos);
    CHECK(results[static_cast<size_t>(r)].seconds < 1.5 + 3.0 + 2.0);
  }
}

}  // namespace
}  // namespace tensoropt::comm
