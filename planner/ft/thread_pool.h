// parallel_for: the one way the planner spreads independent work over hardware threads.
//
// parallel_for(n, fn, threads) calls fn(i) once for every i < n, on up to `threads` threads (0: one
// per hardware thread), the calling thread included; indices are handed out in increasing order,
// one at a time, so the callers that need a deterministic result write to slot i and combine the
// slots in order afterwards. After the first exception no further index is started; that exception
// is rethrown once every thread has stopped. Threads are started per call and joined before it
// returns.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <thread>
#include <vector>

namespace tensoropt::planner {

template <class Fn>
void parallel_for(size_t n, const Fn& fn, size_t threads = 0) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  threads = std::min(threads, n);
  if (threads <= 1) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  const auto work = [&] {
    try {
      for (size_t i; !failed && (i = next.fetch_add(1)) < n;) fn(i);
    } catch (...) {
      if (!failed.exchange(true)) error = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace tensoropt::planner
