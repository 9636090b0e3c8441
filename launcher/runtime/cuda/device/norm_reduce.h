// Reductions (graph/ops/norm.cc): ReduceSum, ReduceMean, ReduceProd, ReduceMax, ReduceMin,
// ReduceL1, ReduceL2, ReduceSumSquare, ReduceLogSumExp, kernel sources for any executor (hd.h).
// Formulas as the CPU kernels (cpu/norm_reduce.cc), sums and products in double:
//   Sum s = sum x (dx = dy)   Mean s / N (dx = dy / N)   SumSquare sum x^2 (dx = 2 x dy)
//   L1 sum |x| (dx = sign(x) dy)   L2 sqrt(sum x^2) (dx = x / y dy, 0 where y = 0)
//   LogSumExp m + log(sum exp(x - m)), m = max x (dx = exp(x - y) dy)
//   Max, Min y (dx = dy / t where x = y, t ties)   Prod (dx = product of the others * dy)
//
// Shape: X's axes with size-1 axes dropped and neighbours of the same kind (reduced or kept)
// merged, at most TO_MAX_RANK. Output o reduces the group of R elements sharing its kept
// coordinates. Each group is cut into chunks of `chunk` elements; pass 1 gives each (group,
// chunk) a partial (a warp when the last axis is reduced, so lanes read along memory; a thread
// otherwise, so neighbouring threads read neighbouring groups), pass 2 a thread per group that
// combines its chunks in order. No atomics: the result depends on the shapes alone.
// The backward of Max, Min and Prod first runs the same two passes for per-group statistics
// (ties; the product of the non-zero elements and the count of zeros), then one thread per X
// element writes dx.
// X, Y and dY float32 or bfloat16 as stored (norm_rows.h's FloatIn, FloatOut); Y in its storage
// dtype, dx float32.
#pragma once

#include <cmath>

#include "launcher/runtime/cuda/device/hd.h"
#include "launcher/runtime/cuda/device/norm_rows.h"
#include "launcher/runtime/cuda/driver_abi.h"

namespace tensoropt::cuda_kernels {

enum {
  NORM_REDUCE_SUM, NORM_REDUCE_MEAN, NORM_REDUCE_PROD, NORM_REDUCE_MAX, NORM_REDUCE_MIN, NORM_REDUCE_L1, NORM_REDUCE_L2,
  NORM_REDUCE_SUM_SQUARE, NORM_REDUCE_LOG_SUM_EXP,
  NORM_REDUCE_TIES,        // backward statistics of Max and Min: count of x == y[o]
  NORM_REDUCE_PROD_STATS,  // backward statistics of Prod: product of the non-zero x, count of zeros
  NORM_REDUCE_COUNT
};

struct ReduceShape {
  int rank;                     // merged axes, <= TO_MAX_RANK
  int64_t dim[TO_MAX_RANK];
  int reduced[TO_MAX_RANK];     // 1: the axis is reduced
};

struct ReduceArgs {
  int op;                       // NORM_REDUCE_*
  ReduceShape shape;
  int64_t count, size, chunk;   // groups, elements per group (R), elements per chunk
  double divisor;               // Mean: what the sum divides by (the whole count when sharded)
  FloatIn x;
  FloatIn y;                    // Max, Min, L2, LogSumExp backward; the TIES pass
  FloatIn dy;                   // backward
  FloatOut out;                 // forward: y [count]; backward: dx (X's shape)
  double* partial;              // [count * chunks * 2]
  double* stats;                // [count * 2]: the backward statistics (TIES, PROD_STATS)
};

// X element offsets of a group's start (o over the kept axes) and of its j-th element.
TO_HD int64_t reduce_offset(const ReduceShape& s, int64_t k, int want_reduced) {
  int64_t off = 0, stride = 1;
  for (int d = s.rank - 1; d >= 0; --d) {
    if (s.reduced[d] == want_reduced) {
      off += (k % s.dim[d]) * stride;
      k /= s.dim[d];
    }
    stride *= s.dim[d];
  }
  return off;
}

// The group of X element i.
TO_HD int64_t reduce_group_of(const ReduceShape& s, int64_t i) {
  int64_t o = 0, stride = 1;
  for (int d = s.rank - 1; d >= 0; --d) {
    if (!s.reduced[d]) {
      o += (i % s.dim[d]) * stride;
      stride *= s.dim[d];
    }
    i /= s.dim[d];
  }
  return o;
}

TO_HD bool reduce_last_axis_reduced(const ReduceShape& s) { return s.rank > 0 && s.reduced[s.rank - 1]; }

// Pass 1: the partial of (group o, chunk c) into p[0], p[1].
TO_HD void reduce_chunk(const Lanes& l, const ReduceArgs& g, int64_t o, int64_t c, double* p) {
  const FloatIn x = g.x.at(reduce_offset(g.shape, o, 0));
  const int64_t lo = c * g.chunk, hi = lo + g.chunk < g.size ? lo + g.chunk : g.size;
  // With one reduced axis after merging (the usual case) element j sits at j * stride.
  int reduced_axes = 0;
  int64_t stride = 1, one_stride = 0;
  for (int d = g.shape.rank - 1; d >= 0; --d) {
    if (g.shape.reduced[d]) {
      ++reduced_axes;
      one_stride = stride;
    }
    stride *= g.shape.dim[d];
  }
  auto at = [&](int64_t j) { return reduced_axes <= 1 ? x[j * one_stride] : x[reduce_offset(g.shape, j, 1)]; };
  const int op = g.op;
  double a = op == NORM_REDUCE_PROD || op == NORM_REDUCE_PROD_STATS ? 1.0 : 0.0, b = 0;
  if (op == NORM_REDUCE_MAX || op == NORM_REDUCE_MIN || op == NORM_REDUCE_LOG_SUM_EXP) {
    float m = op == NORM_REDUCE_MIN ? INFINITY : -INFINITY;
    for (int64_t j = lo + l.lane; j < hi; j += l.width) m = op == NORM_REDUCE_MIN ? fminf(m, at(j)) : fmaxf(m, at(j));
    m = op == NORM_REDUCE_MIN ? lanes_min(l, m) : l.max(m);
    a = m;
    if (op == NORM_REDUCE_LOG_SUM_EXP && !infinite(m)) {
      for (int64_t j = lo + l.lane; j < hi; j += l.width) b += exp(static_cast<double>(at(j)) - m);
      b = l.sum(b);
    }
  } else if (op == NORM_REDUCE_PROD || op == NORM_REDUCE_PROD_STATS) {
    for (int64_t j = lo + l.lane; j < hi; j += l.width) {
      const float v = at(j);
      if (op == NORM_REDUCE_PROD || v != 0.0f) a *= v;
      else b += 1;
    }
    a = lanes_prod(l, a);
    b = l.sum(b);
  } else if (op == NORM_REDUCE_TIES) {
    const float y = g.y[o];
    for (int64_t j = lo + l.lane; j < hi; j += l.width) a += at(j) == y ? 1.0 : 0.0;
    a = l.sum(a);
  } else {
    for (int64_t j = lo + l.lane; j < hi; j += l.width) {
      const double v = at(j);
      a += op == NORM_REDUCE_SUM_SQUARE || op == NORM_REDUCE_L2 ? v * v : op == NORM_REDUCE_L1 ? fabs(v) : v;
    }
    a = l.sum(a);
  }
  p[0] = a;
  p[1] = b;
}

// Pass 2: group o's chunks combined in order; the value (forward) or the statistics.
TO_HD void reduce_finish(const ReduceArgs& g, int64_t o, int64_t chunks, bool by_group) {
  auto part = [&](int64_t c) { return g.partial + 2 * (by_group ? o * chunks + c : c * g.count + o); };
  const int op = g.op;
  double a = part(0)[0], b = part(0)[1];
  if (op == NORM_REDUCE_LOG_SUM_EXP) {
    double m = a;
    for (int64_t c = 1; c < chunks; ++c) m = fmax(m, part(c)[0]);
    if (infinite(m)) {
      a = m;  // all -inf: -inf; any +inf: +inf
    } else {
      double s = 0;
      for (int64_t c = 0; c < chunks; ++c) {
        if (!infinite(part(c)[0])) s += part(c)[1] * exp(part(c)[0] - m);
      }
      a = m + log(s);
    }
  } else {
    for (int64_t c = 1; c < chunks; ++c) {
      const double* p = part(c);
      if (op == NORM_REDUCE_MAX) a = fmax(a, p[0]);
      else if (op == NORM_REDUCE_MIN) a = fmin(a, p[0]);
      else if (op == NORM_REDUCE_PROD || op == NORM_REDUCE_PROD_STATS) a *= p[0];
      else a += p[0];
      b += p[1];
    }
    if (op == NORM_REDUCE_MEAN) a /= g.divisor;
    if (op == NORM_REDUCE_L2) a = sqrt(a);
  }
  if (op == NORM_REDUCE_TIES || op == NORM_REDUCE_PROD_STATS) {
    g.stats[2 * o] = a;
    g.stats[2 * o + 1] = b;
  } else {
    g.out.set(o, static_cast<float>(a));
  }
}

// Forward (op < TIES) or the backward statistics (TIES, PROD_STATS).
template <class Exec>
int reduce(Exec& ex, const ReduceArgs& a) {
  if (a.op < 0 || a.op >= NORM_REDUCE_COUNT || a.shape.rank > TO_MAX_RANK || a.chunk <= 0) return ex.fail("reduce: bad arguments");
  const ReduceArgs g = a;
  const int64_t chunks = g.size > 0 ? (g.size + g.chunk - 1) / g.chunk : 1;
  const bool by_group = reduce_last_axis_reduced(g.shape);
  int s = by_group ? ex.rows(g.count * chunks,
                             [=] TO_HD_LAMBDA(const Lanes& l, int64_t t) {
                               double p[2];
                               reduce_chunk(l, g, t / chunks, t % chunks, p);
                               if (l.lane == 0) {
                                 g.partial[2 * t] = p[0];
                                 g.partial[2 * t + 1] = p[1];
                               }
                             })
                   : ex.each(g.count * chunks, [=] TO_HD_LAMBDA(int64_t t) {
                       reduce_chunk(Lanes{}, g, t % g.count, t / g.count, g.partial + 2 * t);
                     });
  if (s) return s;
  return ex.each(g.count, [=] TO_HD_LAMBDA(int64_t o) { reduce_finish(g, o, chunks, by_group); });
}

template <class Exec>
int reduce_backward(Exec& ex, const ReduceArgs& a) {
  if (a.op < 0 || a.op >= NORM_REDUCE_TIES || a.shape.rank > TO_MAX_RANK) return ex.fail("reduce_backward: bad arguments");
  const ReduceArgs g = a;
  int64_t n = 1;
  for (int d = 0; d < g.shape.rank; ++d) n *= g.shape.dim[d];
  return ex.each(n, [=] TO_HD_LAMBDA(int64_t i) {
    const int64_t o = reduce_group_of(g.shape, i);
    const float dy = g.dy[o];
    float d;
    switch (g.op) {
      case NORM_REDUCE_MEAN: d = dy / static_cast<float>(g.divisor); break;
      case NORM_REDUCE_SUM_SQUARE: d = 2 * g.x[i] * dy; break;
      case NORM_REDUCE_L1: d = static_cast<float>((g.x[i] > 0) - (g.x[i] < 0)) * dy; break;
      case NORM_REDUCE_L2: d = g.y[o] == 0 ? 0.0f : g.x[i] / g.y[o] * dy; break;
      case NORM_REDUCE_LOG_SUM_EXP: d = expf(g.x[i] - g.y[o]) * dy; break;
      case NORM_REDUCE_MAX: case NORM_REDUCE_MIN: {
        const double ties = g.stats[2 * o];
        d = g.x[i] == g.y[o] ? dy / static_cast<float>(ties > 1 ? ties : 1) : 0.0f;
        break;
      }
      case NORM_REDUCE_PROD: {
        const double rest = g.stats[2 * o], zeros = g.stats[2 * o + 1];
        const float v = g.x[i];
        const double others = zeros == 0 ? rest / v : zeros == 1 && v == 0.0f ? rest : 0.0;
        d = static_cast<float>(others * dy);
        break;
      }
      default: d = dy;  // Sum
    }
    g.out.set(i, d);
  });
}

}  // namespace tensoropt::cuda_kernels
