// LayerNormalization (graph/ops/norm.cc, opset 17), kernel sources for any executor (hd.h).
// X [rows, n]: the normalised axes [axis, rank) flattened into contiguous rows of n; one warp per
// row. Formulas and accumulators as the CPU kernel (cpu/norm_layer.cc):
//   mean = sum(x) / n, var = sum((x - mean)^2) / n (both in double), inv = 1 / sqrt(var + eps)
//   y = (x - mean) * inv * scale + bias; scale and bias read at row r from p + r * stride
//   (stride 0: a parameter of the normalised axes' shape; n: one expanded to X's shape)
// Backward, g = dy * scale, xhat = (x - mean) * inv:
//   dx = inv * (g - mean(g) - xhat * mean(g * xhat)) + dMean / n - dInvStdDev * inv^2 * xhat / n
//   dscale[j] = sum_r dy * xhat, dbias[j] = sum_r dy: deterministic column sums, in double, in two
//   passes (partial sums over chunks of `chunk` rows, a thread per (chunk, column); then a thread
//   per column adds its chunks in order). norm_expand and layer_norm_dscale_terms serve the
//   parameters of other shapes (the host sums the terms to the parameter's shape).
// X, Scale, Bias, Y, the optional outputs and the output gradients float32 or bfloat16 as stored
// (norm_rows.h's FloatIn, FloatOut); the statistics kept for backward, the input gradients and
// the partial sums float32 (double).
#pragma once

#include <cmath>

#include "launcher/runtime/cuda/device/norm_rows.h"
#include "launcher/runtime/cuda/driver_abi.h"

namespace tensoropt::cuda_kernels {

struct LayerNormArgs {
  int64_t rows, n;
  float eps;
  FloatIn x;                              // [rows, n]
  FloatIn scale;                          // row r at scale + r * scale_stride
  FloatIn bias;                           // may be absent
  int64_t scale_stride, bias_stride;
  FloatOut y;                             // [rows, n]
  float* mean;                            // [rows] kept for backward
  float* inv;                             // [rows] kept for backward
  FloatOut mean_out;                      // [rows] the optional outputs (may be absent)
  FloatOut inv_out;
};

template <class Exec>
int layer_norm(Exec& ex, const LayerNormArgs& a) {
  const LayerNormArgs g = a;
  return ex.rows(g.rows, [=] TO_HD_LAMBDA(const Lanes& l, int64_t r) {
    const int64_t n = g.n;
    const FloatIn x = g.x.at(r * n);
    double s = 0;
    for (int64_t j = l.lane; j < n; j += l.width) s += x[j];
    const double mu = l.sum(s) / static_cast<double>(n);
    double v = 0;
    for (int64_t j = l.lane; j < n; j += l.width) v += (x[j] - mu) * (x[j] - mu);
    v = l.sum(v);
    const auto m = static_cast<float>(mu);
    const auto is = static_cast<float>(1.0 / sqrt(v / static_cast<double>(n) + g.eps));
    const FloatIn sc = g.scale.at(r * g.scale_stride);
    const FloatIn b = g.bias ? g.bias.at(r * g.bias_stride) : g.bias;
    const FloatOut y = g.y.at(r * n);
    for (int64_t j = l.lane; j < n; j += l.width) y.set(j, (x[j] - m) * is * sc[j] + (b ? b[j] : 0.0f));
    if (l.lane == 0) {
      g.mean[r] = m;
      g.inv[r] = is;
      if (g.mean_out) g.mean_out.set(r, m);
      if (g.inv_out) g.inv_out.set(r, is);
    }
  });
}

struct LayerNormBackwardArgs {
  int64_t rows, n;
  FloatIn x;            // [rows, n]
  FloatIn scale;        // as LayerNormArgs
  int64_t scale_stride;
  const float* mean;    // [rows]
  const float* inv;     // [rows]
  FloatIn dy;           // [rows, n], absent: no gradient reached Y
  FloatIn dmean;        // [rows] or absent
  FloatIn dinv;         // [rows] or absent
  float* dx;            // [rows, n]
};

template <class Exec>
int layer_norm_backward(Exec& ex, const LayerNormBackwardArgs& a) {
  const LayerNormBackwardArgs g = a;
  return ex.rows(g.rows, [=] TO_HD_LAMBDA(const Lanes& l, int64_t r) {
    const int64_t n = g.n;
    const auto nd = static_cast<double>(n);
    const FloatIn x = g.x.at(r * n);
    const FloatIn sc = g.scale.at(r * g.scale_stride);
    const float m = g.mean[r], is = g.inv[r];
    float* dx = g.dx + r * n;
    float ag = 0, bg = 0;
    if (g.dy) {
      const FloatIn dy = g.dy.at(r * n);
      double sg = 0, sgx = 0;
      for (int64_t j = l.lane; j < n; j += l.width) {
        const float gj = dy[j] * sc[j];
        sg += gj;
        sgx += gj * ((x[j] - m) * is);
      }
      ag = static_cast<float>(l.sum(sg) / nd);
      bg = static_cast<float>(l.sum(sgx) / nd);
    }
    const float dm = g.dmean ? static_cast<float>(g.dmean[r] / nd) : 0.0f;
    const float dv = g.dinv ? static_cast<float>(-g.dinv[r] * is * is / nd) : 0.0f;
    for (int64_t j = l.lane; j < n; j += l.width) {
      const float xh = (x[j] - m) * is;
      const float v = g.dy ? is * (g.dy[r * n + j] * sc[j] - ag - xh * bg) : 0.0f;
      dx[j] = v + (dm + dv * xh);
    }
  });
}

struct LayerNormParamArgs {
  int64_t rows, n, chunk;  // chunk: rows per partial sum
  FloatIn x;
  const float* mean;
  const float* inv;
  FloatIn dy;
  double* partial;         // [2, ceil(rows / chunk), n]: dscale's partial sums, then dbias's
  float* dscale;           // [n] or null
  float* dbias;            // [n] or null
};

template <class Exec>
int layer_norm_params(Exec& ex, const LayerNormParamArgs& a) {
  if (a.chunk <= 0) return ex.fail("layer_norm_params: chunk must be positive");
  const LayerNormParamArgs g = a;
  const int64_t chunks = (g.rows + g.chunk - 1) / g.chunk;
  double* ps = g.partial;
  double* pb = g.partial + chunks * g.n;
  if (int s = ex.each(chunks * g.n, [=] TO_HD_LAMBDA(int64_t i) {
        const int64_t c = i / g.n, j = i % g.n;
        const int64_t hi = (c + 1) * g.chunk < g.rows ? (c + 1) * g.chunk : g.rows;
        double sx = 0, sd = 0;
        for (int64_t r = c * g.chunk; r < hi; ++r) {
          const float d = g.dy[r * g.n + j];
          sx += d * ((g.x[r * g.n + j] - g.mean[r]) * g.inv[r]);
          sd += d;
        }
        ps[i] = sx;
        pb[i] = sd;
      }))
    return s;
  return ex.each(g.n, [=] TO_HD_LAMBDA(int64_t j) {
    double sx = 0, sd = 0;
    for (int64_t c = 0; c < chunks; ++c) {
      sx += ps[c * g.n + j];
      sd += pb[c * g.n + j];
    }
    if (g.dscale) g.dscale[j] = static_cast<float>(sx);
    if (g.dbias) g.dbias[j] = static_cast<float>(sd);
  });
}

// out[r, j] = dy * xhat: dscale's terms before they are summed to a parameter of another shape.
template <class Exec>
int layer_norm_dscale_terms(Exec& ex, const LayerNormParamArgs& a) {
  const LayerNormParamArgs g = a;
  return ex.each(g.rows * g.n, [=] TO_HD_LAMBDA(int64_t i) {
    const int64_t r = i / g.n;
    g.dscale[i] = g.dy[i] * ((g.x[i] - g.mean[r]) * g.inv[r]);
  });
}

// dst[i] = src[offset of output element i along shape.a_stride]: a parameter broadcast to X.
struct ExpandArgs {
  FloatIn src;
  float* dst;
  struct TensoroptBroadcast shape;
};

template <class Exec>
int norm_expand(Exec& ex, const ExpandArgs& a) {
  if (a.shape.rank > TO_MAX_RANK) return ex.fail("norm_expand: rank above TO_MAX_RANK");
  const ExpandArgs g = a;
  int64_t n = 1;
  for (int d = 0; d < g.shape.rank; ++d) n *= g.shape.shape[d];
  return ex.each(n, [=] TO_HD_LAMBDA(int64_t i) {
    int64_t k = i, off = 0;
    for (int d = g.shape.rank - 1; d >= 0; --d) {
      off += (k % g.shape.shape[d]) * g.shape.a_stride[d];
      k /= g.shape.shape[d];
    }
    g.dst[i] = g.src[off];
  });
}

}  // namespace tensoropt::cuda_kernels
