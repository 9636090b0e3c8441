// LayerNormalization (graph/ops/norm.cc, opset 17): X [outer..., normalised...] with the
// normalised axes [axis, rank) flattened into rows of n elements (rows are contiguous).
//   mean = sum(x) / n, var = sum((x - mean)^2) / n, inv = 1 / sqrt(var + epsilon)
//   xhat = (x - mean) * inv, y = xhat * scale + bias   (scale and bias broadcast to X)
// Optional outputs Mean and InvStdDev [outer..., 1...] are mean and inv.
// Backward, with g = dy * scale:
//   dx = inv * (g - mean(g) - xhat * mean(g * xhat)) + dMean / n - dInvStdDev * inv^2 * xhat / n
//   dscale = sum_to_shape(dy * xhat), dbias = sum_to_shape(dy)
// Kept for backward: X (the catalogue saves it), mean and inv per row (the extras it charges),
// and Scale (keep_input: a view of the parameter).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "launcher/runtime/cpu/norm_parts.h"
#include "launcher/runtime/cpu/util.h"

namespace tensoropt::runtime::cpu {
namespace {

// Whether a parameter of shape `p` spans exactly the normalised axes of X (after leading 1s), so
// that X element (row r, column j) reads its element j: the case of every exported model.
bool column_shaped(const Shape& p, const Shape& x, int axis) {
  Shape padded(x.size() - p.size(), 1);
  padded.insert(padded.end(), p.begin(), p.end());
  for (size_t d = 0; d < x.size(); ++d) {
    if (padded[d] != (static_cast<int>(d) < axis ? 1 : x[d])) return false;
  }
  return true;
}

// A scale or bias as rows: row r's values at data + r * stride (stride 0 when column-shaped;
// otherwise the parameter is broadcast to X's shape into a workspace, stride n).
struct Param {
  const float* data = nullptr;
  int64_t stride = 0;
  Array expanded;

  Param(const Array* a, const Shape& x, int axis, int64_t n, Allocator& alloc) {
    if (!a) return;
    data = a->data<float>();
    if (column_shaped(a->shape(), x, axis)) return;
    expanded = Array(DType::F32, x, alloc, MemoryKind::Transients);
    auto bst = broadcast_strides(a->shape(), x);
    float* e = expanded.data<float>();
    for (int64_t k = 0; k < expanded.numel(); ++k) e[k] = data[broadcast_offset(k, x, bst)];
    data = e;
    stride = n;
  }
  const float* row(int64_t r) const { return data + r * stride; }
};

struct LnDims {
  int axis;
  int64_t rows, n;
  float eps;
};

LnDims ln_dims(const Node& node, const Shape& x) {
  int axis = node_axis(node, "axis", -1, static_cast<int>(x.size()));
  if (node.attr_int("stash_type", 1) != 1) {
    kernel_error(node, "stash_type " + std::to_string(node.attr_int("stash_type", 1)) + " (the kernel keeps float32 statistics)");
  }
  Rows r = rows_of(x, axis, static_cast<int>(x.size()));
  return {axis, r.outer, r.n, static_cast<float>(node.attr_float("epsilon", 1e-5))};
}

void layer_norm_forward(const OpCall& c) {
  const Array& x = *c.in[0];
  for (int i = 0; i < 3; ++i) {
    if (i < static_cast<int>(c.in.size()) && c.in[static_cast<size_t>(i)]) require_f32(c.node, *c.in[static_cast<size_t>(i)], "input");
  }
  LnDims d = ln_dims(c.node, x.shape());
  Param scale(c.in[1], x.shape(), d.axis, d.n, *c.ctx.allocator);
  Param bias(c.in.size() > 2 ? c.in[2] : nullptr, x.shape(), d.axis, d.n, *c.ctx.allocator);
  Array mean(DType::F32, {d.rows}, *c.ctx.allocator, MemoryKind::Activations);
  Array inv(DType::F32, {d.rows}, *c.ctx.allocator, MemoryKind::Activations);
  const float* px = x.data<float>();
  float* py = c.out[0]->data<float>();
  float *pm = mean.data<float>(), *pi = inv.data<float>();
  const int64_t n = d.n;
  parallel_for(d.rows, row_grain(n), c.ctx.threads, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const float *xr = px + r * n, *sr = scale.row(r), *br = bias.data ? bias.row(r) : nullptr;
      float* yr = py + r * n;
      double mu = row_sum(xr, n, 1) / static_cast<double>(n), v0 = 0, v1 = 0;
      int64_t j = 0;
      for (; j + 2 <= n; j += 2) {
        v0 += (xr[j] - mu) * (xr[j] - mu);
        v1 += (xr[j + 1] - mu) * (xr[j + 1] - mu);
      }
      if (j < n) v0 += (xr[j] - mu) * (xr[j] - mu);
      auto m = static_cast<float>(mu);
      auto is = static_cast<float>(1.0 / std::sqrt((v0 + v1) / static_cast<double>(n) + d.eps));
      pm[r] = m;
      pi[r] = is;
      if (br) {
        for (int64_t k = 0; k < n; ++k) yr[k] = (xr[k] - m) * is * sr[k] + br[k];
      } else {
        for (int64_t k = 0; k < n; ++k) yr[k] = (xr[k] - m) * is * sr[k];
      }
    }
  });
  if (c.out.size() > 1 && c.out[1]) std::copy(pm, pm + d.rows, c.out[1]->data<float>());
  if (c.out.size() > 2 && c.out[2]) std::copy(pi, pi + d.rows, c.out[2]->data<float>());
  c.state.saved = {mean, inv, keep_input(c, 1)};
}

// dparam = sum over rows of term(r, j) (a float), reduced to the parameter's shape.
template <class Term>
void param_grad(const GradCall& c, const LnDims& d, Array& dp, Term&& term) {
  const Shape& x = c.in_shapes[0];
  const int64_t n = d.n;
  if (column_shaped(dp.shape(), x, d.axis)) {  // one column sum per element; threads own columns
    Array acc(DType::F64, {n}, *c.ctx.allocator, MemoryKind::Transients);
    double* pa = acc.data<double>();
    float* out = dp.data<float>();
    parallel_for(n, 256, c.ctx.threads, [&](int64_t lo, int64_t hi) {
      std::fill(pa + lo, pa + hi, 0.0);
      for (int64_t r = 0; r < d.rows; ++r) {
        for (int64_t j = lo; j < hi; ++j) pa[j] += term(r, j);
      }
      for (int64_t j = lo; j < hi; ++j) out[j] = static_cast<float>(pa[j]);
    });
    return;
  }
  Array full(DType::F32, x, *c.ctx.allocator, MemoryKind::Transients);
  float* pf = full.data<float>();
  parallel_for(d.rows, row_grain(n), c.ctx.threads, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      for (int64_t j = 0; j < n; ++j) pf[r * n + j] = term(r, j);
    }
  });
  sum_to_shape(pf, x, dp.data<float>(), dp.shape(), c.ctx.threads);
}

void layer_norm_backward(const GradCall& c) {
  const Shape& xs = c.in_shapes[0];
  LnDims d = ln_dims(c.node, xs);
  const int64_t n = d.n;
  const float* px = c.in[0]->data<float>();
  const float *pm = c.state.saved[0].data<float>(), *pi = c.state.saved[1].data<float>();
  Param scale(&c.state.saved[2], xs, d.axis, d.n, *c.ctx.allocator);
  auto grad = [&](size_t o) { return c.dout.size() > o && c.dout[o] ? c.dout[o]->data<float>() : nullptr; };
  const float *pdy = grad(0), *pdmean = grad(1), *pdinv = grad(2);
  if (Array* dx = c.din[0]) {
    float* pdx = dx->data<float>();
    auto nd = static_cast<double>(n);
    parallel_for(d.rows, row_grain(n), c.ctx.threads, [&](int64_t lo, int64_t hi) {
      for (int64_t r = lo; r < hi; ++r) {
        const float *xr = px + r * n, *sr = scale.row(r);
        float* dxr = pdx + r * n;
        const float m = pm[r], is = pi[r];
        float a = 0, b = 0;
        if (pdy) {
          const float* dyr = pdy + r * n;
          double sg = 0, sgx = 0;
          for (int64_t j = 0; j < n; ++j) {
            float g = dyr[j] * sr[j];
            sg += g;
            sgx += g * ((xr[j] - m) * is);
          }
          a = static_cast<float>(sg / nd);
          b = static_cast<float>(sgx / nd);
          for (int64_t j = 0; j < n; ++j) {
            float xh = (xr[j] - m) * is;
            dxr[j] = is * (dyr[j] * sr[j] - a - xh * b);
          }
        } else {
          std::fill(dxr, dxr + n, 0.0f);
        }
        // The statistics outputs' gradients: dmean / n, and dinv * dinv/dx = -dinv * inv^2 * xhat / n.
        float dm = pdmean ? static_cast<float>(pdmean[r] / nd) : 0.0f;
        float dv = pdinv ? static_cast<float>(-pdinv[r] * is * is / nd) : 0.0f;
        if (dm != 0 || dv != 0) {
          for (int64_t j = 0; j < n; ++j) dxr[j] += dm + dv * ((xr[j] - m) * is);
        }
      }
    });
  }
  if (!pdy) {
    for (size_t i = 1; i < c.din.size(); ++i) {
      if (c.din[i]) std::fill_n(c.din[i]->data<float>(), c.din[i]->numel(), 0.0f);
    }
    return;
  }
  if (c.din.size() > 1 && c.din[1]) {
    param_grad(c, d, *c.din[1], [&](int64_t r, int64_t j) { return pdy[r * n + j] * ((px[r * n + j] - pm[r]) * pi[r]); });
  }
  if (c.din.size() > 2 && c.din[2]) param_grad(c, d, *c.din[2], [&](int64_t r, int64_t j) { return pdy[r * n + j]; });
}

}  // namespace

void register_norm_layer(KernelTable& table) { table["LayerNormalization"] = {layer_norm_forward, layer_norm_backward}; }

}  // namespace tensoropt::runtime::cpu
