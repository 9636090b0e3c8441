#include "profiler/comm_timer.h"

#include <algorithm>
#include <chrono>

#include "graph/error.h"
#include "launcher/runtime/array.h"

namespace tensoropt::profiler {

double slowest(comm::Communicator& host, double seconds) {
  std::vector<double> all(static_cast<size_t>(host.size()));
  host.all_gather(&seconds, all.data(), 1, DType::F64, host.world());
  return *std::max_element(all.begin(), all.end());
}

std::pair<double, double> time_collective(comm::Communicator& tensors, comm::Communicator& host, runtime::Backend& backend, planner::StepKind kind,
                       int n, int64_t bytes, int calls) {
  const int world = tensors.size();
  TO_CHECK(n >= 2 && world % n == 0 && planner::is_collective(kind));
  comm::Group group;
  const int first = tensors.rank() / n * n;
  for (int r = first; r < first + n; ++r) group.ranks.push_back(r);
  // Elements of float32 per rank's piece, and the buffers' lengths.
  const int64_t total = std::max<int64_t>(bytes / 4, n);
  const int64_t piece = std::max<int64_t>(total / n, 1);
  runtime::Array in(DType::F32, {kind == planner::StepKind::AllGather ? piece : piece * n}, backend.allocator(), runtime::MemoryKind::Transients);
  runtime::Array out(DType::F32, {kind == planner::StepKind::ReduceScatter ? piece : piece * n}, backend.allocator(), runtime::MemoryKind::Transients);
  backend.fill(in, 1.0);
  const std::vector<int64_t> counts(static_cast<size_t>(n), piece);
  auto call = [&] {
    switch (kind) {
      case planner::StepKind::AllReduce: tensors.all_reduce(in.raw(), in.numel(), DType::F32, group); break;
      case planner::StepKind::AllGather: tensors.all_gather(in.raw(), out.raw(), piece, DType::F32, group); break;
      case planner::StepKind::ReduceScatter: tensors.reduce_scatter(in.raw(), out.raw(), piece, DType::F32, group); break;
      default: tensors.all_to_all_v(in.raw(), counts, out.raw(), counts, DType::F32, group); break;
    }
    backend.synchronize();
  };
  host.barrier(host.world());
  std::vector<double> times;
  for (int c = 0; c < calls + 2; ++c) {
    const auto t0 = std::chrono::steady_clock::now();
    call();
    if (c >= 2) times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  return {static_cast<double>(piece * n * 4), slowest(host, times[times.size() / 2])};
}

double exposed_all_reduce(comm::Communicator& tensors, comm::Communicator& host, runtime::Backend& backend, int n, int64_t bytes,
                          const std::function<void()>& compute) {
  TO_CHECK(n >= 2 && tensors.size() % n == 0);
  comm::Group group;
  const int first = tensors.rank() / n * n;
  for (int r = first; r < first + n; ++r) group.ranks.push_back(r);
  runtime::Array buf(DType::F32, {std::max<int64_t>(bytes / 4, n)}, backend.allocator(), runtime::MemoryKind::Transients);
  backend.fill(buf, 1.0);
  auto clock = [&](const std::function<void()>& f) {
    std::vector<double> t;
    for (int k = 0; k < 4; ++k) {
      host.barrier(host.world());
      const auto t0 = std::chrono::steady_clock::now();
      f();
      backend.synchronize();
      if (k > 0) t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(t.begin(), t.end());
    return slowest(host, t[t.size() / 2]);
  };
  const double alone = clock(compute);
  const double reduce = clock([&] { tensors.all_reduce(buf.raw(), buf.numel(), DType::F32, group); });
  const double both = clock([&] {
    std::unique_ptr<comm::Pending> p = tensors.all_reduce_async(buf.raw(), buf.numel(), DType::F32, group);
    compute();
    p->wait();
  });
  return reduce > 0 ? std::max(both - alone, 0.0) / reduce : 1.0;
}

}  // namespace tensoropt::profiler
