// GroupNormalization and InstanceNormalization (graph/ops/norm.cc): X [N, C, S...] with S the
// spatial elements, G groups of C / G channels (InstanceNormalization: G = C). A row is one
// (sample, group): n = (C / G) * S contiguous elements.
//   mean, inv = 1 / sqrt(var + epsilon) per row (biased variance), xhat = (x - mean) * inv
//   y = xhat * scale[c] + bias[c]   (scale and bias per channel [C]; GroupNormalization's opset-18
//                                    form [G], per group, is taken too)
// Backward, with g = dy * scale[c]:
//   dx = inv * (g - mean(g) - xhat * mean(g * xhat)) over the row
//   dscale[c] = sum over N and S of dy * xhat, dbias[c] = sum of dy (per group for [G] params)
// Kept for backward: X (the catalogue saves it), mean and inv per row (the extras it charges),
// and Scale (keep_input).
#include <algorithm>
#include <cmath>
#include <string>

#include "launcher/runtime/cpu/norm_parts.h"
#include "launcher/runtime/cpu/util.h"

namespace tensoropt::runtime::cpu {
namespace {

struct GnDims {
  int64_t batch, channels, groups, spatial;
  bool per_group;  // scale and bias hold one value per group
  float eps;
  int64_t per() const { return channels / groups; }      // channels per group
  int64_t n() const { return per() * spatial; }           // elements per row
  int64_t param(int64_t ch) const { return per_group ? ch / per() : ch; }
};

GnDims gn_dims(const Node& node, const Shape& x, const Shape& scale, const Shape& bias) {
  GnDims d{};
  d.batch = x[0];
  d.channels = x[1];
  d.spatial = numel(x) / std::max<int64_t>(1, d.batch * d.channels);
  bool instance = node.op_type == "InstanceNormalization";
  d.groups = instance ? d.channels : node.attr_int("num_groups", 0);
  if (node.attr_int("stash_type", 1) != 1) kernel_error(node, "stash_type other than 1 (float32 statistics)");
  int64_t ns = numel(scale), nb = numel(bias);
  d.per_group = !instance && ns == d.groups && ns != d.channels;
  int64_t want = d.per_group ? d.groups : d.channels;
  if (ns != want || nb != want) {
    kernel_error(node, "scale " + shape_str(scale) + " and bias " + shape_str(bias) + " must hold " + std::to_string(d.channels) +
                       " values (one per channel)" + (instance ? "" : " or " + std::to_string(d.groups) + " (one per group)"));
  }
  d.eps = static_cast<float>(node.attr_float("epsilon", 1e-5));
  return d;
}

void group_norm_forward(const OpCall& c) {
  const Array& x = *c.in[0];
  for (int i = 0; i < 3; ++i) require_f32(c.node, *c.in[static_cast<size_t>(i)], "input");
  GnDims d = gn_dims(c.node, x.shape(), c.in[1]->shape(), c.in[2]->shape());
  const int64_t rows = d.batch * d.groups, n = d.n();
  Array mean(DType::F32, {rows}, *c.ctx.allocator, MemoryKind::Activations);
  Array inv(DType::F32, {rows}, *c.ctx.allocator, MemoryKind::Activations);
  const float *px = x.data<float>(), *ps = c.in[1]->data<float>(), *pb = c.in[2]->data<float>();
  float *py = c.out[0]->data<float>(), *pm = mean.data<float>(), *pi = inv.data<float>();
  parallel_for(rows, row_grain(n), c.ctx.threads, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const float* xr = px + r * n;
      float* yr = py + r * n;
      double mu = row_sum(xr, n, 1) / static_cast<double>(n), var = 0;
      for (int64_t j = 0; j < n; ++j) var += (xr[j] - mu) * (xr[j] - mu);
      auto m = static_cast<float>(mu);
      auto is = static_cast<float>(1.0 / std::sqrt(var / static_cast<double>(n) + d.eps));
      pm[r] = m;
      pi[r] = is;
      for (int64_t cc = 0; cc < d.per(); ++cc) {
        int64_t p = d.param((r % d.groups) * d.per() + cc);
        float sc = ps[p] * is, sh = pb[p];
        for (int64_t s = cc * d.spatial; s < (cc + 1) * d.spatial; ++s) yr[s] = (xr[s] - m) * sc + sh;
      }
    }
  });
  c.state.saved = {mean, inv, keep_input(c, 1)};
}

void group_norm_backward(const GradCall& c) {
  const Shape& xs = c.in_shapes[0];
  const Array& scale = c.state.saved[2];
  GnDims d = gn_dims(c.node, xs, scale.shape(), c.in_shapes[2]);
  const int64_t rows = d.batch * d.groups, n = d.n(), S = d.spatial;
  const float *px = c.in[0]->data<float>(), *pdy = c.dout[0]->data<float>(), *ps = scale.data<float>();
  const float *pm = c.state.saved[0].data<float>(), *pi = c.state.saved[1].data<float>();
  if (Array* dx = c.din[0]) {
    float* pdx = dx->data<float>();
    parallel_for(rows, row_grain(n), c.ctx.threads, [&](int64_t lo, int64_t hi) {
      for (int64_t r = lo; r < hi; ++r) {
        const float *xr = px + r * n, *dyr = pdy + r * n;
        double sg = 0, sgx = 0;
        for (int64_t cc = 0; cc < d.per(); ++cc) {
          double sc = ps[d.param((r % d.groups) * d.per() + cc)];
          for (int64_t s = cc * S; s < (cc + 1) * S; ++s) {
            double g = dyr[s] * sc;
            sg += g;
            sgx += g * (xr[s] - pm[r]) * pi[r];
          }
        }
        auto a = static_cast<float>(sg / static_cast<double>(n)), b = static_cast<float>(sgx / static_cast<double>(n));
        for (int64_t cc = 0; cc < d.per(); ++cc) {
          float sc = ps[d.param((r % d.groups) * d.per() + cc)];
          for (int64_t s = cc * S; s < (cc + 1) * S; ++s) {
            float xh = (xr[s] - pm[r]) * pi[r];
            pdx[r * n + s] = pi[r] * (dyr[s] * sc - a - xh * b);
          }
        }
      }
    });
  }
  Array* dscale = c.din[1];
  Array* dbias = c.din[2];
  if (!dscale && !dbias) return;
  // Sums per channel (threads own channels), then per parameter.
  Array acc(DType::F64, {2, d.channels}, *c.ctx.allocator, MemoryKind::Transients);
  double *ax = acc.data<double>(), *ad = ax + d.channels;
  parallel_for(d.channels, 1, c.ctx.threads, [&](int64_t lo, int64_t hi) {
    for (int64_t ch = lo; ch < hi; ++ch) {
      double sx = 0, sd = 0;
      for (int64_t b = 0; b < d.batch; ++b) {
        int64_t r = b * d.groups + ch / d.per(), off = (b * d.channels + ch) * S;
        for (int64_t s = 0; s < S; ++s) {
          sx += static_cast<double>(pdy[off + s]) * ((px[off + s] - pm[r]) * pi[r]);
          sd += pdy[off + s];
        }
      }
      ax[ch] = sx;
      ad[ch] = sd;
    }
  });
  auto finish = [&](Array* dp, const double* sums) {
    if (!dp) return;
    float* out = dp->data<float>();
    std::fill(out, out + dp->numel(), 0.0f);
    for (int64_t ch = 0; ch < d.channels; ++ch) out[d.param(ch)] += static_cast<float>(sums[ch]);
  };
  finish(dscale, ax);
  finish(dbias, ad);
}

}  // namespace

void register_norm_group(KernelTable& table) {
  table["GroupNormalization"] = {group_norm_forward, group_norm_backward};
  table["InstanceNormalization"] = {group_norm_forward, group_norm_backward};
}

}  // namespace tensoropt::runtime::cpu
