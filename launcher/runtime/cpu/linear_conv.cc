// Conv and ConvTranspose (graph/ops/linear.cc) by im2col (linear_im2col.h) and GEMM
// (linear_gemm.h), and depthwise Conv by direct loops over the windows of linear_window.h.
// Threads share a batch image by image when it divides well among them (split_images).
//
// Legend: N batch, C input channels, M output channels, g groups, Cg = C/g, Mg = M/g, K kernel
// elements, I input positions, O output positions; col(x) [Cg·K, O] the im2col matrix.
//
// Conv: X [N,C,in...], W [M,Cg,k...], B [M] -> Y [N,M,out...]
//   Y[n,g] = W_g [Mg, Cg·K] · col(X[n,g]) + B
//   dW_g = Σ_n dY[n,g] · col(X[n,g])ᵀ,  dX[n,g] = col2im(W_gᵀ · dY[n,g]),  dB = Σ_{n,O} dY
//   1x1, stride 1, unpadded: col(x) = x. Depthwise (g = C > 1, M = C·mult): channel m reads
//   input channel m/mult, Y[n,m] = B[m] + Σ_j W[m,j] · X[n,m/mult] at offset j, no im2col.
// ConvTranspose: X [N,C,in...], W [C,Mg,k...], B [M] -> Y [N,M,out...], the data gradient of the
// Conv from Y to X (its window runs over Y's positions and produces X's):
//   Y[n,g] = col2im(W_gᵀ [Mg·K, Cg] · X[n,g]) + B
//   dX[n,g] = W_g · col(dY[n,g]),  dW_g = Σ_n X[n,g] · col(dY[n,g])ᵀ,  dB = Σ_{n,O} dY
#include "launcher/runtime/cpu/linear_conv.h"

#include <algorithm>
#include <string>

#include "launcher/runtime/cpu/linear_gemm.h"
#include "launcher/runtime/cpu/linear_im2col.h"
#include "launcher/runtime/cpu/linear_window.h"
#include "launcher/runtime/cpu/util.h"

namespace tensoropt::runtime::cpu {
namespace {

void require_f32(const OpCall& c) {
  if (c.in[0]->dtype() != DType::F32) kernel_error(c.node, "only float32 is implemented, not " + c.in[0]->str());
}

const float* bias_of(const OpCall& c) { return c.in.size() > 2 && c.in[2] ? c.in[2]->data<float>() : nullptr; }

// ---- Conv

struct ConvDims {
  Window w;
  int64_t n, c, m, g, cg, mg, k, in, out;
  bool pointwise, depthwise;
};

ConvDims conv_dims(const Node& node, const Shape& x, const Shape& wt, const Shape& y) {
  ConvDims d{};
  d.w = conv_window(node, x, y, Shape(wt.begin() + 2, wt.end()));
  d.n = x[0];
  d.c = x[1];
  d.m = wt[0];
  d.g = node.attr_int("group", 1);
  d.cg = d.c / d.g;
  d.mg = d.m / d.g;
  d.k = d.w.kernel_size();
  d.in = d.w.in_size();
  d.out = d.w.out_size();
  d.pointwise = is_pointwise(d.w);
  d.depthwise = d.g > 1 && d.g == d.c;
  return d;
}

// Depthwise: Y[n,m] = B[m] + Σ_j W[m,j] · X[n, m/mult] at offset j.
void depthwise_forward(const ConvDims& d, const float* x, const float* wt, const float* bias, float* y, int threads) {
  const int64_t mult = d.m / d.c, s = d.w.stride[2];
  parallel_for(d.n * d.m, 1, threads, [&](int64_t lo, int64_t hi) {
    for (int64_t p = lo; p < hi; ++p) {
      const int64_t m = p % d.m;
      const float* xc = x + (p / d.m * d.c + m / mult) * d.in;
      float* yp = y + p * d.out;
      std::fill_n(yp, d.out, bias ? bias[m] : 0.0f);
      for (int64_t j = 0; j < d.k; ++j) {
        const float wv = wt[m * d.k + j];
        for_rows(d.w, j, [&](int64_t orow, int64_t irow, int64_t a, int64_t b) {
          strided(xc + (irow + a * s), b - a, s, [&](auto&& v) { VectorMap(yp + orow + a, b - a) += wv * v; });
        });
      }
    }
  });
}

// dX[n,c] = Σ over c's mult output channels m and offsets j of W[m,j] · dY[n,m] placed back at
// offset j; dW[m,j] = Σ_n <dY[n,m], X[n,m/mult] at offset j>.
void depthwise_backward(const ConvDims& d, const float* x, const float* wt, const float* dy, float* dx, float* dw, int threads) {
  const int64_t mult = d.m / d.c, s = d.w.stride[2];
  if (dx) {
    parallel_for(d.n * d.c, 1, threads, [&](int64_t lo, int64_t hi) {
      for (int64_t p = lo; p < hi; ++p) {
        float* dxp = dx + p * d.in;
        std::fill_n(dxp, d.in, 0.0f);
        for (int64_t m = p % d.c * mult; m < (p % d.c + 1) * mult; ++m) {
          const float* dyp = dy + (p / d.c * d.m + m) * d.out;
          for (int64_t j = 0; j < d.k; ++j) {
            const float wv = wt[m * d.k + j];
            for_rows(d.w, j, [&](int64_t orow, int64_t irow, int64_t a, int64_t b) {
              strided(dxp + (irow + a * s), b - a, s, [&](auto&& v) { v += wv * ConstVectorMap(dyp + orow + a, b - a); });
            });
          }
        }
      }
    });
  }
  if (dw) {
    parallel_for(d.m, 1, threads, [&](int64_t lo, int64_t hi) {
      for (int64_t m = lo; m < hi; ++m) {
        for (int64_t j = 0; j < d.k; ++j) {
          float acc = 0;
          for (int64_t n = 0; n < d.n; ++n) {
            const float* xc = x + (n * d.c + m / mult) * d.in;
            const float* dyp = dy + (n * d.m + m) * d.out;
            for_rows(d.w, j, [&](int64_t orow, int64_t irow, int64_t a, int64_t b) {
              strided(xc + (irow + a * s), b - a, s, [&](auto&& v) { acc += v.dot(ConstVectorMap(dyp + orow + a, b - a)); });
            });
          }
          dw[m * d.k + j] = acc;
        }
      }
    });
  }
}

Array transient(const Shape& s, const StepContext& ctx) { return Array(DType::F32, s, *ctx.allocator, MemoryKind::Transients); }

void conv_forward(const OpCall& c) {
  require_f32(c);
  const Array& x = *c.in[0];
  const Array& wt = *c.in[1];
  Array& y = *c.out[0];
  const ConvDims d = conv_dims(c.node, x.shape(), wt.shape(), y.shape());
  const float* bias = bias_of(c);
  const float *px = x.data<float>(), *pw = wt.data<float>();
  float* py = y.data<float>();
  if (d.depthwise) return depthwise_forward(d, px, pw, bias, py, c.ctx.threads);
  if (bias) fill_bias(bias, d.n, d.m, d.out, py, c.ctx.threads);
  const int64_t rows = d.cg * d.k;
  const ImageSplit split = split_images(d.n, c.ctx.threads);
  for_parts(split, c.ctx.threads, [&](int64_t, int64_t first, int64_t end) {
    Array col = d.pointwise ? Array() : transient({rows, d.out}, c.ctx);
    for (int64_t n = first; n < end; ++n) {
      for (int64_t g = 0; g < d.g; ++g) {
        const float* src = px + (n * d.c + g * d.cg) * d.in;
        if (!d.pointwise) {
          im2col(d.w, src, d.cg, col.data<float>(), split.inner);
          src = col.data<float>();
        }
        gemm({.m = d.mg, .n = d.out, .k = rows}, 1.0f, pw + g * d.mg * rows, src, bias ? 1.0f : 0.0f,
             py + (n * d.m + g * d.mg) * d.out, split.inner);
      }
    }
  });
}

void conv_backward(const GradCall& c) {
  const ConvDims d = conv_dims(c.node, c.in_shapes[0], c.in_shapes[1], c.dout[0]->shape());
  const float* dy = c.dout[0]->data<float>();
  // X is kept when W takes a gradient, W when X does.
  float* dx = c.din[0] ? c.din[0]->data<float>() : nullptr;
  float* dw = c.din[1] ? c.din[1]->data<float>() : nullptr;
  const float* x = dw ? c.in[0]->data<float>() : nullptr;
  const float* wt = dx ? c.in[1]->data<float>() : nullptr;
  if (c.din.size() > 2 && c.din[2]) bias_grad(dy, d.n, d.m, d.out, c.din[2]->data<float>(), c.ctx.threads);
  if (d.depthwise) return depthwise_backward(d, x, wt, dy, dx, dw, c.ctx.threads);
  if (!dx && !dw) return;
  const int64_t rows = d.cg * d.k;
  const ImageSplit split = split_images(d.n, c.ctx.threads);
  PartSums dws(dw, dw ? c.din[1]->numel() : 0, dw ? split.parts : 1, c.ctx);
  // Every part's buffer before any runs: the peak does not depend on how the parts are scheduled.
  std::vector<Array> cols(static_cast<size_t>(split.parts));
  if (!d.pointwise) for (Array& col : cols) col = transient({rows, d.out}, c.ctx);
  for_parts(split, c.ctx.threads, [&](int64_t part, int64_t first, int64_t end) {
    Array& col = cols[static_cast<size_t>(part)];
    for (int64_t n = first; n < end; ++n) {
      for (int64_t g = 0; g < d.g; ++g) {
        const float* dyg = dy + (n * d.m + g * d.mg) * d.out;
        const int64_t xoff = (n * d.c + g * d.cg) * d.in;
        if (dw) {  // dW_g += dY[n,g] · col(X[n,g])ᵀ
          const float* src = x + xoff;
          if (!d.pointwise) {
            im2col(d.w, src, d.cg, col.data<float>(), split.inner);
            src = col.data<float>();
          }
          gemm({.m = d.mg, .n = rows, .k = d.out, .tb = true}, 1.0f, dyg, src, 1.0f, dws.part(part) + g * d.mg * rows, split.inner);
        }
        if (dx) {  // dX[n,g] = col2im(W_gᵀ · dY[n,g])
          float* dst = d.pointwise ? dx + xoff : col.data<float>();
          gemm({.m = rows, .n = d.out, .k = d.mg, .ta = true}, 1.0f, wt + g * d.mg * rows, dyg, 0.0f, dst, split.inner);
          if (!d.pointwise) col2im(d.w, dst, d.cg, dx + xoff, split.inner);
        }
      }
    }
  });
  dws.sum(c.ctx.threads);
}

// ---- ConvTranspose

struct TransposeDims {
  Window w;  // from Y's positions (w.in) to X's (w.out)
  int64_t n, c, m, g, cg, mg, k, xpos, ypos;
  bool pointwise;
};

// Padding of Y: the pads attribute, or with output_shape or auto_pad SAME_* (ONNX) the total
// stride·(in-1) + output_padding + dilation·(k-1) + 1 - out split evenly, the odd unit at the end
// for SAME_UPPER and at the start otherwise.
TransposeDims transpose_dims(const Node& node, const Shape& x, const Shape& wt, const Shape& y) {
  const size_t r = x.size() - 2;
  Shape kernel(wt.begin() + 2, wt.end());
  auto stride = ints_or(node, "strides", 1, r), dil = ints_or(node, "dilations", 1, r),
       outpad = ints_or(node, "output_padding", 0, r), pads = ints_or(node, "pads", 0, 2 * r);
  std::string auto_pad = node.attr_string("auto_pad", "NOTSET");
  auto given = node.attr_ints("output_shape");
  bool split = (given && given->size() == r) || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  std::vector<int64_t> pad(r), pad_end(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t total = stride[i] * (x[2 + i] - 1) + outpad[i] + dil[i] * (kernel[i] - 1) + 1 - y[2 + i];
    pad[i] = !split ? pads[i] : auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
    pad_end[i] = total - pad[i];
  }
  TransposeDims d{};
  d.w = make_window(node, Shape(y.begin() + 2, y.end()), Shape(x.begin() + 2, x.end()), kernel, pad, pad_end);
  d.n = x[0];
  d.c = x[1];
  d.g = node.attr_int("group", 1);
  d.mg = wt[1];
  d.m = d.mg * d.g;
  d.cg = d.c / d.g;
  d.k = d.w.kernel_size();
  d.xpos = d.w.out_size();
  d.ypos = d.w.in_size();
  d.pointwise = is_pointwise(d.w);
  return d;
}

void conv_transpose_forward(const OpCall& c) {
  require_f32(c);
  const Array& x = *c.in[0];
  const Array& wt = *c.in[1];
  Array& y = *c.out[0];
  const TransposeDims d = transpose_dims(c.node, x.shape(), wt.shape(), y.shape());
  const float *px = x.data<float>(), *pw = wt.data<float>();
  const float* bias = bias_of(c);
  float* py = y.data<float>();
  const int64_t rows = d.mg * d.k;
  const ImageSplit split = split_images(d.n, c.ctx.threads);
  for_parts(split, c.ctx.threads, [&](int64_t, int64_t first, int64_t end) {
    Array col = d.pointwise ? Array() : transient({rows, d.xpos}, c.ctx);
    for (int64_t n = first; n < end; ++n) {
      for (int64_t g = 0; g < d.g; ++g) {
        float* yg = py + (n * d.m + g * d.mg) * d.ypos;
        float* dst = d.pointwise ? yg : col.data<float>();
        gemm({.m = rows, .n = d.xpos, .k = d.cg, .ta = true}, 1.0f, pw + g * d.cg * rows, px + (n * d.c + g * d.cg) * d.xpos, 0.0f,
             dst, split.inner);
        if (!d.pointwise) col2im(d.w, dst, d.mg, yg, split.inner);
        for (int64_t m = 0; bias && m < d.mg; ++m) VectorMap(yg + m * d.ypos, d.ypos).array() += bias[g * d.mg + m];
      }
    }
  });
}

void conv_transpose_backward(const GradCall& c) {
  const TransposeDims d = transpose_dims(c.node, c.in_shapes[0], c.in_shapes[1], c.dout[0]->shape());
  const float* dy = c.dout[0]->data<float>();
  float* dx = c.din[0] ? c.din[0]->data<float>() : nullptr;
  float* dw = c.din[1] ? c.din[1]->data<float>() : nullptr;
  const float* x = dw ? c.in[0]->data<float>() : nullptr;
  const float* wt = dx ? c.in[1]->data<float>() : nullptr;
  if (c.din.size() > 2 && c.din[2]) bias_grad(dy, d.n, d.m, d.ypos, c.din[2]->data<float>(), c.ctx.threads);
  if (!dx && !dw) return;
  const int64_t rows = d.mg * d.k;
  const ImageSplit split = split_images(d.n, c.ctx.threads);
  PartSums dws(dw, dw ? c.din[1]->numel() : 0, dw ? split.parts : 1, c.ctx);
  std::vector<Array> cols(static_cast<size_t>(split.parts));  // as in conv_backward
  if (!d.pointwise) for (Array& col : cols) col = transient({rows, d.xpos}, c.ctx);
  for_parts(split, c.ctx.threads, [&](int64_t part, int64_t first, int64_t end) {
    Array& col = cols[static_cast<size_t>(part)];
    for (int64_t n = first; n < end; ++n) {
      for (int64_t g = 0; g < d.g; ++g) {
        const float* src = dy + (n * d.m + g * d.mg) * d.ypos;
        if (!d.pointwise) {
          im2col(d.w, src, d.mg, col.data<float>(), split.inner);
          src = col.data<float>();
        }
        const int64_t xoff = (n * d.c + g * d.cg) * d.xpos;
        if (dx) gemm({.m = d.cg, .n = d.xpos, .k = rows}, 1.0f, wt + g * d.cg * rows, src, 0.0f, dx + xoff, split.inner);
        if (dw) {
          gemm({.m = d.cg, .n = rows, .k = d.xpos, .tb = true}, 1.0f, x + xoff, src, 1.0f, dws.part(part) + g * d.cg * rows,
               split.inner);
        }
      }
    }
  });
  dws.sum(c.ctx.threads);
}

}  // namespace

void register_conv(KernelTable& table) {
  table["Conv"] = {conv_forward, conv_backward};
  table["ConvTranspose"] = {conv_transpose_forward, conv_transpose_backward};
}

}  // namespace tensoropt::runtime::cpu
