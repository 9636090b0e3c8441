// CPU kernels of graph/ops/resample.cc (see kernels.h): Resize and Upsample, DepthToSpace and
// SpaceToDepth.
//
// Resize and Upsample as ../resample_plan.h maps them: nearest gathers the plan's index maps (any
// dtype) and scatter-adds dout back; linear and cubic apply the plan's taps one axis at a time
// (float32), backward the transpose of each pass in reverse order.
//
// Shapes legend: [pre, in, post] around the resized axis, out = its output size.
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <cstring>
#include <string>

#include "launcher/runtime/cpu/kernels.h"
#include "launcher/runtime/cpu/movement_copy.h"
#include "launcher/runtime/cpu/movement_kernels.h"
#include "launcher/runtime/resample_plan.h"
#include "launcher/runtime/cpu/util.h"

namespace tensoropt::runtime::cpu {
namespace {

using resample::AxisTaps;
using resample::ResizeSpec;
using resample::interp_taps;

// The plan's spec, the scales input's values read here.
ResizeSpec resize_spec(const Node& n, const Shape& in, const Shape& out, const Array* scales, const Array* sizes) {
  std::vector<double> values;
  for (int64_t a = 0; scales && a < scales->numel(); ++a) {
    values.push_back(scales->dtype() == DType::F64 ? scales->data<double>()[a] : scales->data<float>()[a]);
  }
  return resample::resize_spec(n, in, out, scales ? &values : nullptr, sizes && sizes->numel() > 0);
}

// ---- nearest: the plan's index maps over the input (gather_axes, any dtype), scattered back.
AxisMaps nearest_axis_maps(const ResizeSpec& r, const Shape& in, const Shape& out) { return {in, resample::nearest_maps(r, in, out)}; }

// dst[p, o, q] = sum_k weight[o, k] src[p, index[o, k], q].
void interp_axis(const float* src, float* dst, int64_t pre, int64_t post, const AxisTaps& t, int threads) {
  const int64_t grain = std::max<int64_t>(1, 4096 / std::max<int64_t>(post, 1));
  parallel_for(pre * t.out, grain, threads, [&](int64_t lo, int64_t hi) {
    for (int64_t row = lo; row < hi; ++row) {
      int64_t p = row / t.out, o = row % t.out;
      float* d = dst + row * post;
      std::fill(d, d + post, 0.0f);
      for (int64_t k = 0; k < t.taps; ++k) {
        auto tk = static_cast<size_t>(o * t.taps + k);
        const float* s = src + (p * t.in + t.index[tk]) * post;
        const float w = t.weight[tk];
        for (int64_t q = 0; q < post; ++q) d[q] += w * s[q];
      }
    }
  });
}

// The transpose: dsrc[p, i, q] = sum over (o, k) with index[o, k] = i of weight[o, k] dout[p, o, q].
// Threads split p, or q when there are few p, so no two add into one element.
void interp_axis_backward(const float* dout, float* dsrc, int64_t pre, int64_t post, const AxisTaps& t, int threads) {
  std::fill(dsrc, dsrc + pre * t.in * post, 0.0f);
  const int64_t chunks = pre >= threads || post < 256 ? 1 : threads, width = (post + chunks - 1) / chunks;
  parallel_for(pre * chunks, 1, threads, [&](int64_t lo, int64_t hi) {
    for (int64_t it = lo; it < hi; ++it) {
      int64_t p = it / chunks, q0 = (it % chunks) * width, q1 = std::min(post, q0 + width);
      for (int64_t o = 0; o < t.out; ++o) {
        const float* s = dout + (p * t.out + o) * post;
        for (int64_t k = 0; k < t.taps; ++k) {
          auto tk = static_cast<size_t>(o * t.taps + k);
          float* d = dsrc + (p * t.in + t.index[tk]) * post;
          const float w = t.weight[tk];
          for (int64_t q = q0; q < q1; ++q) d[q] += w * s[q];
        }
      }
    }
  });
}

void resize_forward(const OpCall& c) {
  // Scales are input 1 of Upsample, 2 of Resize; sizes input 3 of Resize.
  const int scales = c.node.op_type == "Upsample" ? 1 : 2;
  keep_inputs(c, {scales, 3});
  const Array& x = *c.in[0];
  Array& y = *c.out[0];
  ResizeSpec r = resize_spec(c.node, x.shape(), y.shape(), optional_input(c, scales), optional_input(c, 3));
  if (r.mode == "nearest") {
    AxisMaps m = nearest_axis_maps(r, x.shape(), y.shape());
    gather_axes(m, x.raw(), y.raw(), dtype_size(x.dtype()), /*fill=*/nullptr, c.ctx.threads);
    return;
  }
  if (x.dtype() != DType::F32) kernel_error(c.node, "mode '" + r.mode + "' needs float32 data");
  std::vector<AxisTaps> passes = interp_taps(r, x.shape(), y.shape());
  if (passes.empty()) {
    copy_rows(x.raw(), 0, y.raw(), 0, 1, x.bytes(), c.ctx.threads);
    return;
  }
  Array cur = x;
  for (size_t k = 0; k < passes.size(); ++k) {
    const AxisTaps& t = passes[k];
    Shape next_shape = cur.shape();
    next_shape[static_cast<size_t>(t.axis)] = t.out;
    Array next = k + 1 == passes.size() ? y : Array(DType::F32, next_shape, *c.ctx.allocator, MemoryKind::Transients);
    const int64_t pre = outer_of(cur.shape(), t.axis), post = inner_of(cur.shape(), t.axis);
    interp_axis(cur.data<float>(), next.data<float>(), pre, post, t, c.ctx.threads);
    cur = next;
  }
}

void resize_backward(const GradCall& c) {
  const Array& dy = *c.dout[0];
  Array& dx = *c.din[0];
  ResizeSpec r = resize_spec(c.node, dx.shape(), dy.shape(), kept(c, 0), kept(c, 1));
  if (r.mode == "nearest") {
    scatter_add_axes(nearest_axis_maps(r, dx.shape(), dy.shape()), dy.data<float>(), dx.data<float>(), c.ctx.threads);
    return;
  }
  std::vector<AxisTaps> passes = interp_taps(r, dx.shape(), dy.shape());
  if (passes.empty()) {
    copy_rows(dy.raw(), 0, dx.raw(), 0, 1, dy.bytes(), c.ctx.threads);
    return;
  }
  // The input shape of each pass, then the passes' transposes from the last to the first.
  std::vector<Shape> shapes{dx.shape()};
  for (const AxisTaps& t : passes) {
    shapes.push_back(shapes.back());
    shapes.back()[static_cast<size_t>(t.axis)] = t.out;
  }
  Array g = dy;
  for (size_t k = passes.size(); k-- > 0;) {
    const AxisTaps& t = passes[k];
    Array prev = k == 0 ? dx : Array(DType::F32, shapes[k], *c.ctx.allocator, MemoryKind::Transients);
    const int64_t pre = outer_of(shapes[k], t.axis), post = inner_of(shapes[k], t.axis);
    interp_axis_backward(g.data<float>(), prev.data<float>(), pre, post, t, c.ctx.threads);
    g = prev;
  }
}

// ---- DepthToSpace(x; blocksize b, mode) [N, C, H, W] -> [N, C/b², H b, W b] and SpaceToDepth
// [N, C, H, W] -> [N, C b², H/b, W/b]: a transpose of a reshaped view,
//   DepthToSpace DCR (default)  [N, b, b, C/b², H, W] perm (0, 3, 4, 1, 5, 2)
//   DepthToSpace CRD            [N, C/b², b, b, H, W] perm (0, 1, 4, 2, 5, 3)
//   SpaceToDepth                [N, C, H/b, b, W/b, b] perm (0, 3, 5, 1, 2, 4)
// dx = dout transposed back by the inverse permutation.
struct BlockPermutation {
  Shape view;                  // x's shape as a rank-6 view
  std::vector<int64_t> perm;
};

BlockPermutation block_permutation(const Node& n, const Shape& x) {
  const int64_t b = n.attr_int("blocksize", 0), N = x[0], C = x[1], H = x[2], W = x[3];
  if (n.op_type == "SpaceToDepth") return {{N, C, H / b, b, W / b, b}, {0, 3, 5, 1, 2, 4}};
  std::string mode = n.attr_string("mode", "DCR");
  if (mode == "DCR") return {{N, b, b, C / (b * b), H, W}, {0, 3, 4, 1, 5, 2}};
  if (mode == "CRD") return {{N, C / (b * b), b, b, H, W}, {0, 1, 4, 2, 5, 3}};
  kernel_error(n, "mode '" + mode + "' is not supported");
}

void depth_space_forward(const OpCall& c) {
  const Array& x = *c.in[0];
  BlockPermutation p = block_permutation(c.node, x.shape());
  permute(x.raw(), p.view, p.perm, c.out[0]->raw(), dtype_size(x.dtype()), c.ctx.threads);
}

void depth_space_backward(const GradCall& c) {
  BlockPermutation p = block_permutation(c.node, c.din[0]->shape());
  Shape permuted(p.perm.size());
  std::vector<int64_t> inv(p.perm.size());
  for (size_t j = 0; j < p.perm.size(); ++j) {
    permuted[j] = p.view[static_cast<size_t>(p.perm[j])];
    inv[static_cast<size_t>(p.perm[j])] = static_cast<int64_t>(j);
  }
  permute(c.dout[0]->raw(), permuted, inv, c.din[0]->raw(), dtype_size(c.din[0]->dtype()), c.ctx.threads);
}

}  // namespace

void register_resample(KernelTable& table) {
  table["Resize"] = {resize_forward, resize_backward};
  table["Upsample"] = {resize_forward, resize_backward};
  table["DepthToSpace"] = {depth_space_forward, depth_space_backward};
  table["SpaceToDepth"] = {depth_space_forward, depth_space_backward};
}

}  // namespace tensoropt::runtime::cpu
