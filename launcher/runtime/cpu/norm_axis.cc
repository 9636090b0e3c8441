// Normalisations along one axis (graph/ops/norm.cc): Softmax, LogSoftmax, LpNormalization.
// X viewed as rows along the axis (norm_parts.h): n = the axis's size, rows = the other elements.
// The last axis (GPT-2's attention, ViT's) makes contiguous rows; rows are split over threads.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include <Eigen/Core>

#include "launcher/runtime/cpu/norm_parts.h"
#include "launcher/runtime/cpu/util.h"

namespace tensoropt::runtime::cpu {
namespace {

// Softmax's axis, opset 13 semantics: one axis, default -1. Before opset 13 the op coerced X to
// 2-D at `axis` (default 1) and normalised every axis from there on. The two agree whenever the
// axis is the last one, which is how PyTorch exports every opset (it transposes otherwise). A
// kernel does not see the model's opset, so the one case where even the default axis differs (no
// axis attribute, rank > 2) is refused rather than guessed.
int softmax_axis(const Node& node, int rank) {
  if (!node.attr("axis") && rank > 2) {
    kernel_error(node, "no axis attribute on a rank-" + std::to_string(rank) +
                       " input: the default is 1 (coerced to 2-D) before opset 13 and -1 from opset 13, "
                       "and the kernel does not see the model's opset; give the axis explicitly");
  }
  return node_axis(node, "axis", -1, rank);
}

float row_max(const float* x, int64_t n, int64_t stride) {
  float m = -std::numeric_limits<float>::infinity();
  for (int64_t k = 0; k < n; ++k) m = std::max(m, x[k * stride]);
  return m;
}

// ---- Softmax: y = exp(x - max) / sum(exp(x - max)); dx = y * (dy - sum(dy * y)).
// ---- LogSoftmax: y = x - max - log(sum(exp(x - max))); dx = dy - exp(y) * sum(dy).
// Both save only Y (the catalogue's `saved`). Contiguous rows use Eigen's vectorised exp and sums
// (float partial sums, as PyTorch); strided rows (an axis before the last) accumulate in double.
using RowArray = Eigen::Map<Eigen::ArrayXf>;
using ConstRowArray = Eigen::Map<const Eigen::ArrayXf>;

template <bool Log>
void softmax_forward(const OpCall& c) {
  const Array& x = *c.in[0];
  require_f32(c.node, x, "X");
  int axis = softmax_axis(c.node, x.rank());
  Rows rows = rows_of(x.shape(), axis, axis + 1);
  if (rows.n == 0) return;
  const float* px = x.data<float>();
  float* py = c.out[0]->data<float>();
  parallel_for(rows.count(), row_grain(rows.n), c.ctx.threads, [&](int64_t lo, int64_t hi) {
    const int64_t n = rows.n, st = rows.inner;
    for (int64_t r = lo; r < hi; ++r) {
      const float* xr = px + rows.start(r);
      float* yr = py + rows.start(r);
      if (st == 1) {
        ConstRowArray xa(xr, n);
        RowArray ya(yr, n);
        float m = xa.maxCoeff();
        if constexpr (Log) {
          ya = xa - m;
          ya -= std::log(ya.exp().sum());
        } else {
          ya = (xa - m).exp();
          ya *= 1.0f / ya.sum();
        }
        continue;
      }
      float m = row_max(xr, n, st);
      double sum = 0;
      for (int64_t k = 0; k < n; ++k) {
        float e = std::exp(xr[k * st] - m);
        if constexpr (!Log) yr[k * st] = e;
        sum += e;
      }
      if constexpr (Log) {
        auto shift = static_cast<float>(static_cast<double>(m) + std::log(sum));
        for (int64_t k = 0; k < n; ++k) yr[k * st] = xr[k * st] - shift;
      } else {
        auto inv = static_cast<float>(1.0 / sum);
        for (int64_t k = 0; k < n; ++k) yr[k * st] *= inv;
      }
    }
  });
}

template <bool Log>
void softmax_backward(const GradCall& c) {
  const Array& y = *c.out[0];
  int axis = softmax_axis(c.node, y.rank());
  Rows rows = rows_of(y.shape(), axis, axis + 1);
  const float* py = y.data<float>();
  const float* pdy = c.dout[0]->data<float>();
  float* pdx = c.din[0]->data<float>();
  parallel_for(rows.count(), row_grain(rows.n), c.ctx.threads, [&](int64_t lo, int64_t hi) {
    const int64_t n = rows.n, st = rows.inner;
    for (int64_t r = lo; r < hi; ++r) {
      int64_t s = rows.start(r);
      const float *yr = py + s, *dyr = pdy + s;
      float* dxr = pdx + s;
      if (st == 1) {
        ConstRowArray ya(yr, n), dya(dyr, n);
        RowArray dxa(dxr, n);
        if constexpr (Log) dxa = dya - ya.exp() * dya.sum();
        else dxa = ya * (dya - (dya * ya).sum());
        continue;
      }
      if constexpr (Log) {
        auto sum = static_cast<float>(row_sum(dyr, n, st));
        for (int64_t k = 0; k < n; ++k) dxr[k * st] = dyr[k * st] - std::exp(yr[k * st]) * sum;
      } else {
        double dot = 0;
        for (int64_t k = 0; k < n; ++k) dot += static_cast<double>(dyr[k * st]) * yr[k * st];
        auto d = static_cast<float>(dot);
        for (int64_t k = 0; k < n; ++k) dxr[k * st] = yr[k * st] * (dyr[k * st] - d);
      }
    }
  });
}

// ---- LpNormalization (p = 1 or 2): y = x / norm, norm = (sum |x|^p)^(1/p) along the axis.
// dx = (dy - s * sum(dy * y)) / norm with s = sign(x) for p = 1, s = y for p = 2. A zero row gives
// NaN, as ONNX's x / norm does. Saves X and Y.
int lp_order(const Node& node) {
  int64_t p = node.attr_int("p", 2);
  if (p != 1 && p != 2) kernel_error(node, "p = " + std::to_string(p) + " (LpNormalization takes 1 or 2)");
  return static_cast<int>(p);
}

double lp_norm(const float* x, int64_t n, int64_t st, int p) {
  double s = 0;
  for (int64_t k = 0; k < n; ++k) s += p == 1 ? std::abs(static_cast<double>(x[k * st])) : static_cast<double>(x[k * st]) * x[k * st];
  return p == 1 ? s : std::sqrt(s);
}

void lp_forward(const OpCall& c) {
  const Array& x = *c.in[0];
  require_f32(c.node, x, "X");
  int p = lp_order(c.node);
  int axis = node_axis(c.node, "axis", -1, x.rank());
  Rows rows = rows_of(x.shape(), axis, axis + 1);
  const float* px = x.data<float>();
  float* py = c.out[0]->data<float>();
  parallel_for(rows.count(), row_grain(rows.n), c.ctx.threads, [&](int64_t lo, int64_t hi) {
    const int64_t n = rows.n, st = rows.inner;
    for (int64_t r = lo; r < hi; ++r) {
      const float* xr = px + rows.start(r);
      float* yr = py + rows.start(r);
      auto inv = static_cast<float>(1.0 / lp_norm(xr, n, st, p));
      for (int64_t k = 0; k < n; ++k) yr[k * st] = xr[k * st] * inv;
    }
  });
}

void lp_backward(const GradCall& c) {
  const Array& x = *c.in[0];
  int p = lp_order(c.node);
  int axis = node_axis(c.node, "axis", -1, x.rank());
  Rows rows = rows_of(x.shape(), axis, axis + 1);
  const float *px = x.data<float>(), *py = c.out[0]->data<float>(), *pdy = c.dout[0]->data<float>();
  float* pdx = c.din[0]->data<float>();
  parallel_for(rows.count(), row_grain(rows.n), c.ctx.threads, [&](int64_t lo, int64_t hi) {
    const int64_t n = rows.n, st = rows.inner;
    for (int64_t r = lo; r < hi; ++r) {
      int64_t s = rows.start(r);
      const float *xr = px + s, *yr = py + s, *dyr = pdy + s;
      double dot = 0;
      for (int64_t k = 0; k < n; ++k) dot += static_cast<double>(dyr[k * st]) * yr[k * st];
      auto inv = static_cast<float>(1.0 / lp_norm(xr, n, st, p));
      auto d = static_cast<float>(dot);
      for (int64_t k = 0; k < n; ++k) {
        float v = xr[k * st];
        float sgn = p == 2 ? yr[k * st] : static_cast<float>((v > 0) - (v < 0));
        pdx[s + k * st] = (dyr[k * st] - sgn * d) * inv;
      }
    }
  });
}

}  // namespace

void register_norm_axis(KernelTable& table) {
  table["Softmax"] = {softmax_forward<false>, softmax_backward<false>};
  table["LogSoftmax"] = {softmax_forward<true>, softmax_backward<true>};
  table["LpNormalization"] = {lp_forward, lp_backward};
}

}  // namespace tensoropt::runtime::cpu
