// CPU kernels of graph/ops/pool.cc: MaxPool, AveragePool over the windows of linear_window.h, and
// GlobalAveragePool, GlobalMaxPool. Numerics as PyTorch's pools.
// Legend: X [N, C, in...] -> Y [N, C, out...]; a plane is one (n, c); I input positions, O output
// positions, K kernel elements; window(o) = the input positions output o reads (linear_window.h).
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>
#include <vector>

#include "launcher/runtime/cpu/kernels.h"
#include "launcher/runtime/cpu/linear_window.h"
#include "launcher/runtime/cpu/util.h"

namespace tensoropt::runtime::cpu {
namespace {

void require_f32(const OpCall& c) {
  if (c.in[0]->dtype() != DType::F32) kernel_error(c.node, "only float32 is implemented, not " + c.in[0]->str());
}

Window pool_window(const Node& node, const Shape& x, const Shape& y) {
  auto k = node.attr_ints("kernel_shape");
  return conv_window(node, x, y, *k);
}

// Grain for loops over planes: about 16K elements per chunk.
int64_t plane_grain(int64_t elems) { return std::max<int64_t>(1, (1 << 14) / std::max<int64_t>(elems, 1)); }

// ---- MaxPool: Y[o] = max over window(o) of X (padding excluded); the first maximum in window
// order wins, a NaN always (PyTorch). The selects are bit masks, not branches: on random data a
// branch mispredicts every other tap. Forward keeps the argmax A[o] (int64, the position in the
// plane: the extra the catalogue charges); dX[A[o]] += dY[o]. The optional Indices output is
// the argmax flattened over all of X, its spatial part row-major (storage_order 0) or
// column-major (1).
void maxpool_forward(const OpCall& c) {
  require_f32(c);
  const Array& x = *c.in[0];
  Array& y = *c.out[0];
  const Window w = pool_window(c.node, x.shape(), y.shape());
  const int64_t in = w.in_size(), out = w.out_size(), k = w.kernel_size();
  const int64_t planes = x.dim(0) * x.dim(1);
  Array arg(DType::I64, y.shape(), *c.ctx.allocator, MemoryKind::Activations);
  const float* px = x.data<float>();
  float* py = y.data<float>();
  int64_t* pa = arg.data<int64_t>();
  const int64_t s = w.stride[2];
  parallel_for(planes, plane_grain(k * out), c.ctx.threads, [&](int64_t lo, int64_t hi) {
    for (int64_t p = lo; p < hi; ++p) {
      const float* xp = px + p * in;
      float* yp = py + p * out;
      int64_t* ap = pa + p * out;
      std::fill_n(yp, out, -std::numeric_limits<float>::infinity());
      std::fill_n(ap, out, int64_t{-1});
      for (int64_t j = 0; j < k; ++j) {
        for_rows(w, j, [&](int64_t orow, int64_t irow, int64_t a, int64_t b) {
          float* yr = yp + orow;
          int64_t* ar = ap + orow;
          for (int64_t o = a; o < b; ++o) {
            const int64_t i = irow + o * s;
            const float v = xp[i];
            const int32_t take = -static_cast<int32_t>((v > yr[o]) | (v != v) | (ar[o] < 0));  // all ones or zero
            yr[o] = std::bit_cast<float>((std::bit_cast<int32_t>(v) & take) | (std::bit_cast<int32_t>(yr[o]) & ~take));
            ar[o] += (i - ar[o]) & take;
          }
        });
      }
    }
  });
  if (c.out.size() > 1 && c.out[1]) {
    const bool column_major = c.node.attr_int("storage_order", 0) != 0;
    int64_t* idx = c.out[1]->data<int64_t>();
    parallel_for(planes * out, 1 << 14, c.ctx.threads, [&](int64_t lo, int64_t hi) {
      for (int64_t e = lo; e < hi; ++e) {
        int64_t i = pa[e];
        if (column_major && i >= 0) {
          const int64_t iw = i % w.in[2], ih = i / w.in[2] % w.in[1], id = i / (w.in[2] * w.in[1]);
          const size_t r = x.shape().size() - 2;  // the unit axes in front do not count
          i = r == 1 ? iw : r == 2 ? ih + iw * w.in[1] : id + ih * w.in[0] + iw * w.in[0] * w.in[1];
        }
        idx[e] = e / out * in + i;
      }
    });
  }
  c.state.saved = {arg};
}

void maxpool_backward(const GradCall& c) {
  const Array& dy = *c.dout[0];
  Array& dx = *c.din[0];
  const int64_t* pa = c.state.saved.at(0).data<int64_t>();
  const int64_t planes = dx.dim(0) * dx.dim(1), in = dx.numel() / std::max<int64_t>(planes, 1),
                out = dy.numel() / std::max<int64_t>(planes, 1);
  const float* pdy = dy.data<float>();
  float* pdx = dx.data<float>();
  parallel_for(planes, plane_grain(in + out), c.ctx.threads, [&](int64_t lo, int64_t hi) {
    std::fill(pdx + lo * in, pdx + hi * in, 0.0f);
    for (int64_t p = lo; p < hi; ++p) {
      for (int64_t o = 0; o < out; ++o) {
        const int64_t i = pa[p * out + o];
        if (i >= 0) pdx[p * in + i] += pdy[p * out + o];
      }
    }
  });
}

// ---- AveragePool: Y[o] = Σ_{window(o)} X / D[o]; dX[i] = Σ_{o: i in window(o)} dY[o] / D[o].
// D[o] counts the window's taps inside the input, or with count_include_pad inside the padded
// input [-pad, in + pad_end) (PyTorch: ceil_mode windows reaching past the end pad count less).
// D is a product over axes, computed once per call.
std::vector<float> inverse_divisors(const Window& w, bool include_pad) {
  std::array<std::vector<int64_t>, 3> count;
  for (size_t a = 0; a < 3; ++a) {
    const int64_t lo = include_pad ? -w.pad[a] : 0, hi = include_pad ? w.in[a] + w.pad_end[a] : w.in[a];
    for (int64_t o = 0; o < w.out[a]; ++o) {
      int64_t n = 0;
      for (int64_t j = 0; j < w.kernel[a]; ++j) {
        const int64_t i = o * w.stride[a] - w.pad[a] + j * w.dilation[a];
        n += i >= lo && i < hi;
      }
      count[a].push_back(n);
    }
  }
  std::vector<float> inv;
  inv.reserve(static_cast<size_t>(w.out_size()));
  for (int64_t n0 : count[0]) {
    for (int64_t n1 : count[1]) {
      for (int64_t n2 : count[2]) {
        const int64_t d = n0 * n1 * n2;
        inv.push_back(d > 0 ? 1.0f / static_cast<float>(d) : 0.0f);
      }
    }
  }
  return inv;
}

void avgpool_forward(const OpCall& c) {
  require_f32(c);
  const Array& x = *c.in[0];
  Array& y = *c.out[0];
  const Window w = pool_window(c.node, x.shape(), y.shape());
  const std::vector<float> inv = inverse_divisors(w, c.node.attr_int("count_include_pad", 0) != 0);
  const int64_t in = w.in_size(), out = w.out_size(), k = w.kernel_size(), s = w.stride[2];
  const float* px = x.data<float>();
  float* py = y.data<float>();
  parallel_for(x.dim(0) * x.dim(1), plane_grain(k * out), c.ctx.threads, [&](int64_t lo, int64_t hi) {
    for (int64_t p = lo; p < hi; ++p) {
      const float* xp = px + p * in;
      float* yp = py + p * out;
      std::fill_n(yp, out, 0.0f);
      for (int64_t j = 0; j < k; ++j) {
        for_rows(w, j, [&](int64_t orow, int64_t irow, int64_t a, int64_t b) {
          strided(xp + (irow + a * s), b - a, s, [&](auto&& v) { VectorMap(yp + orow + a, b - a) += v; });
        });
      }
      VectorMap(yp, out).array() *= Eigen::Map<const Eigen::ArrayXf>(inv.data(), out);
    }
  });
}

void avgpool_backward(const GradCall& c) {
  const Array& dy = *c.dout[0];
  Array& dx = *c.din[0];
  const Window w = pool_window(c.node, dx.shape(), dy.shape());
  const std::vector<float> inv = inverse_divisors(w, c.node.attr_int("count_include_pad", 0) != 0);
  const int64_t in = w.in_size(), out = w.out_size(), k = w.kernel_size(), s = w.stride[2];
  const float* pdy = dy.data<float>();
  float* pdx = dx.data<float>();
  parallel_for(dx.dim(0) * dx.dim(1), plane_grain(k * out), c.ctx.threads, [&](int64_t lo, int64_t hi) {
    for (int64_t p = lo; p < hi; ++p) {
      const float* dyp = pdy + p * out;
      float* dxp = pdx + p * in;
      std::fill_n(dxp, in, 0.0f);
      for (int64_t j = 0; j < k; ++j) {
        for_rows(w, j, [&](int64_t orow, int64_t irow, int64_t a, int64_t b) {
          strided(dxp + (irow + a * s), b - a, s, [&](auto&& v) {
            v += ConstVectorMap(dyp + orow + a, b - a).cwiseProduct(ConstVectorMap(inv.data() + orow + a, b - a));
          });
        });
      }
    }
  });
}

// ---- GlobalAveragePool: Y[p] = mean of plane p; dX[p, :] = dY[p] / I. I is the whole plane's
// size: a shard of split spatial axes gives its part of the mean (partial sums).
std::vector<bool> spatial_axes(int rank) {
  std::vector<bool> r(static_cast<size_t>(rank), true);
  r[0] = r[1] = false;
  return r;
}

void global_avgpool_forward(const OpCall& c) {
  require_f32(c);
  const Array& x = *c.in[0];
  const int64_t planes = x.dim(0) * x.dim(1), in = x.numel() / std::max<int64_t>(planes, 1);
  const auto count = static_cast<float>(mean_count(c.shard, 0, x.shape(), spatial_axes(x.rank())));
  const float* px = x.data<float>();
  float* py = c.out[0]->data<float>();
  parallel_for(planes, plane_grain(in), c.ctx.threads, [&](int64_t lo, int64_t hi) {
    for (int64_t p = lo; p < hi; ++p) py[p] = ConstVectorMap(px + p * in, in).sum() / count;
  });
}

void global_avgpool_backward(const GradCall& c) {
  Array& dx = *c.din[0];
  const int64_t planes = dx.dim(0) * dx.dim(1), in = dx.numel() / std::max<int64_t>(planes, 1);
  const auto count = static_cast<float>(mean_count(c.shard, 0, dx.shape(), spatial_axes(dx.rank())));
  const float* pdy = c.dout[0]->data<float>();
  float* pdx = dx.data<float>();
  parallel_for(planes, plane_grain(in), c.ctx.threads, [&](int64_t lo, int64_t hi) {
    for (int64_t p = lo; p < hi; ++p) std::fill_n(pdx + p * in, in, pdy[p] / count);
  });
}

// ---- GlobalMaxPool: Y[p] = max of plane p (a NaN wins, as in PyTorch's max pools); dX[p, i*] =
// dY[p] at the position i* that max came from (the first equal to Y, the last NaN), else 0. The
// catalogue keeps X and Y, from which backward finds i*.
void global_maxpool_forward(const OpCall& c) {
  require_f32(c);
  const Array& x = *c.in[0];
  const int64_t planes = x.dim(0) * x.dim(1), in = x.numel() / std::max<int64_t>(planes, 1);
  const float* px = x.data<float>();
  float* py = c.out[0]->data<float>();
  parallel_for(planes, plane_grain(in), c.ctx.threads, [&](int64_t lo, int64_t hi) {
    for (int64_t p = lo; p < hi; ++p) {
      float m = -std::numeric_limits<float>::infinity();
      for (int64_t i = 0; i < in; ++i) {
        const float v = px[p * in + i];
        if (v > m || std::isnan(v)) m = v;
      }
      py[p] = m;
    }
  });
}

void global_maxpool_backward(const GradCall& c) {
  Array& dx = *c.din[0];
  const int64_t planes = dx.dim(0) * dx.dim(1), in = dx.numel() / std::max<int64_t>(planes, 1);
  const float* px = c.in[0]->data<float>();
  const float* py = c.out[0]->data<float>();
  const float* pdy = c.dout[0]->data<float>();
  float* pdx = dx.data<float>();
  parallel_for(planes, plane_grain(in), c.ctx.threads, [&](int64_t lo, int64_t hi) {
    for (int64_t p = lo; p < hi; ++p) {
      const float* xp = px + p * in;
      float* dxp = pdx + p * in;
      std::fill_n(dxp, in, 0.0f);
      int64_t at = -1;
      if (std::isnan(py[p])) {
        for (int64_t i = in; i-- > 0 && at < 0;) at = std::isnan(xp[i]) ? i : -1;
      } else {
        for (int64_t i = 0; i < in && at < 0; ++i) at = xp[i] == py[p] ? i : -1;
      }
      if (at >= 0) dxp[at] = pdy[p];
    }
  });
}

}  // namespace

void register_pool(KernelTable& table) {
  table["MaxPool"] = {maxpool_forward, maxpool_backward};
  table["AveragePool"] = {avgpool_forward, avgpool_backward};
  table["GlobalAveragePool"] = {global_avgpool_forward, global_avgpool_backward};
  table["GlobalMaxPool"] = {global_maxpool_forward, global_maxpool_backward};
}

}  // namespace tensoropt::runtime::cpu
