// Timing the collectives plans issue (docs/profile.md "What is timed") over a world of local
// workers: every group of `group` consecutive ranks runs the collective at once (as the groups
// along one mesh axis do), on buffers of the backend's device, at `bytes` in the nccl-tests
// convention (all_reduce: the buffer; all_gather: the gathered buffer; reduce_scatter: the input;
// all_to_all: the per-device buffer; at least one element per rank). 2 warm-up calls, then
// `calls` calls each between Backend::synchronize calls; a rank's time is its median call, the
// collective's the slowest rank's.
// Every rank of the world calls it with the same arguments, in the same order (a collective).
// REQUIRES (InternalError): group >= 2 divides the world size; kind is a collective.
// Errors: CommError. Not thread-safe.
#pragma once

#include <functional>
#include <utility>

#include "launcher/comm/communicator.h"
#include "launcher/runtime/backend.h"
#include "planner/parallel/redistribute.h"

namespace tensoropt::profiler {

// `tensors`: the communicator the runtime moves tensors over (Gloo on CPU, NCCL on GPU); `host`:
// one on the host (Gloo), for the slowest rank's time. The same object on CPU. Returns the bytes
// moved in the nccl-tests convention (`bytes` rounded to whole float32 pieces per rank) and the
// seconds.
std::pair<double, double> time_collective(comm::Communicator& tensors, comm::Communicator& host, runtime::Backend& backend, planner::StepKind kind,
                       int group, int64_t bytes, int calls);

// The exposed share of an all-reduce of `bytes` over every group of `group` consecutive ranks
// when it runs beside `compute` (as the runtime runs a gradient bucket's beside the backward): each
// rank runs `compute` alone, the all-reduce alone, then starts the all-reduce asynchronously, runs
// `compute` and waits; exposed = (that - compute alone) / all-reduce alone, each the median of 3
// and the slowest rank's, at least 0. A collective (every rank calls it alike).
double exposed_all_reduce(comm::Communicator& tensors, comm::Communicator& host, runtime::Backend& backend, int group, int64_t bytes,
                          const std::function<void()>& compute);

// The slowest rank's value of `seconds` (a host all-gather over the world): every rank gets it.
double slowest(comm::Communicator& host, double seconds);

}  // namespace tensoropt::profiler
