// Tests of planner/ft/thread_pool.h: every index exactly once, on any number of threads, and the first
// exception rethrown.
#include <doctest/doctest.h>

#include <atomic>
#include <stdexcept>
#include <vector>

#include "planner/ft/thread_pool.h"

namespace tensoropt::planner {
namespace {

TEST_CASE("parallel_for: every index once, whatever the thread count") {
  for (size_t threads : {size_t{0}, size_t{1}, size_t{3}, size_t{64}}) {
    for (size_t n : {size_t{0}, size_t{1}, size_t{2}, size_t{1000}}) {
      CAPTURE(threads);
      CAPTURE(n);
      std::vector<std::atomic<int>> seen(n);
      parallel_for(n, [&](size_t i) { seen[i].fetch_add(1); }, threads);
      for (size_t i = 0; i < n; ++i) CHECK(seen[i].load() == 1);
    }
  }
}

TEST_CASE("parallel_for: an exception in one call is rethrown once all threads stopped") {
  std::atomic<int> calls{0};
  CHECK_THROWS_WITH_AS(parallel_for(
                           100,
                           [&](size_t i) {
                             calls.fetch_add(1);
                             if (i == 7) throw std::runtime_error("index 7");
                           },
                           4),
                       "index 7", std::runtime_error);
  CHECK(calls.load() >= 8);
  CHECK_THROWS_AS(parallel_for(3, [](size_t) { throw std::logic_error("all"); }, 1), std::logic_error);
}

}  // namespace
}  // namespace tensoropt::planner
