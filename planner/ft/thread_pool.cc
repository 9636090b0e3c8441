// The process-wide pool behind parallel_for (thread_pool.h).
#include "planner/ft/thread_pool.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace tensoropt::planner {
namespace {

// One parallel_for call: indices handed out by `next`; `helpers` pool threads working on it now,
// at most `max_helpers`.
struct Job {
  size_t n = 0;
  const std::function<void(size_t)>* fn = nullptr;
  size_t max_helpers = 0;
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;  // the first, set once by whoever sets `failed`
  size_t helpers = 0;        // under the pool's mutex

  // Runs indices until none is left or one failed.
  void work() {
    try {
      for (size_t i; !failed.load(std::memory_order_relaxed) && (i = next.fetch_add(1)) < n;) (*fn)(i);
    } catch (...) {
      if (!failed.exchange(true)) error = std::current_exception();
    }
  }
};

class Pool {
 public:
  Pool() {
    // A child of fork() has none of the threads (nor, maybe, a usable mutex): it runs alone.
    pthread_atfork(nullptr, nullptr, [] { forked_child = true; });
    const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
    try {
      for (unsigned t = 1; t < hw; ++t) threads_.emplace_back([this] { serve(); });
    } catch (const std::system_error&) {  // no more threads to be had: those started serve
    }
  }
  void run(Job& job) {
    if (forked_child || threads_.empty()) {
      job.work();
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(&job);
    }
    wake_.notify_all();
    job.work();
    std::unique_lock<std::mutex> lock(mu_);
    const auto it = std::find(queue_.begin(), queue_.end(), &job);
    if (it != queue_.end()) queue_.erase(it);
    done_.wait(lock, [&] { return job.helpers == 0; });
  }

 private:
  void serve() {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      wake_.wait(lock, [&] { return !queue_.empty(); });
      Job* job = queue_.front();
      if (++job->helpers >= job->max_helpers) queue_.pop_front();  // helped enough: off the queue
      lock.unlock();
      job->work();
      lock.lock();
      // The job leaves the queue once its indices are gone (its caller removes it too).
      if (job->next.load() >= job->n || job->failed.load()) {
        const auto it = std::find(queue_.begin(), queue_.end(), job);
        if (it != queue_.end()) queue_.erase(it);
      }
      if (--job->helpers == 0) done_.notify_all();
    }
  }

  static inline bool forked_child = false;  // set in a fork()ed child only, by the handler above
  std::mutex mu_;
  std::condition_variable wake_, done_;
  std::deque<Job*> queue_;
  std::vector<std::thread> threads_;
};

// Never destroyed: its threads wait for work until the process ends, whichever thread ends it.
Pool& pool() {
  static Pool* p = new Pool;
  return *p;
}

}  // namespace

void parallel_for(size_t n, const std::function<void(size_t)>& fn, size_t threads) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  threads = std::min(threads, n);
  if (threads <= 1) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  Job job;
  job.n = n;
  job.fn = &fn;
  job.max_helpers = threads - 1;
  pool().run(job);
  if (job.error) std::rethrow_exception(job.error);
}

}  // namespace tensoropt::planner
