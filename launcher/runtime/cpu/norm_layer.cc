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
// that X element (row r, column j) reads its element j.
bool column_shaped(const Shape& p, const Shape& x, int axis) {
  Shape padded(x.size() - p.size(), 1);
  padded.insert(padded.end(), p.begin(), p.end());
  for (size_t d = 0; d < x.size(); ++d) {
    if (padded[d] != (static_cast<int>(d) < axis ? 1 : x[d])) return false;
  }
  return true;
}

// How a scale or bias is read for X element (row r, column j): by column, or through broadcast
// strides when it also varies along (or broadcasts within) other axes.
struct Param {
  const float* data = nullptr;
  bool column = true;
  std::vector<int64_t> strides;  // broadcast strides against X, when !column

  Param(const Array* a, const Shape& x, int axis) {
    if (!a) return;
    data = a->data<float>();
    column = column_shaped(a->shape(), x, axis);
    if (!column) strides = broadcast_strides(a->shape(), x);
  }
  float at(int64_t r, int64_t j, int64_t n, const Shape& x) const {
    return column ? data[j] : data[broadcast_offset(r * n + j, x, strides)];
  }
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
  const Array* bias = c.in.size() > 2 ? c.in[2] : nullptr;
  Param scale(c.in[1], x.shape(), d.axis), shift(bias, x.shape(), d.axis);
  Array mean(DType::F32, {d.rows}, *c.ctx.allocator, MemoryKind::Activations);
  Array inv(DType::F32, {d.rows}, *c.ctx.allocator, MemoryKind::Activations);
  const float* px = x.data<float>();
  float* py = c.out[0]->data<float>();
  float *pm = mean.data<float>(), *pi = inv.data<float>();
  parallel_for(d.rows, row_grain(d.n), c.ctx.threads, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const float* xr = px + r * d.n;
      float* yr = py + r * d.n;
      double mu = row_sum(xr, d.n, 1) / static_cast<double>(d.n), var = 0;
      for (int64_t j = 0; j < d.n; ++j) var += (xr[j] - mu) * (xr[j] - mu);
      auto m = static_cast<float>(mu);
      auto is = static_cast<float>(1.0 / std::sqrt(var / static_cast<double>(d.n) + d.eps));
      pm[r] = m;
      pi[r] = is;
      for (int64_t j = 0; j < d.n; ++j) {
        float v = (xr[j] - m) * is * scale.at(r, j, d.n, x.shape());
        yr[j] = shift.data ? v + shift.at(r, j, d.n, x.shape()) : v;
      }
    }
  });
  if (c.out.size() > 1 && c.out[1]) std::copy(pm, pm + d.rows, c.out[1]->data<float>());
  if (c.out.size() > 2 && c.out[2]) std::copy(pi, pi + d.rows, c.out[2]->data<float>());
  c.state.saved = {mean, inv, keep_input(c, 1)};
}

// dparam = sum over rows of term(r, j), reduced to the parameter's shape.
template <class Term>
void param_grad(const GradCall& c, const LnDims& d, Array& dp, Term&& term) {
  const Shape& x = c.in_shapes[0];
  if (column_shaped(dp.shape(), x, d.axis)) {  // one column sum per scale element; threads own columns
    Array acc(DType::F64, {d.n}, *c.ctx.allocator, MemoryKind::Transients);
    double* pa = acc.data<double>();
    float* out = dp.data<float>();
    parallel_for(d.n, 256, c.ctx.threads, [&](int64_t lo, int64_t hi) {
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
  parallel_for(d.rows, row_grain(d.n), c.ctx.threads, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      for (int64_t j = 0; j < d.n; ++j) pf[r * d.n + j] = static_cast<float>(term(r, j));
    }
  });
  sum_to_shape(pf, x, dp.data<float>(), dp.shape(), c.ctx.threads);
}

void layer_norm_backward(const GradCall& c) {
  const Shape& xs = c.in_shapes[0];
  LnDims d = ln_dims(c.node, xs);
  const float* px = c.in[0]->data<float>();
  const float *pm = c.state.saved[0].data<float>(), *pi = c.state.saved[1].data<float>();
  const Array& scale_arr = c.state.saved[2];
  Param scale(&scale_arr, xs, d.axis);
  auto grad = [&](size_t o) { return c.dout.size() > o && c.dout[o] ? c.dout[o]->data<float>() : nullptr; };
  const float *pdy = grad(0), *pdmean = grad(1), *pdinv = grad(2);
  auto xhat = [&](int64_t r, int64_t j) { return (px[r * d.n + j] - pm[r]) * pi[r]; };
  auto dy = [&](int64_t r, int64_t j) { return pdy ? pdy[r * d.n + j] : 0.0f; };
  if (Array* dx = c.din[0]) {
    float* pdx = dx->data<float>();
    auto n = static_cast<double>(d.n);
    parallel_for(d.rows, row_grain(d.n), c.ctx.threads, [&](int64_t lo, int64_t hi) {
      for (int64_t r = lo; r < hi; ++r) {
        double sg = 0, sgx = 0;
        for (int64_t j = 0; j < d.n; ++j) {
          double g = static_cast<double>(dy(r, j)) * scale.at(r, j, d.n, xs);
          sg += g;
          sgx += g * xhat(r, j);
        }
        auto a = static_cast<float>(sg / n), b = static_cast<float>(sgx / n);
        float dm = pdmean ? static_cast<float>(pdmean[r] / n) : 0.0f;
        float dv = pdinv ? static_cast<float>(-pdinv[r] * pi[r] * pi[r] / n) : 0.0f;
        for (int64_t j = 0; j < d.n; ++j) {
          float xh = xhat(r, j), g = dy(r, j) * scale.at(r, j, d.n, xs);
          pdx[r * d.n + j] = pi[r] * (g - a - xh * b) + dm + dv * xh;
        }
      }
    });
  }
  if (c.din.size() > 1 && c.din[1]) {
    param_grad(c, d, *c.din[1], [&](int64_t r, int64_t j) { return static_cast<double>(dy(r, j)) * xhat(r, j); });
  }
  if (c.din.size() > 2 && c.din[2]) {
    param_grad(c, d, *c.din[2], [&](int64_t r, int64_t j) { return static_cast<double>(dy(r, j)); });
  }
}

}  // namespace

void register_norm_layer(KernelTable& table) { table["LayerNormalization"] = {layer_norm_forward, layer_norm_backward}; }

}  // namespace tensoropt::runtime::cpu
