// Einsum's gather and scatter (../../einsum_plan.h says what they compute) as named kernels
// (registry.h): "einsum_gather" gives each kept element a lane group that sums the summed labels'
// elements; "einsum_scatter" zeroes dx, then writes each (kept, summed) pair's element once: on the
// diagonal of a repeated label every element of x belongs to exactly one pair, so no two threads
// write one place.
#pragma once

#include "launcher/runtime/cuda/device/hd.h"
#include "launcher/runtime/cuda/device/registry.h"

namespace tensoropt::cuda_kernels {

// Multi-indices over `rank` axes of `size`, each index stepping `stride` elements of x.
struct IndexSpace {
  int rank;
  int64_t size[TO_MAX_RANK];
  int64_t stride[TO_MAX_RANK];
};

TO_HD int64_t space_offset(const IndexSpace& s, int64_t i) {
  int64_t off = 0;
  for (int a = s.rank - 1; a >= 0; --a) {
    off += (i % s.size[a]) * s.stride[a];
    i /= s.size[a];
  }
  return off;
}

struct EinsumGatherArgs {
  const float* x;
  float* y;
  IndexSpace keep, sum;
  int64_t kept, summed;
};

template <class Exec>
int einsum_gather(Exec& ex, const EinsumGatherArgs& a) {
  const EinsumGatherArgs g = a;
  return ex.rows(g.kept, [=] TO_HD_LAMBDA(const Lanes& l, int64_t i) {
    const int64_t base = space_offset(g.keep, i);
    float s = 0;
    for (int64_t k = l.lane; k < g.summed; k += l.width) s += g.x[base + space_offset(g.sum, k)];
    s = l.sum(s);
    if (l.lane == 0) g.y[i] = s;
  });
}

struct EinsumScatterArgs {
  const float* d;
  float* dx;
  int64_t dx_count;
  IndexSpace keep, sum;
  int64_t kept, summed;
};

template <class Exec>
int einsum_scatter(Exec& ex, const EinsumScatterArgs& a) {
  const EinsumScatterArgs g = a;
  float* dx = g.dx;
  if (int s = ex.each(g.dx_count, [=] TO_HD_LAMBDA(int64_t i) { dx[i] = 0.0f; })) return s;
  return ex.each(g.kept * g.summed, [=] TO_HD_LAMBDA(int64_t p) {
    const int64_t i = p / g.summed, k = p % g.summed;
    g.dx[space_offset(g.keep, i) + space_offset(g.sum, k)] = g.d[i];
  });
}

template <class Exec>
void einsum_kernels(KernelList<Exec>& out) {
  out.push_back(kernel<Exec, EinsumGatherArgs, einsum_gather<Exec>>("einsum_gather"));
  out.push_back(kernel<Exec, EinsumScatterArgs, einsum_scatter<Exec>>("einsum_scatter"));
}

}  // namespace tensoropt::cuda_kernels
