// Tests of planner/ft/thread_pool.h: every index exactly once, on any number of threads, nested and
// from several threads at once; the first exception rethrown; one pool of threads kept across calls;
// a fork()ed child runs calls alone.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
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

size_t threads_of_process() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

TEST_CASE("parallel_for: nested calls, and calls from several threads at once, run every index once") {
  constexpr size_t kOuter = 16, kInner = 200;
  std::vector<std::atomic<int>> seen(kOuter * kInner);
  const auto nested = [&] {
    parallel_for(kOuter, [&](size_t o) { parallel_for(kInner, [&](size_t i) { seen[o * kInner + i].fetch_add(1); }); });
  };
  nested();
  for (const auto& s : seen) CHECK(s.load() == 1);
  std::vector<std::thread> callers;
  for (int c = 0; c < 3; ++c) callers.emplace_back(nested);
  for (std::thread& t : callers) t.join();
  for (const auto& s : seen) CHECK(s.load() == 4);
}

TEST_CASE("parallel_for: the pool's threads help and are kept, not started per call") {
  if (std::thread::hardware_concurrency() < 2) {
    MESSAGE("one hardware thread: parallel_for runs on the caller alone; skipped");
    return;
  }
  parallel_for(2, [](size_t) {});  // the pool exists from here on
  const size_t before = threads_of_process();
  std::mutex mu;
  std::set<pid_t> ids;  // kernel thread ids: a thread started per call would get a new one
  for (int call = 0; call < 200; ++call) {
    // Index 0 waits (at most 10 s) until another thread has taken index 1: a helper took part.
    std::atomic<bool> second{false};
    parallel_for(2, [&](size_t i) {
      {
        std::lock_guard<std::mutex> lock(mu);
        ids.insert(gettid());
      }
      if (i == 1) second = true;
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (i == 0 && !second && std::chrono::steady_clock::now() < until) std::this_thread::yield();
    });
  }
  CHECK(ids.size() >= 2);
  CHECK(ids.size() <= std::thread::hardware_concurrency());
  CHECK(threads_of_process() == before);
}

TEST_CASE("parallel_for: a fork()ed child, which has no pool threads, runs calls alone") {
  parallel_for(4, [](size_t) {});  // the pool exists in the parent
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    std::atomic<int> sum{0};
    parallel_for(100, [&](size_t i) { sum.fetch_add(static_cast<int>(i)); });
    _exit(sum.load() == 4950 ? 0 : 1);
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
}

}  // namespace
}  // namespace tensoropt::planner
