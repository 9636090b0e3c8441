// Normalisations along one axis (graph/ops/norm.cc), kernel sources for any executor (hd.h):
// Softmax, LogSoftmax and LpNormalization, forward and backward, on X viewed as rows along the
// axis (norm_rows.h's AxisRows; any axis). Formulas and accumulators as the CPU kernels
// (cpu/norm_axis.cc):
//   softmax:      y = exp(x - max) / sum(exp(x - max))      dx = y * (dy - sum(dy * y))
//   log_softmax:  y = x - max - log(sum(exp(x - max)))      dx = dy - exp(y) * sum(dy)
//     (sums in float, as PyTorch; both read Y alone, as the catalogue saves)
//   lp_norm:      y = x / norm, norm = sum |x| (p = 1) or sqrt(sum x^2) (p = 2), in double
//                 dx = (dy - s * sum(dy * y)) / norm, s = sign(x) (p = 1) or y (p = 2)
// X, Y and dY float32 or bfloat16 as stored (norm_rows.h's FloatIn, FloatOut); dx float32.
#pragma once

#include <cmath>

#include "launcher/runtime/cuda/device/norm_rows.h"

namespace tensoropt::cuda_kernels {

struct AxisArgs {
  AxisRows rows;
  FloatIn x;    // forward input (lp backward reads it too)
  FloatIn y;    // forward output (backward)
  FloatIn dy;   // backward
  FloatOut out; // y (forward) or dx (backward)
  int p;            // LpNormalization's order, 1 or 2
};

template <class Exec>
int softmax(Exec& ex, const AxisArgs& a) {
  const AxisArgs g = a;
  return axis_rows(ex, g.rows, [=] TO_HD_LAMBDA(const Lanes& l, int64_t r) {
    const int64_t s = g.rows.start(r), n = g.rows.n, st = g.rows.inner;
    const FloatIn x = g.x.at(s);
    const FloatOut y = g.out.at(s);
    float m = -INFINITY;
    for (int64_t k = l.lane; k < n; k += l.width) m = fmaxf(m, x[k * st]);
    m = l.max(m);
    float sum = 0;
    for (int64_t k = l.lane; k < n; k += l.width) sum += expf(x[k * st] - m);
    const float inv = 1.0f / l.sum(sum);
    for (int64_t k = l.lane; k < n; k += l.width) y.set(k * st, expf(x[k * st] - m) * inv);
  });
}

template <class Exec>
int softmax_backward(Exec& ex, const AxisArgs& a) {
  const AxisArgs g = a;
  return axis_rows(ex, g.rows, [=] TO_HD_LAMBDA(const Lanes& l, int64_t r) {
    const int64_t s = g.rows.start(r), n = g.rows.n, st = g.rows.inner;
    const FloatIn y = g.y.at(s), dy = g.dy.at(s);
    float dot = 0;
    for (int64_t k = l.lane; k < n; k += l.width) dot += dy[k * st] * y[k * st];
    dot = l.sum(dot);
    for (int64_t k = l.lane; k < n; k += l.width) g.out.set(s + k * st, y[k * st] * (dy[k * st] - dot));
  });
}

template <class Exec>
int log_softmax(Exec& ex, const AxisArgs& a) {
  const AxisArgs g = a;
  return axis_rows(ex, g.rows, [=] TO_HD_LAMBDA(const Lanes& l, int64_t r) {
    const int64_t s = g.rows.start(r), n = g.rows.n, st = g.rows.inner;
    const FloatIn x = g.x.at(s);
    float m = -INFINITY;
    for (int64_t k = l.lane; k < n; k += l.width) m = fmaxf(m, x[k * st]);
    m = l.max(m);
    float sum = 0;
    for (int64_t k = l.lane; k < n; k += l.width) sum += expf(x[k * st] - m);
    const float shift = logf(l.sum(sum));
    for (int64_t k = l.lane; k < n; k += l.width) g.out.set(s + k * st, (x[k * st] - m) - shift);
  });
}

template <class Exec>
int log_softmax_backward(Exec& ex, const AxisArgs& a) {
  const AxisArgs g = a;
  return axis_rows(ex, g.rows, [=] TO_HD_LAMBDA(const Lanes& l, int64_t r) {
    const int64_t s = g.rows.start(r), n = g.rows.n, st = g.rows.inner;
    const FloatIn y = g.y.at(s), dy = g.dy.at(s);
    float sum = 0;
    for (int64_t k = l.lane; k < n; k += l.width) sum += dy[k * st];
    sum = l.sum(sum);
    for (int64_t k = l.lane; k < n; k += l.width) g.out.set(s + k * st, dy[k * st] - expf(y[k * st]) * sum);
  });
}

TO_HD double lp_norm_of(const Lanes& l, const FloatIn& x, int64_t n, int64_t st, int p) {
  double acc = 0;
  for (int64_t k = l.lane; k < n; k += l.width) {
    const double v = x[k * st];
    acc += p == 1 ? fabs(v) : v * v;
  }
  acc = l.sum(acc);
  return p == 1 ? acc : sqrt(acc);
}

template <class Exec>
int lp_norm(Exec& ex, const AxisArgs& a) {
  if (a.p != 1 && a.p != 2) return ex.fail("lp_norm: p must be 1 or 2");
  const AxisArgs g = a;
  return axis_rows(ex, g.rows, [=] TO_HD_LAMBDA(const Lanes& l, int64_t r) {
    const int64_t s = g.rows.start(r), n = g.rows.n, st = g.rows.inner;
    const FloatIn x = g.x.at(s);
    const auto inv = static_cast<float>(1.0 / lp_norm_of(l, x, n, st, g.p));
    for (int64_t k = l.lane; k < n; k += l.width) g.out.set(s + k * st, x[k * st] * inv);
  });
}

template <class Exec>
int lp_norm_backward(Exec& ex, const AxisArgs& a) {
  if (a.p != 1 && a.p != 2) return ex.fail("lp_norm_backward: p must be 1 or 2");
  const AxisArgs g = a;
  return axis_rows(ex, g.rows, [=] TO_HD_LAMBDA(const Lanes& l, int64_t r) {
    const int64_t s = g.rows.start(r), n = g.rows.n, st = g.rows.inner;
    const FloatIn x = g.x.at(s), y = g.y.at(s), dy = g.dy.at(s);
    double dot = 0;
    for (int64_t k = l.lane; k < n; k += l.width) dot += static_cast<double>(dy[k * st]) * y[k * st];
    const auto d = static_cast<float>(l.sum(dot));
    const auto inv = static_cast<float>(1.0 / lp_norm_of(l, x, n, st, g.p));
    for (int64_t k = l.lane; k < n; k += l.width) {
      const float v = x[k * st];
      const float sgn = g.p == 2 ? y[k * st] : static_cast<float>((v > 0) - (v < 0));
      g.out.set(s + k * st, (dy[k * st] - sgn * d) * inv);
    }
  });
}

}  // namespace tensoropt::cuda_kernels
