// Geometry of the windowed ops: Conv, ConvTranspose (linear_conv.cc) and the pools (pool.cc).
// One to three spatial axes, padded to three with unit axes in front (in = out = kernel = 1,
// stride = dilation = 1, no padding), so one loop nest serves every rank.
//
// Output position o along an axis reads input positions i = o·stride - pad + j·dilation for
// kernel offsets j in [0, kernel); positions outside [0, in) are padding.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include <Eigen/Core>

#include "graph/ir.h"

namespace tensoropt::runtime::cpu {

struct Window {
  using Axes = std::array<int64_t, 3>;
  Axes in{1, 1, 1}, out{1, 1, 1}, kernel{1, 1, 1}, stride{1, 1, 1}, dilation{1, 1, 1};
  Axes pad{0, 0, 0}, pad_end{0, 0, 0};  // padding before and after each input axis
  int64_t in_size() const { return in[0] * in[1] * in[2]; }
  int64_t out_size() const { return out[0] * out[1] * out[2]; }
  int64_t kernel_size() const { return kernel[0] * kernel[1] * kernel[2]; }
};

// Attribute `key` of `n` values, or n copies of `fill` when absent.
std::vector<int64_t> ints_or(const Node& node, const char* key, int64_t fill, size_t n);

// A window over spatial sizes `in` -> `out` (strides and dilations from the node's attributes)
// with the given pads. kernel_error when there are more than three spatial axes.
Window make_window(const Node& node, const Shape& in, const Shape& out, const Shape& kernel,
                   const std::vector<int64_t>& pad, const std::vector<int64_t>& pad_end);

// Conv and pooling: X [N, C, in...] -> Y [N, M, out...] (the inferred output shape). Padding
// from auto_pad: SAME_UPPER / SAME_LOWER split the total the output needs, the odd unit after
// (UPPER) or before (LOWER); VALID none; NOTSET the pads attribute.
Window conv_window(const Node& node, const Shape& x, const Shape& y, const Shape& kernel);

// Output positions o in [0, out) of one axis whose input position o·stride + base is inside
// [0, in), as [lo, hi).
inline std::pair<int64_t, int64_t> inside(int64_t base, int64_t stride, int64_t in, int64_t out) {
  auto up = [stride](int64_t a) { return a <= 0 ? int64_t{0} : (a + stride - 1) / stride; };
  int64_t lo = std::min(up(-base), out), hi = std::min(up(in - base), out);
  return {lo, std::max(lo, hi)};
}

// The loop nest of every windowed kernel, for kernel offset `kidx` (row-major over the kernel):
// fn(orow, irow, lo, hi) once per output row (d, h) whose input row is inside the input, where
// output element orow + w reads input element irow + w·stride[2] for w in [lo, hi) (irow folds in
// the width offset, so it may be negative; every element read is inside).
template <typename Fn>
void for_rows(const Window& w, int64_t kidx, Fn&& fn) {
  const int64_t kw = kidx % w.kernel[2], kh = kidx / w.kernel[2] % w.kernel[1], kd = kidx / (w.kernel[2] * w.kernel[1]);
  const int64_t b0 = kd * w.dilation[0] - w.pad[0], b1 = kh * w.dilation[1] - w.pad[1], b2 = kw * w.dilation[2] - w.pad[2];
  auto [d0, d1] = inside(b0, w.stride[0], w.in[0], w.out[0]);
  auto [h0, h1] = inside(b1, w.stride[1], w.in[1], w.out[1]);
  auto [w0, w1] = inside(b2, w.stride[2], w.in[2], w.out[2]);
  if (w0 >= w1) return;
  for (int64_t od = d0; od < d1; ++od) {
    const int64_t id = od * w.stride[0] + b0;
    for (int64_t oh = h0; oh < h1; ++oh) {
      const int64_t ih = oh * w.stride[1] + b1;
      fn((od * w.out[1] + oh) * w.out[2], (id * w.in[1] + ih) * w.in[2] + b2, w0, w1);
    }
  }
}

// fn(v) with v an Eigen vector view of p[0], p[stride], ... (n elements): a plain (vectorised)
// map when stride is 1. T is float or const float.
template <typename T, typename Fn>
void strided(T* p, int64_t n, int64_t stride, Fn&& fn) {
  using V = std::conditional_t<std::is_const_v<T>, const Eigen::VectorXf, Eigen::VectorXf>;
  if (stride == 1) fn(Eigen::Map<V>(p, n));
  else fn(Eigen::Map<V, 0, Eigen::InnerStride<>>(p, n, Eigen::InnerStride<>(stride)));
}

}  // namespace tensoropt::runtime::cpu
