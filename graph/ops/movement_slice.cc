// Slice and Pad: a window of the input, or the input inside a border (movement.h).
#include <algorithm>
#include <numeric>

#include "graph/ops/movement.h"

namespace tensoropt::ops {
namespace {

// Slice parameters per input axis, after clamping: start, step, count.
struct SliceAxis {
  int64_t start = 0, step = 1, count = 0;
  bool sliced = false;
};

std::vector<SliceAxis> slice_axes(const OpView& v) {
  const Shape& in = v.in_shape(0);
  std::vector<int64_t> starts, ends, axes, steps;
  if (v.node.attr_ints("starts")) {  // opset < 10
    starts = *v.node.attr_ints("starts");
    ends = v.node.attr_ints("ends").value_or(std::vector<int64_t>{});
    axes = v.node.attr_ints("axes").value_or(std::vector<int64_t>{});
  } else {
    starts = v.in_ints(1, "starts");
    ends = v.in_ints(2, "ends");
    if (v.has_input(3)) axes = v.in_ints(3, "axes");
    if (v.has_input(4)) steps = v.in_ints(4, "steps");
  }
  if (ends.size() != starts.size()) throw OpError("starts and ends differ in length");
  if (axes.empty()) for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size()) throw OpError("axes or steps differ in length from starts");
  std::vector<SliceAxis> r(in.size());
  for (size_t a = 0; a < in.size(); ++a) r[a].count = in[a];
  for (size_t i = 0; i < starts.size(); ++i) {
    int ax = norm_axis(axes[i], static_cast<int>(in.size()), "axis");
    int64_t dim = in[static_cast<size_t>(ax)], step = steps[i];
    if (step == 0) throw OpError("step is zero");
    auto clampi = [](int64_t x, int64_t lo, int64_t hi) { return std::max(lo, std::min(x, hi)); };
    int64_t s = starts[i] < 0 ? starts[i] + dim : starts[i];
    int64_t e = ends[i] < 0 ? ends[i] + dim : ends[i];
    int64_t n;
    if (step > 0) {
      s = clampi(s, 0, dim);
      e = clampi(e, 0, dim);
      n = e > s ? (e - s + step - 1) / step : 0;
    } else {
      s = clampi(s, 0, dim - 1);
      e = clampi(e, -1, dim - 1);
      n = s > e ? (s - e + (-step) - 1) / (-step) : 0;
    }
    SliceAxis& sa = r[static_cast<size_t>(ax)];
    if (sa.sliced) throw OpError("axis " + std::to_string(axes[i]) + " repeated");
    sa = {s, step, n, true};
  }
  return r;
}

std::vector<int64_t> pads_of(const OpView& v) {
  size_t r = v.in_shape(0).size();
  std::vector<int64_t> pads = v.node.attr_ints("pads") ? *v.node.attr_ints("pads") : v.in_ints(1, "pads");
  if (v.has_input(3)) {  // opset 18: axes
    auto axes = v.in_ints(3, "axes");
    if (pads.size() != 2 * axes.size()) throw OpError("pads and axes differ in length");
    std::vector<int64_t> full(2 * r, 0);
    for (size_t i = 0; i < axes.size(); ++i) {
      auto a = static_cast<size_t>(norm_axis(axes[i], static_cast<int>(r), "axis"));
      full[a] = pads[i];
      full[a + r] = pads[i + axes.size()];
    }
    pads = full;
  }
  if (pads.size() != 2 * r) throw OpError("pads has " + std::to_string(pads.size()) + " values for rank " + std::to_string(r));
  return pads;
}

OpDef slice_op() {
  OpDef d = movement("Slice", {1, 2, 3, 4});
  d.infer = [](const OpView& v) {
    auto sa = slice_axes(v);
    Shape out;
    for (const auto& a : sa) out.push_back(a.count);
    return std::vector<OutType>{{v.in(0).dtype, out}};
  };
  d.fold = [](const OpView& v) {
    auto sa = slice_axes(v);
    std::vector<int64_t> src;
    return std::vector<Value>{gather_fold(*v.in_value(0), v.in(0).dtype, v.out(0).shape, [&](const std::vector<int64_t>& idx) {
      src = idx;
      for (size_t a = 0; a < sa.size(); ++a) src[a] = sa[a].start + idx[a] * sa[a].step;
      return linear(src, v.in_shape(0));
    })};
  };
  d.space = [](const OpView& v) {
    auto sa = slice_axes(v);
    const Shape& in = v.in_shape(0);
    std::vector<DimRole> roles(sa.size(), DimRole::Parallel);
    std::vector<int> ia = iota_axes(sa.size());
    for (size_t a = 0; a < sa.size(); ++a) {
      if (sa[a].count != in[a]) {
        roles[a] = DimRole::Fixed;
        ia[a] = -1;
      }
    }
    return axes_space(v.out(0).shape, roles, {ia, {}, {}, {}, {}});
  };
  return d;
}

OpDef pad_op() {
  OpDef d = movement("Pad", {1, 2, 3});
  d.infer = [](const OpView& v) {
    std::string mode = v.node.attr_string("mode", "constant");
    if (mode != "constant" && mode != "reflect" && mode != "edge") throw OpError("unknown mode '" + mode + "'");
    auto pads = pads_of(v);
    Shape out = v.in_shape(0);
    size_t r = out.size();
    for (size_t a = 0; a < r; ++a) {
      out[a] = add_checked(out[a], add_checked(pads[a], pads[a + r]));
      if (out[a] < 0) throw OpError("pads remove more than the axis holds");
    }
    return std::vector<OutType>{{v.in(0).dtype, out}};
  };
  d.space = [](const OpView& v) {
    auto pads = pads_of(v);
    const Shape& out = v.out(0).shape;
    std::vector<DimRole> roles(out.size(), DimRole::Parallel);
    std::vector<int> ia = iota_axes(out.size());
    for (size_t a = 0; a < out.size(); ++a) {
      if (pads[a] != 0 || pads[a + out.size()] != 0) {
        roles[a] = DimRole::Fixed;
        ia[a] = -1;
      }
    }
    return axes_space(out, roles, {ia, {}, {}, {}});
  };
  return d;
}

}  // namespace


void register_movement_slices(std::vector<OpDef>& ops) {
  ops.push_back(slice_op());
  ops.push_back(pad_op());
}

}  // namespace tensoropt::ops
