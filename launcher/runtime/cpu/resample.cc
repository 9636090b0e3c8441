// CPU kernels of graph/ops/resample.cc (see kernels.h): Resize and Upsample, DepthToSpace and
// SpaceToDepth.
//
// Resize (opset 11-17) maps output position x of each axis to a source coordinate
//   half_pixel (default)  (x + 0.5) / s - 0.5     pytorch_half_pixel  the same, 0 when out = 1
//   align_corners         x (in - 1) / (out - 1)  asymmetric          x / s
//   tf_half_pixel_for_nn  (x + 0.5) / s
// with s the axis' scale (the `scales` input, or out / in when `sizes` is given), then
//   nearest  reads the source rounded by nearest_mode (round_prefer_floor, round_prefer_ceil,
//            floor, ceil), clamped to [0, in); any dtype. dx scatter-adds dout back.
//   linear   weights the 2 neighbours floor(c), floor(c) + 1 by 1 - f, f (f = c - floor(c)),
//   cubic    the 4 neighbours floor(c) - 1 .. floor(c) + 2 by Keys' cubic with a = cubic_coeff_a;
//            exclude_outside zeroes the weights of neighbours outside the axis and renormalises;
//            neighbours outside read the edge element (the ONNX reference pads by 'edge').
//            float32; applied one axis at a time (separable), backward is the transpose of each
//            pass in reverse order.
// Upsample (opset 7-9) is Resize with asymmetric coordinates; nearest rounds down (scales >= 1).
// tf_crop_and_resize, antialias, axes and keep_aspect_ratio_policy other than stretch (opset 18)
// are refused.
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
#include "launcher/runtime/cpu/util.h"

namespace tensoropt::runtime::cpu {
namespace {

struct ResizeSpec {
  std::string mode, coord, nearest;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  std::vector<double> scales;  // per axis
};

ResizeSpec resize_spec(const Node& n, const Shape& in, const Shape& out, const Array* scales, const Array* sizes) {
  ResizeSpec r;
  const bool upsample = n.op_type == "Upsample";
  r.mode = n.attr_string("mode", "nearest");
  r.coord = upsample ? "asymmetric" : n.attr_string("coordinate_transformation_mode", "half_pixel");
  r.nearest = upsample ? "floor" : n.attr_string("nearest_mode", "round_prefer_floor");
  r.cubic_a = n.attr_float("cubic_coeff_a", -0.75);
  r.exclude_outside = n.attr_int("exclude_outside", 0) != 0;
  auto one_of = [](const std::string& v, std::initializer_list<const char*> allowed) {
    return std::find(allowed.begin(), allowed.end(), v) != allowed.end();
  };
  if (!one_of(r.mode, {"nearest", "linear", "cubic"}) || (upsample && r.mode == "cubic")) {
    kernel_error(n, "mode '" + r.mode + "' is not supported");
  }
  if (!one_of(r.coord, {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn"})) {
    kernel_error(n, "coordinate_transformation_mode '" + r.coord + "' is not supported");
  }
  if (!one_of(r.nearest, {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"})) {
    kernel_error(n, "nearest_mode '" + r.nearest + "' is not supported");
  }
  if (n.attr_int("antialias", 0) != 0 || n.attr("axes") ||
      n.attr_string("keep_aspect_ratio_policy", "stretch") != "stretch") {
    kernel_error(n, "antialias, axes and keep_aspect_ratio_policy (opset 18) are not supported");
  }
  if (sizes && sizes->numel() > 0) {
    for (size_t a = 0; a < in.size(); ++a) r.scales.push_back(static_cast<double>(out[a]) / static_cast<double>(in[a]));
  } else if (scales) {
    for (int64_t a = 0; a < scales->numel(); ++a) {
      r.scales.push_back(scales->dtype() == DType::F64 ? scales->data<double>()[a] : scales->data<float>()[a]);
    }
  } else if (const Attribute* a = n.attr("scales")) {
    r.scales = a->floats;  // Upsample-7
  } else {
    kernel_error(n, "no scales");
  }
  for (size_t a = 0; a < in.size(); ++a) {
    if (upsample && r.mode == "nearest" && r.scales[a] < 1) {
      kernel_error(n, "Upsample nearest with a scale below 1 is not supported");
    }
  }
  return r;
}

double source_coord(const ResizeSpec& r, int64_t x, double scale, int64_t in, int64_t out) {
  const auto xd = static_cast<double>(x);
  if (r.coord == "align_corners") {
    return out == 1 ? 0.0 : xd * static_cast<double>(in - 1) / static_cast<double>(out - 1);
  }
  if (r.coord == "asymmetric") return xd / scale;
  if (r.coord == "tf_half_pixel_for_nn") return (xd + 0.5) / scale;
  if (r.coord == "pytorch_half_pixel" && out == 1) return 0.0;
  return (xd + 0.5) / scale - 0.5;
}

int64_t nearest_index(const ResizeSpec& r, double c, int64_t in) {
  double f = std::floor(c), frac = c - f;
  double v = r.nearest == "floor" ? f
           : r.nearest == "ceil" ? std::ceil(c)
           : r.nearest == "round_prefer_ceil" ? (frac < 0.5 ? f : f + 1)
           : (frac <= 0.5 ? f : f + 1);
  return std::clamp<int64_t>(static_cast<int64_t>(v), 0, in - 1);
}

// ---- nearest: an index map per axis (gather_axes, any dtype), scatter_add_axes back.
AxisMaps nearest_maps(const ResizeSpec& r, const Shape& in, const Shape& out) {
  AxisMaps m{in, {}};
  for (size_t a = 0; a < in.size(); ++a) {
    std::vector<int64_t> map(static_cast<size_t>(out[a]));
    for (int64_t x = 0; x < out[a]; ++x) {
      map[static_cast<size_t>(x)] = nearest_index(r, source_coord(r, x, r.scales[a], in[a], out[a]), in[a]);
    }
    m.map.push_back(std::move(map));
  }
  return m;
}

// ---- linear and cubic: per axis, `taps` source indices and weights for each output position.
struct AxisTaps {
  int axis = 0;
  int64_t taps = 0, in = 0, out = 0;
  std::vector<int64_t> index;  // [out, taps], clamped to [0, in)
  std::vector<float> weight;   // [out, taps]
};

std::vector<double> tap_weights(const ResizeSpec& r, double f) {
  if (r.mode == "linear") return {1 - f, f};
  const double A = r.cubic_a, g = 1 - f;
  return {((A * (f + 1) - 5 * A) * (f + 1) + 8 * A) * (f + 1) - 4 * A, ((A + 2) * f - (A + 3)) * f * f + 1,
          ((A + 2) * g - (A + 3)) * g * g + 1, ((A * (g + 1) - 5 * A) * (g + 1) + 8 * A) * (g + 1) - 4 * A};
}

// The axes whose output is not a plain copy of the input, with their taps.
std::vector<AxisTaps> interp_taps(const ResizeSpec& r, const Shape& in, const Shape& out) {
  std::vector<AxisTaps> axes;
  for (size_t a = 0; a < in.size(); ++a) {
    AxisTaps t{static_cast<int>(a), r.mode == "linear" ? 2 : 4, in[a], out[a], {}, {}};
    bool identity = in[a] == out[a];
    for (int64_t x = 0; x < out[a]; ++x) {
      double c = source_coord(r, x, r.scales[a], in[a], out[a]), fl = std::floor(c);
      std::vector<double> w = tap_weights(r, c - fl);
      auto first = static_cast<int64_t>(fl) - (t.taps == 4 ? 1 : 0);
      double total = 0;
      for (int64_t k = 0; k < t.taps; ++k) {
        int64_t i = first + k;
        if (r.exclude_outside && (i < 0 || i >= in[a])) w[static_cast<size_t>(k)] = 0;
        total += w[static_cast<size_t>(k)];
      }
      for (int64_t k = 0; k < t.taps; ++k) {
        double wk = r.exclude_outside ? w[static_cast<size_t>(k)] / total : w[static_cast<size_t>(k)];
        int64_t i = std::clamp<int64_t>(first + k, 0, in[a] - 1);
        t.index.push_back(i);
        t.weight.push_back(static_cast<float>(wk));
        identity = identity && (wk == 0 || (wk == 1 && i == x));
      }
    }
    if (!identity) axes.push_back(std::move(t));
  }
  return axes;
}

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
    AxisMaps m = nearest_maps(r, x.shape(), y.shape());
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
    scatter_add_axes(nearest_maps(r, dx.shape(), dy.shape()), dy.data<float>(), dx.data<float>(), c.ctx.threads);
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
