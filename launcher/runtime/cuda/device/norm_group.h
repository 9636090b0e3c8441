// GroupNormalization and InstanceNormalization (graph/ops/norm.cc), kernel sources for any
// executor (hd.h). X [B, C, S] (S: the spatial elements), G groups of per = C / G channels
// (InstanceNormalization: G = C); a row is one (sample, group): n = per * S contiguous elements,
// one warp per row. Formulas and accumulators as the CPU kernel (cpu/norm_group.cc):
//   mean, var (biased) per row in double, inv = 1 / sqrt(var + eps), xhat = (x - mean) * inv
//   y = xhat * scale[p] + bias[p], p the channel (or its group, for [G] parameters)
//   dx = inv * (g - mean(g) - xhat * mean(g * xhat)) over the row, g = dy * scale[p]
//   dscale[p] = sum of dy * xhat, dbias[p] = sum of dy over the channels of p, all samples and
//   all spatial elements: one warp per parameter (deterministic, no atomics).
// X, Scale, Bias, Y and dY float32 or bfloat16 as stored (norm_rows.h's FloatIn, FloatOut); the
// statistics kept for backward and the input gradients float32.
#pragma once

#include <cmath>

#include "launcher/runtime/cuda/device/norm_rows.h"
#include "launcher/runtime/cuda/driver_abi.h"

namespace tensoropt::cuda_kernels {

struct GroupNormArgs {
  int64_t batch, channels, groups, spatial;
  int per_group;         // scale and bias hold one value per group
  float eps;
  FloatIn x;             // [B, C, S]
  FloatIn scale;         // [C] or [G]
  FloatIn bias;          // [C] or [G]
  FloatOut y;            // [B, C, S]
  float* mean;           // [B * G]
  float* inv;            // [B * G]
  FloatIn dy;            // backward
  float* dx;             // backward, may be null
  float* dscale;         // backward, may be null
  float* dbias;          // backward, may be null
};

TO_HD int64_t group_per(const GroupNormArgs& g) { return g.channels / g.groups; }
// The parameter of element k of row r.
TO_HD int64_t group_param(const GroupNormArgs& g, int64_t r, int64_t k) {
  const int64_t ch = (r % g.groups) * group_per(g) + k / g.spatial;
  return g.per_group ? ch / group_per(g) : ch;
}

template <class Exec>
int group_norm(Exec& ex, const GroupNormArgs& a) {
  const GroupNormArgs g = a;
  return ex.rows(g.batch * g.groups, [=] TO_HD_LAMBDA(const Lanes& l, int64_t r) {
    const int64_t n = group_per(g) * g.spatial;
    const FloatIn x = g.x.at(r * n);
    double s = 0;
    for (int64_t k = l.lane; k < n; k += l.width) s += x[k];
    const double mu = l.sum(s) / static_cast<double>(n);
    double v = 0;
    for (int64_t k = l.lane; k < n; k += l.width) v += (x[k] - mu) * (x[k] - mu);
    const auto m = static_cast<float>(mu);
    const auto is = static_cast<float>(1.0 / sqrt(l.sum(v) / static_cast<double>(n) + g.eps));
    for (int64_t k = l.lane; k < n; k += l.width) {
      const int64_t p = group_param(g, r, k);
      g.y.set(r * n + k, (x[k] - m) * (g.scale[p] * is) + g.bias[p]);
    }
    if (l.lane == 0) {
      g.mean[r] = m;
      g.inv[r] = is;
    }
  });
}

template <class Exec>
int group_norm_backward(Exec& ex, const GroupNormArgs& a) {
  const GroupNormArgs g = a;
  const int64_t per = group_per(g), S = g.spatial;
  if (g.dx) {
    if (int s = ex.rows(g.batch * g.groups, [=] TO_HD_LAMBDA(const Lanes& l, int64_t r) {
          const int64_t n = per * S;
          const FloatIn x = g.x.at(r * n), dy = g.dy.at(r * n);
          const float m = g.mean[r], is = g.inv[r];
          double sg = 0, sgx = 0;
          for (int64_t k = l.lane; k < n; k += l.width) {
            const double gk = static_cast<double>(dy[k]) * g.scale[group_param(g, r, k)];
            sg += gk;
            sgx += gk * ((x[k] - m) * is);
          }
          const auto ag = static_cast<float>(l.sum(sg) / static_cast<double>(n));
          const auto bg = static_cast<float>(l.sum(sgx) / static_cast<double>(n));
          for (int64_t k = l.lane; k < n; k += l.width) {
            const float xh = (x[k] - m) * is;
            g.dx[r * n + k] = is * (dy[k] * g.scale[group_param(g, r, k)] - ag - xh * bg);
          }
        }))
      return s;
  }
  if (!g.dscale && !g.dbias) return TO_CUDA_OK;
  // Parameter p covers `cover` channels: elements k = ((cc * B) + b) * S + s, spatial innermost.
  const int64_t cover = g.per_group ? per : 1;
  const int64_t params = g.per_group ? g.groups : g.channels;
  return ex.rows(params, [=] TO_HD_LAMBDA(const Lanes& l, int64_t p) {
    const int64_t total = cover * g.batch * S;
    double sx = 0, sd = 0;
    for (int64_t k = l.lane; k < total; k += l.width) {
      const int64_t s = k % S, rest = k / S, b = rest % g.batch, ch = p * cover + rest / g.batch;
      const int64_t off = (b * g.channels + ch) * S + s, r = b * g.groups + ch / per;
      const float d = g.dy[off];
      sx += static_cast<double>(d) * ((g.x[off] - g.mean[r]) * g.inv[r]);
      sd += d;
    }
    sx = l.sum(sx);
    sd = l.sum(sd);
    if (l.lane == 0) {
      if (g.dscale) g.dscale[p] = static_cast<float>(sx);
      if (g.dbias) g.dbias[p] = static_cast<float>(sd);
    }
  });
}

}  // namespace tensoropt::cuda_kernels
