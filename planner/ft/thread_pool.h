// parallel_for: the one way the planner spreads independent work over hardware threads.
//
// parallel_for(n, fn, threads) calls fn(i) once for every i < n, on up to `threads` threads (0: one
// per hardware thread), the calling thread included; indices are handed out in increasing order,
// one at a time, so the callers that need a deterministic result write to slot i and combine the
// slots in order afterwards. After the first exception threads stop taking indices (one already
// past the check may still start its index); that exception is rethrown once every thread has
// stopped working on the call.
//
// The helper threads are one process-wide pool of hardware threads - 1, started on first use and
// kept: FT calls this once per batch of a big step, about a thousand times on a big model, and a
// thread started per call cost a fresh stack (a 2 MiB page zeroed) each time. Calls nest (a mesh
// solved on a pool thread runs its FT steps with parallel_for): the caller always works on its own
// call, idle pool threads help the oldest call waiting, and a thread waits only for the helpers
// still working on its own call, so no wait is circular. In a child of fork() (which has no pool
// threads) calls run on the caller alone; where threads cannot be started, fewer help.
// Thread-safety: any thread may call it at any time.
#pragma once

#include <cstddef>
#include <functional>

namespace tensoropt::planner {

void parallel_for(size_t n, const std::function<void(size_t)>& fn, size_t threads = 0);

}  // namespace tensoropt::planner
