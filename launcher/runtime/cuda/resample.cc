// CUDA kernels of graph/ops/resample.cc, host side, as cpu/resample.cc (which states the maths):
// Resize and Upsample, DepthToSpace and SpaceToDepth.
//   nearest          an index map per axis built on the host (movement.h's gather_maps, any
//                    dtype); dx sums dout back through it (scatter_maps).
//   linear, cubic    per resized axis, the taps (source index, weight) of every output position
//                    built on the host in double as the CPU kernel's, then one weighted segmented
//                    sum per axis (float32); backward is the transpose of each pass, last first.
//   DepthToSpace, SpaceToDepth  a permutation of a rank-6 view; dx the inverse permutation.
// The scales input is downloaded (the sizes input decides by its presence alone). Refused as the
// CPU kernel refuses: tf_crop_and_resize, antialias, axes, keep_aspect_ratio_policy.
//
// Shapes legend: [pre, in, post] around the resized axis, out = its output size.
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <string>

#include "launcher/runtime/cpu/movement_kernels.h"
#include "launcher/runtime/resample_plan.h"
#include "launcher/runtime/cuda/movement.h"

namespace tensoropt::runtime::cuda {
namespace {

using cpu::inner_of;
using cpu::kept;
using cpu::keep_inputs;
using cpu::optional_input;
using cpu::outer_of;

using resample::AxisTaps;
using resample::ResizeSpec;
using resample::interp_taps;

// The plan's spec, the scales input's values downloaded.
ResizeSpec resize_spec(CudaBackend& be, const Node& n, const Shape& in, const Shape& out, const Array* scales, const Array* sizes) {
  const std::vector<double> values = scales ? host_reals(be, scales) : std::vector<double>{};
  return resample::resize_spec(n, in, out, scales ? &values : nullptr, sizes && sizes->numel() > 0);
}

// ---- nearest: the plan's index maps over the input (gather_axes, any dtype), scattered back.
AxisMaps nearest_axis_maps(const ResizeSpec& r, const Shape& in, const Shape& out) { return {in, resample::nearest_maps(r, in, out)}; }

// The entries of one pass: forward, output position o sums weight * src[index]; backward (the
// transpose), source position index sums weight * dout[o]. Entries in (o, tap) order, as the CPU.
Segments taps_segments(const AxisTaps& t, bool backward) {
  Segments s;
  for (int64_t o = 0; o < t.out; ++o) {
    for (int64_t k = 0; k < t.taps; ++k) {
      const auto e = static_cast<size_t>(o * t.taps + k);
      s.src_row.push_back(backward ? o : t.index[e]);
      s.target.push_back(backward ? t.index[e] : o);
      s.weight.push_back(t.weight[e]);
    }
  }
  return s;
}

void resize_forward(CudaBackend& be, const OpCall& c) {
  // Scales are input 1 of Upsample, 2 of Resize; sizes input 3 of Resize.
  const int scales = c.node.op_type == "Upsample" ? 1 : 2;
  keep_inputs(c, {scales, 3});
  const Array& x = *c.in[0];
  Array& y = *c.out[0];
  const ResizeSpec r = resize_spec(be, c.node, x.shape(), y.shape(), optional_input(c, scales), optional_input(c, 3));
  if (r.mode == "nearest") {
    gather_maps(be, c.ctx, c.node, nearest_axis_maps(r, x.shape(), y.shape()), x, y);
    return;
  }
  if (x.dtype() != DType::F32) kernel_error(c.node, "mode '" + r.mode + "' needs float32 data");
  const std::vector<AxisTaps> passes = interp_taps(r, x.shape(), y.shape());
  if (passes.empty()) {
    copy_all(be, x, y, c.node.op_type);
    return;
  }
  Array cur = x;
  for (size_t k = 0; k < passes.size(); ++k) {
    const AxisTaps& t = passes[k];
    Shape next_shape = cur.shape();
    next_shape[static_cast<size_t>(t.axis)] = t.out;
    Array next = k + 1 == passes.size() ? y : Array(DType::F32, next_shape, *c.ctx.allocator, MemoryKind::Transients);
    segment_sum(be, c.ctx, taps_segments(t, false), cur.data<float>(), next.data<float>(), outer_of(cur.shape(), t.axis), t.out, t.in,
                inner_of(cur.shape(), t.axis), c.node.op_type);
    cur = next;
  }
}

void resize_backward(CudaBackend& be, const GradCall& c) {
  const Array& dy = *c.dout[0];
  Array& dx = *c.din[0];
  require_f32(c.node, dy, "the output gradient");
  const ResizeSpec r = resize_spec(be, c.node, dx.shape(), dy.shape(), kept(c, 0), kept(c, 1));
  if (r.mode == "nearest") {
    scatter_maps(be, c.ctx, c.node, nearest_axis_maps(r, dx.shape(), dy.shape()), dy, dx);
    return;
  }
  const std::vector<AxisTaps> passes = interp_taps(r, dx.shape(), dy.shape());
  if (passes.empty()) {
    copy_all(be, dy, dx, c.node.op_type);
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
    segment_sum(be, c.ctx, taps_segments(t, true), g.data<float>(), prev.data<float>(), outer_of(shapes[k], t.axis), t.in, t.out,
                inner_of(shapes[k], t.axis), c.node.op_type);
    g = prev;
  }
}

// ---- DepthToSpace [N, C, H, W] -> [N, C/b², H b, W b] and SpaceToDepth (the inverse shape):
// a permutation of a rank-6 view, as cpu/resample.cc's block_permutation.
struct BlockPermutation {
  Shape view;
  std::vector<int64_t> perm;
};

BlockPermutation block_permutation(const Node& n, const Shape& x) {
  const int64_t b = n.attr_int("blocksize", 0), N = x[0], C = x[1], H = x[2], W = x[3];
  if (n.op_type == "SpaceToDepth") return {{N, C, H / b, b, W / b, b}, {0, 3, 5, 1, 2, 4}};
  const std::string mode = n.attr_string("mode", "DCR");
  if (mode == "DCR") return {{N, b, b, C / (b * b), H, W}, {0, 3, 4, 1, 5, 2}};
  if (mode == "CRD") return {{N, C / (b * b), b, b, H, W}, {0, 1, 4, 2, 5, 3}};
  kernel_error(n, "mode '" + mode + "' is not supported");
}

void depth_space_forward(CudaBackend& be, const OpCall& c) {
  const BlockPermutation p = block_permutation(c.node, c.in[0]->shape());
  permute(be, c.ctx, c.node, *c.in[0], p.view, p.perm, *c.out[0]);
}

void depth_space_backward(CudaBackend& be, const GradCall& c) {
  const BlockPermutation p = block_permutation(c.node, c.din[0]->shape());
  Shape permuted(p.perm.size());
  std::vector<int64_t> inv(p.perm.size());
  for (size_t j = 0; j < p.perm.size(); ++j) {
    permuted[j] = p.view[static_cast<size_t>(p.perm[j])];
    inv[static_cast<size_t>(p.perm[j])] = static_cast<int64_t>(j);
  }
  permute(be, c.ctx, c.node, *c.dout[0], permuted, inv, *c.din[0]);
}

}  // namespace

void register_resample(CudaBackend& be, KernelTable& table) {
  auto op = [&be](void (*f)(CudaBackend&, const OpCall&), void (*b)(CudaBackend&, const GradCall&)) {
    return OpKernel{[&be, f](const OpCall& c) { f(be, c); }, [&be, b](const GradCall& c) { b(be, c); }};
  };
  table["Resize"] = op(resize_forward, resize_backward);
  table["Upsample"] = op(resize_forward, resize_backward);
  table["DepthToSpace"] = op(depth_space_forward, depth_space_backward);
  table["SpaceToDepth"] = op(depth_space_forward, depth_space_backward);
}

}  // namespace tensoropt::runtime::cuda
