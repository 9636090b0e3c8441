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

double interpolate(const std::vector<std::pair<double, double>>& p, double x) {
  TO_CHECK(!p.empty());
  if (p.size() == 1 || x <= p.front().first) return p.front().second;
  size_t hi = 1;
  while (hi + 1 < p.size() && p[hi].first < x) ++hi;
  const auto& [x0, y0] = p[hi - 1];
  const auto& [x1, y1] = p[hi];
  return y0 + (y1 - y0) * (x - x0) / (x1 - x0);  // beyond the last point: the last segment's line
}

void MeasuredCollectives::add(StepKind kind, int n, Points points) {
  TO_CHECK(is_collective(kind) && n >= 2 && !points.empty());
  std::sort(points.begin(), points.end());
  for (size_t i = 1; i < points.size(); ++i) {
    TO_CHECK(points[i].first > points[i - 1].first);
    points[i].second = std::max(points[i].second, points[i - 1].second);
  }
  points_[{static_cast<int>(kind), n}] = std::move(points);
}

std::optional<double> MeasuredCollectives::time(StepKind kind, int n, double bytes) const {
  const std::pair<int, int> key{static_cast<int>(kind), n};
  {
    std::lock_guard<std::mutex> lock(mu_);
    double& largest = asked_[key];
    largest = std::max(largest, bytes);
  }
  auto it = points_.find(key);
  if (it == points_.end()) return std::nullopt;
  return interpolate(it->second, bytes);
}

MeasuredCollectives::Counts MeasuredCollectives::counts() const {
  std::lock_guard<std::mutex> lock(mu_);
  Counts c;
  for (const auto& [key, bytes] : asked_) (points_.count(key) ? c.measured : c.modelled) += 1;
  return c;
}

void MeasuredCollectives::set_exposed(int n, double exposed) {
  TO_CHECK(n >= 2 && exposed >= 0);
  exposed_[n] = exposed;
}

std::optional<double> MeasuredCollectives::exposed(int n) const {
  auto it = exposed_.find(n);
  if (it == exposed_.end()) return std::nullopt;
  return it->second;
}

std::map<std::pair<StepKind, int>, double> MeasuredCollectives::asked() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::pair<StepKind, int>, double> out;
  for (const auto& [key, bytes] : asked_) out[{static_cast<StepKind>(key.first), key.second}] = bytes;
  return out;
}

double collective_time(StepKind kind, double bytes, int n, const LinkLevel& link) {
  if (n > 1 && is_collective(kind) && link.measured)
    if (const std::optional<double> t = link.measured->time(kind, n, bytes)) return *t;
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
  std::optional<double> whole = ax.link.measured ? ax.link.measured->time(step.kind, n, bucket) : std::nullopt;
  if (whole && step.kind == StepKind::AllReduce)
    if (const std::optional<double> exposed = ax.link.measured->exposed(n)) *whole *= *exposed;
  if (!whole) whole = step.kind == StepKind::AllReduce ? ring_all_reduce_time(bucket, n, ax.link) : collective_time(step.kind, bucket, n, ax.link);
  return bytes / bucket * *whole;
}

double plan_time(const RedistributePlan& plan, const DeviceMesh& mesh) {
  double t = 0;
  for (const auto& s : plan.steps) t += step_time(s, mesh);
  return t;
}

}  // namespace tensoropt::planner
