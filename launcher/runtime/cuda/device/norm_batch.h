// BatchNormalization (graph/ops/norm.cc), kernel sources for any executor (hd.h). X [B, C, S]:
// statistics per channel over its m = B * S elements. Formulas as the CPU kernel
// (cpu/norm_batch.cc), which says which mode and outputs a node has:
//   batch:   mean = sum(x) / m, var = sum((x - mean)^2) / m in double, inv = 1 / sqrt(var + eps)
//            running outputs momentum * input + (1 - momentum) * (mean, var * m / (m - 1))
//   running: mean = input_mean, inv = 1 / sqrt(input_var + eps); outputs pass them through
//   y = (x - mean) * (scale * inv) + bias
//   dx = scale * inv * (dy - sum(dy) / m - xhat * sum(dy * xhat) / m)  (batch; running: no sums)
//   dscale = sum(dy * xhat), dbias = sum(dy)
// Per-channel sums run in chunks of `chunk` elements, a warp per (channel, chunk), so a channel
// of a large batch spreads over the GPU (ResNet's 64 channels of 800K elements); a thread per
// channel then combines its chunks in order. The batch variance combines each chunk's sum of
// squared deviations from its own mean (Chan et al.), exact up to rounding. No atomics.
#pragma once

#include <cmath>

#include "launcher/runtime/cuda/device/hd.h"
#include "launcher/runtime/cuda/driver_abi.h"

namespace tensoropt::cuda_kernels {

struct BatchNormArgs {
  int64_t batch, channels, spatial, chunk;
  float eps, momentum;
  int batch_stats;             // 1: statistics of this batch; 0: the running statistics
  const float* x;              // [B, C, S]
  const float* scale;          // [C]
  const float* bias;           // [C]
  const float* input_mean;     // [C] running mean (forward), or the mean used (backward)
  const float* input_var;      // [C] running variance (forward); backward: a one-output node's, else null
  float* mean;                 // [C] the mean used (forward writes)
  float* inv;                  // [C] the inverse standard deviation used (forward writes, backward reads)
  float* outputs[4];           // running_mean, running_var, saved_mean, saved_var; each may be null
  float* y;                    // [B, C, S] forward
  const float* dy;             // backward
  float* dx;                   // backward, may be null
  float* dscale;               // backward, may be null
  float* dbias;                // backward, may be null
  double* partial;             // [C * chunks * 2]
};

TO_HD int64_t bn_chunks(const BatchNormArgs& g) { return (g.batch * g.spatial + g.chunk - 1) / g.chunk; }
// X offset of element k of channel ch (k over the m = B * S elements, spatial innermost).
TO_HD int64_t bn_at(const BatchNormArgs& g, int64_t ch, int64_t k) {
  return ((k / g.spatial) * g.channels + ch) * g.spatial + k % g.spatial;
}

template <class Exec>
int batch_norm(Exec& ex, const BatchNormArgs& a) {
  if (a.chunk <= 0) return ex.fail("batch_norm: chunk must be positive");
  const BatchNormArgs g = a;
  const int64_t m = g.batch * g.spatial, chunks = bn_chunks(g);
  if (g.batch_stats) {
    if (int s = ex.rows(g.channels * chunks, [=] TO_HD_LAMBDA(const Lanes& l, int64_t t) {
          const int64_t ch = t / chunks, lo = (t % chunks) * g.chunk, hi = lo + g.chunk < m ? lo + g.chunk : m;
          double s1 = 0;
          for (int64_t k = lo + l.lane; k < hi; k += l.width) s1 += g.x[bn_at(g, ch, k)];
          s1 = l.sum(s1);
          const double cm = s1 / static_cast<double>(hi - lo);
          double q = 0;
          for (int64_t k = lo + l.lane; k < hi; k += l.width) {
            const double d = g.x[bn_at(g, ch, k)] - cm;
            q += d * d;
          }
          q = l.sum(q);
          if (l.lane == 0) {
            g.partial[2 * t] = s1;
            g.partial[2 * t + 1] = q;
          }
        }))
      return s;
  }
  if (int s = ex.each(g.channels, [=] TO_HD_LAMBDA(int64_t ch) {
        float mu = g.input_mean[ch], var = g.input_var[ch];
        if (g.batch_stats) {
          double total = 0;
          for (int64_t c = 0; c < chunks; ++c) total += g.partial[2 * (ch * chunks + c)];
          const double dm = total / static_cast<double>(m);
          double q = 0;
          for (int64_t c = 0; c < chunks; ++c) {
            const int64_t lo = c * g.chunk, len = (lo + g.chunk < m ? lo + g.chunk : m) - lo;
            const double dev = g.partial[2 * (ch * chunks + c)] / static_cast<double>(len) - dm;
            q += g.partial[2 * (ch * chunks + c) + 1] + static_cast<double>(len) * dev * dev;
          }
          mu = static_cast<float>(dm);
          var = static_cast<float>(q / static_cast<double>(m));
          const auto unbiased = static_cast<float>(q / static_cast<double>(m - 1));
          if (g.outputs[0]) g.outputs[0][ch] = g.momentum * g.input_mean[ch] + (1 - g.momentum) * mu;
          if (g.outputs[1]) g.outputs[1][ch] = g.momentum * g.input_var[ch] + (1 - g.momentum) * unbiased;
        } else {
          if (g.outputs[0]) g.outputs[0][ch] = mu;
          if (g.outputs[1]) g.outputs[1][ch] = var;
        }
        if (g.outputs[2]) g.outputs[2][ch] = mu;
        if (g.outputs[3]) g.outputs[3][ch] = var;
        g.mean[ch] = mu;
        g.inv[ch] = static_cast<float>(1.0 / sqrt(static_cast<double>(var) + g.eps));
      }))
    return s;
  return ex.each(g.batch * g.channels * g.spatial, [=] TO_HD_LAMBDA(int64_t i) {
    const int64_t ch = (i / g.spatial) % g.channels;
    g.y[i] = (g.x[i] - g.mean[ch]) * (g.scale[ch] * g.inv[ch]) + g.bias[ch];
  });
}

// The inverse standard deviation the forward used: kept (a training node), or from the running
// variance (input_var non-null: a one-output node keeps the running statistics only).
TO_HD float bn_inv(const BatchNormArgs& g, int64_t ch) {
  return g.input_var ? static_cast<float>(1.0 / sqrt(static_cast<double>(g.input_var[ch]) + g.eps)) : g.inv[ch];
}

// Reads the mean the forward used from input_mean. The per-channel totals of dy and dy * xhat
// land in each channel's first partial slots, which dx then reads.
template <class Exec>
int batch_norm_backward(Exec& ex, const BatchNormArgs& a) {
  if (a.chunk <= 0) return ex.fail("batch_norm_backward: chunk must be positive");
  const BatchNormArgs g = a;
  const int64_t m = g.batch * g.spatial, chunks = bn_chunks(g);
  if (int s = ex.rows(g.channels * chunks, [=] TO_HD_LAMBDA(const Lanes& l, int64_t t) {
        const int64_t ch = t / chunks, lo = (t % chunks) * g.chunk, hi = lo + g.chunk < m ? lo + g.chunk : m;
        const float mu = g.input_mean[ch], is = bn_inv(g, ch);
        double sd = 0, sdx = 0;
        for (int64_t k = lo + l.lane; k < hi; k += l.width) {
          const int64_t at = bn_at(g, ch, k);
          sd += g.dy[at];
          sdx += static_cast<double>(g.dy[at]) * ((g.x[at] - mu) * is);
        }
        sd = l.sum(sd);
        sdx = l.sum(sdx);
        if (l.lane == 0) {
          g.partial[2 * t] = sd;
          g.partial[2 * t + 1] = sdx;
        }
      }))
    return s;
  if (int s = ex.each(g.channels, [=] TO_HD_LAMBDA(int64_t ch) {
        double sd = 0, sdx = 0;
        for (int64_t c = 0; c < chunks; ++c) {
          sd += g.partial[2 * (ch * chunks + c)];
          sdx += g.partial[2 * (ch * chunks + c) + 1];
        }
        if (g.dscale) g.dscale[ch] = static_cast<float>(sdx);
        if (g.dbias) g.dbias[ch] = static_cast<float>(sd);
        g.partial[2 * ch * chunks] = sd;
        g.partial[2 * ch * chunks + 1] = sdx;
      }))
    return s;
  if (!g.dx) return TO_CUDA_OK;
  const auto md = static_cast<double>(m);
  return ex.each(g.batch * g.channels * g.spatial, [=] TO_HD_LAMBDA(int64_t i) {
    const int64_t ch = (i / g.spatial) % g.channels;
    const float mu = g.input_mean[ch], is = bn_inv(g, ch);
    const float k1 = g.scale[ch] * is;
    const float am = g.batch_stats ? static_cast<float>(g.partial[2 * ch * chunks] / md) : 0.0f;
    const float q = g.batch_stats ? static_cast<float>(g.partial[2 * ch * chunks + 1] / md) : 0.0f;
    g.dx[i] = k1 * (g.dy[i] - am - (g.x[i] - mu) * is * q);
  });
}

}  // namespace tensoropt::cuda_kernels
