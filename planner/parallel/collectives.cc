#include "planner/parallel/collectives.h"

#include <algorithm>

#include "graph/error.h"

namespace tensoropt::planner {

double bus_bandwidth_factor(StepKind kind, int n) {
  TO_CHECK(n >= 1);
  if (!is_collective(kind)) return 0;
  double f = static_cast<double>(n - 1) / n;
  return kind == StepKind::AllReduce ? 2 * f : f;
}

double ring_all_gather_time(double bytes, int n, const LinkLevel& link) {
  TO_CHECK(n >= 1 && bytes >= 0);
  if (n == 1) return 0;
  return (n - 1) * link.latency + static_cast<double>(n - 1) / n * bytes / link.bandwidth;
}

double all_to_all_time(double bytes, int n, const LinkLevel& link) { return ring_all_gather_time(bytes, n, link); }

double ring_all_reduce_time(double bytes, int n, const LinkLevel& link) { return 2 * ring_all_gather_time(bytes, n, link); }

double recursive_doubling_all_reduce_time(double bytes, int n, const LinkLevel& link) {
  TO_CHECK(n >= 1 && bytes >= 0);
  if (n == 1) return 0;
  int rounds = 0;
  while ((2 << rounds) <= n) ++rounds;  // floor(log2 n)
  if ((n & (n - 1)) != 0) rounds += 2;
  return rounds * (link.latency + bytes / link.bandwidth);
}

double all_reduce_time(double bytes, int n, const LinkLevel& link) {
  return std::min(ring_all_reduce_time(bytes, n, link), recursive_doubling_all_reduce_time(bytes, n, link));
}

double collective_time(StepKind kind, double bytes, int n, const LinkLevel& link) {
  switch (kind) {
    case StepKind::AllGather:
    case StepKind::ReduceScatter: return ring_all_gather_time(bytes, n, link);
    case StepKind::AllToAll: return all_to_all_time(bytes, n, link);
    case StepKind::AllReduce: return all_reduce_time(bytes, n, link);
    default: return 0;
  }
}

double step_time(const Step& step, const DeviceMesh& mesh) {
  const MeshAxis& ax = mesh.axis(step.mesh_axis);
  TO_CHECK(ax.size == step.group_size);
  return collective_time(step.kind, static_cast<double>(step.bytes), step.group_size, ax.link);
}

double bucketed_step_time(const Step& step, const DeviceMesh& mesh, double bucket_bytes) {
  TO_CHECK(bucket_bytes > 0);
  const MeshAxis& ax = mesh.axis(step.mesh_axis);
  TO_CHECK(ax.size == step.group_size);
  const double bytes = static_cast<double>(step.bytes);
  if (bytes <= 0) return 0;
  const double bucket = std::max(bytes, bucket_bytes);  // the collective the gradient travels in
  const int n = step.group_size;
  const double whole = step.kind == StepKind::AllReduce ? ring_all_reduce_time(bucket, n, ax.link)
                                                        : collective_time(step.kind, bucket, n, ax.link);
  return bytes / bucket * whole;
}

double plan_time(const RedistributePlan& plan, const DeviceMesh& mesh) {
  double t = 0;
  for (const auto& s : plan.steps) t += step_time(s, mesh);
  return t;
}

}  // namespace tensoropt::planner
