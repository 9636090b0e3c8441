// Analytic time of each collective (alpha-beta model) and of a redistribution plan.
// A collective over a group of n devices on a link level of bandwidth B (bytes/s per device per
// direction) and latency alpha (s per message); S is its size in the nccl-tests convention
// (redistribute.h: AllGather the gathered buffer, ReduceScatter the input buffer, AllReduce the
// buffer, AllToAll the per-device buffer):
//   AllGather, ReduceScatter (ring)      (n-1) alpha + (n-1)/n * S/B
//   AllToAll (pairwise exchange)         (n-1) alpha + (n-1)/n * S/B
//   AllReduce = min(ring, recursive doubling):
//     ring (reduce-scatter + all-gather) 2(n-1) alpha + 2(n-1)/n * S/B
//     recursive doubling                 r (alpha + S/B), r = floor(log2 n), plus 2 when n is not a
//                                        power of two (the extra ranks fold in first, get the result last)
// Sources: Thakur, Rabenseifner & Gropp, "Optimization of Collective Communication Operations in
// MPICH", IJHPCA 19(1), 2005 (sections 4.1, 4.4, 4.5 and 4.6; the reduction's compute term gamma
// is left out: GPUs reduce far faster than links move); Patarasuk & Yuan 2009 for the ring's
// bandwidth optimality. The factors (n-1)/n and 2(n-1)/n are nccl-tests' bus-bandwidth factors
// (NVIDIA/nccl-tests, doc/PERFORMANCE.md), so busbw measured there calibrates B here directly.
// n = 1 and the local steps cost 0. Every time is monotone non-decreasing in S, and in n except
// all-reduce off powers of two: recursive doubling over 9 ranks (5 rounds) is slower than over 16 (4).
// Pure functions; thread-safe.
// A link level may carry measured times (MeasuredCollectives, from a profile): a collective it
// has points for is priced from them instead (collective_time, bucketed_step_time).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "planner/parallel/cluster.h"
#include "planner/parallel/mesh.h"
#include "planner/parallel/redistribute.h"

namespace tensoropt::planner {

// Collective times measured on one link level (docs/profile.md "How costs use it"): per kind and
// group size, (bytes, seconds) points. time() interpolates linearly between the two points around
// `bytes`, takes the first point's time below the smallest size and extends the line through the
// last two beyond the largest; times are made non-decreasing in bytes first. Every (kind, n) asked
// for is remembered as measured or modelled (no points), for the counts a plan reports.
// Thread-safe (the planner prices meshes on several threads).
// Linear interpolation through (x, y) points sorted by x with distinct x: the first point's y
// below the first x, the line through the last two beyond the last x (the only y for one point).
double interpolate(const std::vector<std::pair<double, double>>& points, double x);

class MeasuredCollectives {
 public:
  using Points = std::vector<std::pair<double, double>>;
  // REQUIRES: kind is a collective, n >= 2, points non-empty with distinct sizes >= 0.
  void add(StepKind kind, int n, Points points);
  std::optional<double> time(StepKind kind, int n, double bytes) const;
  bool has(StepKind kind, int n) const { return points_.count({static_cast<int>(kind), n}) > 0; }
  struct Counts {
    int measured = 0, modelled = 0;  // distinct (kind, group size) asked for
  };
  Counts counts() const;
  // Every (kind, group size) asked for, with the largest size asked (what a profile must time).
  std::map<std::pair<StepKind, int>, double> asked() const;
  // The share of a gradient bucket's all-reduce over n devices that a step still waits for when
  // the runtime overlaps it with the backward (measured: 0 when the backward hides it all, above 1
  // when running beside the backward slows both); bucketed_step_time multiplies by it.
  // REQUIRES: n >= 2, exposed >= 0.
  void set_exposed(int n, double exposed);
  std::optional<double> exposed(int n) const;

 private:
  std::map<std::pair<int, int>, Points> points_;
  std::map<int, double> exposed_;
  mutable std::mutex mu_;
  mutable std::map<std::pair<int, int>, double> asked_;
};

// nccl-tests' busbw / algbw: (n-1)/n, 2(n-1)/n for AllReduce; 0 for local steps.
double bus_bandwidth_factor(StepKind kind, int n);

double ring_all_gather_time(double bytes, int n, const LinkLevel& link);  // also ReduceScatter
double all_to_all_time(double bytes, int n, const LinkLevel& link);
double ring_all_reduce_time(double bytes, int n, const LinkLevel& link);
double recursive_doubling_all_reduce_time(double bytes, int n, const LinkLevel& link);
double all_reduce_time(double bytes, int n, const LinkLevel& link);  // the min of the two

// A collective of `kind` and size `bytes` over n devices at `link`; 0 for local steps.
double collective_time(StepKind kind, double bytes, int n, const LinkLevel& link);
// One step on its mesh axis' link level.
double step_time(const Step& step, const DeviceMesh& mesh);
// Gradient synchronisation, bucketed: frameworks pack gradients into buckets (PyTorch DDP's
// bucket_cap_mb, 25 MiB by default) and run one collective per bucket, a ring one (NCCL runs
// messages this large as rings), so a parameter pays its byte share of its bucket's collective:
//   bytes / B * time(B),  B = max(bytes, bucket_bytes), all-reduce as a ring
// (a parameter bigger than a bucket is one of its own). A sum over parameters of these is the
// bucketed total for full buckets; additive, so FT stays exact. With a measured all-reduce on the
// link, its points price the bucket, times the exposed share measured for the group size (the
// runtime overlaps bucket all-reduces with the backward) where the profile has one.
inline constexpr double kGradientBucketBytes = 25.0 * 1024 * 1024;
double bucketed_step_time(const Step& step, const DeviceMesh& mesh, double bucket_bytes = kGradientBucketBytes);
// The sum over the plan's steps. REQUIRES: `plan` came from redistribute (or backward_plan) on `mesh`.
double plan_time(const RedistributePlan& plan, const DeviceMesh& mesh);

}  // namespace tensoropt::planner
