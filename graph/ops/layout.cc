// Data movement: Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Concat, Split, Slice, Gather,
// Pad, Expand, Tile, Trilu. None computes anything; all fold when their inputs are constants.
// N = output elements.
#include <algorithm>
#include <numeric>

#include "graph/ops/helpers.h"

namespace tensoropt::ops {
namespace {

// Copy a constant into a new shape keeping the linear order (Reshape, Flatten, Squeeze, ...).
Value relabel(const Value& in, const Shape& shape) {
  Value out = in;
  out.shape = shape;
  return out;
}

// Fold by an index map: element k of the output (shape `shape`, index `idx`) is element
// src(idx) of input 0, or the pad value when src returns -1.
template <typename Src>
Value gather_fold(const Value& in, DType t, const Shape& shape, Src src, double pad = 0) {
  Value out = make_value(t, shape);
  int64_t n = checked_numel(shape);
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t k = 0; k < n; ++k) {
    int64_t s = src(idx);
    if (s < 0) set_elem(out, k, pad, saturate_to_int64(pad));
    else set_elem(out, k, in.real(s), in.integer(s));
    next_index(idx, shape);
  }
  return out;
}

int64_t linear(const std::vector<int64_t>& idx, const Shape& shape) {
  int64_t l = 0;
  for (size_t a = 0; a < shape.size(); ++a) l = l * shape[a] + idx[a];
  return l;
}

// Pair up input and output axes of a reshape: consecutive groups whose element counts match.
// The first axis of each group on both sides shares one dim (splitting it splits the outer
// factor, e.g. heads out of hidden); the remaining axes are Fixed.
IterSpace reshape_space(const OpView& v, int num_inputs) {
  const Shape& in = v.in_shape(0);
  const Shape& out = v.out(0).shape;
  IterSpace s;
  std::vector<int> ia(in.size(), -1), oa(out.size(), -1);
  size_t i = 0, o = 0;
  while (i < in.size() || o < out.size()) {
    // Size-1 axes stand alone.
    if (i < in.size() && in[i] == 1 && !(o < out.size() && out[o] == 1)) { ++i; continue; }
    if (o < out.size() && out[o] == 1 && !(i < in.size() && in[i] == 1)) {
      oa[o] = static_cast<int>(s.dims.size());
      s.dims.push_back({dim_name('d', o), 1, DimRole::Fixed});
      ++o;
      continue;
    }
    if (i >= in.size() || o >= out.size()) break;
    size_t i0 = i, o0 = o;
    int64_t pi = in[i++], po = out[o++];
    while (pi != po) {
      if (pi < po && i < in.size()) pi *= in[i++];
      else if (po < pi && o < out.size()) po *= out[o++];
      else break;
    }
    int d = static_cast<int>(s.dims.size());
    s.dims.push_back({dim_name('d', o0), out[o0], DimRole::Parallel});
    oa[o0] = d;
    ia[i0] = d;
    for (size_t k = o0 + 1; k < o; ++k) {
      oa[k] = static_cast<int>(s.dims.size());
      s.dims.push_back({dim_name('d', k), out[k], DimRole::Fixed});
    }
  }
  s.inputs.push_back(ia);
  for (int k = 1; k < num_inputs; ++k) s.inputs.emplace_back();
  s.outputs = {oa};
  return s;
}

OpDef movement(const std::string& type, std::vector<int> nondiff) {
  OpDef d;
  d.type = type;
  d.family = "data movement";
  d.flops_doc = "0 / 0";
  d.saves_doc = "nothing";
  d.nondiff_inputs = std::move(nondiff);
  d.fwd_flops = [](const OpView&) { return 0.0; };
  d.bwd_flops = [](const OpView&, const std::vector<bool>&) { return 0.0; };
  d.saved = [](const OpView&, const std::vector<bool>&) { return std::vector<Saved>{}; };
  return d;
}

Shape reshape_target(const OpView& v) {
  const Shape& in = v.in_shape(0);
  std::vector<int64_t> spec = v.in_ints(1, "shape");
  bool allowzero = v.node.attr_int("allowzero", 0) != 0;
  Shape out(spec.size());
  int infer = -1;
  int64_t known = 1;
  for (size_t a = 0; a < spec.size(); ++a) {
    int64_t d = spec[a];
    if (d == 0 && !allowzero) {
      if (a >= in.size()) throw OpError("shape " + shape_str(spec) + " copies axis " + std::to_string(a) + " that the input lacks");
      d = in[a];
    }
    if (d == -1) {
      if (infer >= 0) throw OpError("shape " + shape_str(spec) + " has more than one -1");
      infer = static_cast<int>(a);
      continue;
    }
    if (d < 0) throw OpError("shape " + shape_str(spec) + " has a negative dimension");
    out[a] = d;
    known = d == 0 ? 0 : (known > (int64_t{1} << 62) / d ? throw OpError("shape too large") : known * d);
  }
  int64_t total = checked_numel(in);
  if (infer >= 0) {
    if (known == 0 || total % known != 0) throw OpError("cannot reshape " + shape_str(in) + " to " + shape_str(spec));
    out[static_cast<size_t>(infer)] = total / known;
  } else if (known != total) {
    throw OpError("cannot reshape " + shape_str(in) + " (" + std::to_string(total) + " elements) to " + shape_str(spec));
  }
  return out;
}

std::vector<int64_t> axes_arg(const OpView& v, int input, const char* what) {
  if (auto a = v.node.attr_ints("axes")) return *a;
  if (v.has_input(input)) return v.in_ints(input, what);
  return {};
}

Shape squeeze_shape(const OpView& v) {
  const Shape& in = v.in_shape(0);
  auto axes = axes_arg(v, 1, "axes");
  std::vector<bool> drop(in.size(), false);
  if (axes.empty()) {
    for (size_t a = 0; a < in.size(); ++a) drop[a] = in[a] == 1;
  }
  for (int64_t a : axes) {
    int n = norm_axis(a, static_cast<int>(in.size()), "axis");
    if (in[static_cast<size_t>(n)] != 1) throw OpError("cannot squeeze axis " + std::to_string(a) + " of " + shape_str(in));
    drop[static_cast<size_t>(n)] = true;
  }
  Shape out;
  for (size_t a = 0; a < in.size(); ++a) {
    if (!drop[a]) out.push_back(in[a]);
  }
  return out;
}

Shape unsqueeze_shape(const OpView& v) {
  const Shape& in = v.in_shape(0);
  auto axes = axes_arg(v, 1, "axes");
  int rank = static_cast<int>(in.size() + axes.size());
  std::vector<bool> added(static_cast<size_t>(rank), false);
  for (int64_t a : axes) {
    int n = norm_axis(a, rank, "axis");
    if (added[static_cast<size_t>(n)]) throw OpError("axis " + std::to_string(a) + " repeated");
    added[static_cast<size_t>(n)] = true;
  }
  Shape out;
  size_t k = 0;
  for (int a = 0; a < rank; ++a) out.push_back(added[static_cast<size_t>(a)] ? 1 : in[k++]);
  return out;
}

std::vector<int64_t> perm_of(const OpView& v) {
  size_t r = v.in_shape(0).size();
  std::vector<int64_t> perm;
  if (auto p = v.node.attr_ints("perm")) perm = *p;
  else for (size_t a = r; a-- > 0;) perm.push_back(static_cast<int64_t>(a));
  if (perm.size() != r) throw OpError("perm has " + std::to_string(perm.size()) + " entries for rank " + std::to_string(r));
  std::vector<bool> seen(r, false);
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(r) || seen[static_cast<size_t>(p)]) throw OpError("perm is not a permutation");
    seen[static_cast<size_t>(p)] = true;
  }
  return perm;
}

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

std::vector<int64_t> split_sizes(const OpView& v, int axis) {
  int64_t dim = v.in_shape(0)[static_cast<size_t>(axis)];
  std::vector<int64_t> sizes;
  if (auto s = v.node.attr_ints("split")) sizes = *s;
  else if (v.has_input(1)) sizes = v.in_ints(1, "split");
  int n = v.num_outputs();
  if (sizes.empty()) {
    int64_t parts = v.node.attr_int("num_outputs", n);
    if (parts <= 0) throw OpError("no outputs");
    int64_t each = (dim + parts - 1) / parts;
    for (int64_t k = 0; k < parts; ++k) sizes.push_back(std::max<int64_t>(0, std::min(each, dim - k * each)));
  }
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0) throw OpError("negative split size");
    total = add_checked(total, s);
  }
  if (total != dim || static_cast<int>(sizes.size()) != n) {
    throw OpError("split sizes " + shape_str(sizes) + " do not cover axis of size " + std::to_string(dim) +
                  " with " + std::to_string(n) + " outputs");
  }
  return sizes;
}

}  // namespace

void register_layout(std::vector<OpDef>& ops) {
  {
    OpDef d = movement("Reshape", {1});
    d.infer = [](const OpView& v) { return std::vector<OutType>{{v.in(0).dtype, reshape_target(v)}}; };
    d.fold = [](const OpView& v) { return std::vector<Value>{relabel(*v.in_value(0), v.out(0).shape)}; };
    d.space = [](const OpView& v) { return reshape_space(v, 2); };
    ops.push_back(std::move(d));
  }
  {
    OpDef d = movement("Flatten", {});
    d.infer = [](const OpView& v) {
      const Shape& x = v.in_shape(0);
      // axis in [-r, r]; a negative one counts from the back of the input's r axes (ONNX).
      const auto r = static_cast<int64_t>(x.size());
      int64_t a = v.node.attr_int("axis", 1);
      if (a < -r || a > r) throw OpError("axis " + std::to_string(a) + " out of range for rank " + std::to_string(r));
      auto axis = static_cast<int>(a < 0 ? a + r : a);
      Shape out{numel(Shape(x.begin(), x.begin() + axis)), numel(Shape(x.begin() + axis, x.end()))};
      return std::vector<OutType>{{v.in(0).dtype, out}};
    };
    d.fold = [](const OpView& v) { return std::vector<Value>{relabel(*v.in_value(0), v.out(0).shape)}; };
    d.space = [](const OpView& v) { return reshape_space(v, 1); };
    ops.push_back(std::move(d));
  }
  for (const char* type : {"Squeeze", "Unsqueeze"}) {
    bool sq = std::string(type) == "Squeeze";
    OpDef d = movement(type, {1});
    d.infer = [sq](const OpView& v) {
      return std::vector<OutType>{{v.in(0).dtype, sq ? squeeze_shape(v) : unsqueeze_shape(v)}};
    };
    d.fold = [](const OpView& v) { return std::vector<Value>{relabel(*v.in_value(0), v.out(0).shape)}; };
    d.space = [](const OpView& v) { return reshape_space(v, 2); };
    ops.push_back(std::move(d));
  }
  {
    OpDef d = movement("Transpose", {});
    d.infer = [](const OpView& v) {
      auto perm = perm_of(v);
      Shape out;
      for (int64_t p : perm) out.push_back(v.in_shape(0)[static_cast<size_t>(p)]);
      return std::vector<OutType>{{v.in(0).dtype, out}};
    };
    d.fold = [](const OpView& v) {
      auto perm = perm_of(v);
      const Shape& in = v.in_shape(0);
      std::vector<int64_t> src(in.size());
      return std::vector<Value>{gather_fold(*v.in_value(0), v.in(0).dtype, v.out(0).shape, [&](const std::vector<int64_t>& idx) {
        for (size_t j = 0; j < perm.size(); ++j) src[static_cast<size_t>(perm[j])] = idx[j];
        return linear(src, in);
      })};
    };
    d.space = [](const OpView& v) {
      auto perm = perm_of(v);
      std::vector<int> ia(perm.size());
      for (size_t j = 0; j < perm.size(); ++j) ia[static_cast<size_t>(perm[j])] = static_cast<int>(j);
      return axes_space(v.out(0).shape, std::vector<DimRole>(perm.size(), DimRole::Parallel), {ia});
    };
    ops.push_back(std::move(d));
  }
  {
    OpDef d = movement("Concat", {});
    auto axis_of = [](const OpView& v) {
      if (!v.node.attr("axis")) throw OpError("missing attribute 'axis'");
      return norm_axis(v.node.attr_int("axis", 0), v.in_rank(0), "axis");
    };
    d.infer = [axis_of](const OpView& v) {
      if (v.num_inputs() == 0 || !v.has_input(0)) throw OpError("no inputs");
      int axis = axis_of(v);
      Shape out = v.in_shape(0);
      out[static_cast<size_t>(axis)] = 0;
      for (int i = 0; i < v.num_inputs(); ++i) {
        if (!v.has_input(i)) throw OpError("missing input " + std::to_string(i));
        const Shape& s = v.in_shape(i);
        for (size_t a = 0; a < out.size(); ++a) {
          if (s.size() != out.size() || (static_cast<int>(a) != axis && s[a] != out[a])) {
            throw OpError("input " + std::to_string(i) + " " + shape_str(s) + " does not match " + shape_str(v.in_shape(0)));
          }
        }
        out[static_cast<size_t>(axis)] = add_checked(out[static_cast<size_t>(axis)], s[static_cast<size_t>(axis)]);
      }
      return std::vector<OutType>{{v.in(0).dtype, out}};
    };
    d.fold = [axis_of](const OpView& v) {
      auto axis = static_cast<size_t>(axis_of(v));
      const Shape& out = v.out(0).shape;
      Value r = make_value(v.in(0).dtype, out);
      std::vector<int64_t> idx(out.size(), 0);
      for (int64_t k = 0; k < numel(out); ++k) {
        int64_t pos = idx[axis];
        int i = 0;
        while (pos >= v.in_shape(i)[axis]) pos -= v.in_shape(i++)[axis];
        std::vector<int64_t> src = idx;
        src[axis] = pos;
        const Value& in = *v.in_value(i);
        int64_t l = linear(src, v.in_shape(i));
        set_elem(r, k, in.real(l), in.integer(l));
        next_index(idx, out);
      }
      return std::vector<Value>{r};
    };
    d.space = [axis_of](const OpView& v) {
      int axis = axis_of(v);
      const Shape& out = v.out(0).shape;
      std::vector<DimRole> roles(out.size(), DimRole::Parallel);
      roles[static_cast<size_t>(axis)] = DimRole::Fixed;
      std::vector<int> ia = iota_axes(out.size());
      ia[static_cast<size_t>(axis)] = -1;
      return axes_space(out, roles, std::vector<std::vector<int>>(static_cast<size_t>(v.num_inputs()), ia));
    };
    ops.push_back(std::move(d));
  }
  {
    OpDef d = movement("Split", {1});
    auto axis_of = [](const OpView& v) { return norm_axis(v.node.attr_int("axis", 0), v.in_rank(0), "axis"); };
    d.infer = [axis_of](const OpView& v) {
      int axis = axis_of(v);
      std::vector<OutType> out;
      for (int64_t s : split_sizes(v, axis)) {
        Shape sh = v.in_shape(0);
        sh[static_cast<size_t>(axis)] = s;
        out.push_back({v.in(0).dtype, sh});
      }
      return out;
    };
    d.fold = [axis_of](const OpView& v) {
      auto axis = static_cast<size_t>(axis_of(v));
      std::vector<Value> outs;
      int64_t offset = 0;
      for (int64_t s : split_sizes(v, static_cast<int>(axis))) {
        Shape sh = v.in_shape(0);
        sh[axis] = s;
        std::vector<int64_t> src;
        outs.push_back(gather_fold(*v.in_value(0), v.in(0).dtype, sh, [&](const std::vector<int64_t>& idx) {
          src = idx;
          src[axis] += offset;
          return linear(src, v.in_shape(0));
        }));
        offset += s;
      }
      return outs;
    };
    d.space = [axis_of](const OpView& v) {
      int axis = axis_of(v);
      const Shape& in = v.in_shape(0);
      std::vector<DimRole> roles(in.size(), DimRole::Parallel);
      roles[static_cast<size_t>(axis)] = DimRole::Fixed;
      IterSpace s = axes_space(in, roles, {iota_axes(in.size()), {}}, v.num_outputs());
      for (auto& o : s.outputs) o[static_cast<size_t>(axis)] = -1;
      return s;
    };
    ops.push_back(std::move(d));
  }
  {
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
    ops.push_back(std::move(d));
  }
  {
    // Gather(data, indices, axis): out = data[:axis] + indices.shape + data[axis+1:]. The backward
    // scatter-adds N output gradients into the data gradient.
    OpDef d = movement("Gather", {1});
    d.flops_doc = "0 / N (scatter-add into the data gradient)";
    d.saves_doc = "indices, when data needs a gradient";
    d.weight_inputs = {0};
    auto axis_of = [](const OpView& v) { return norm_axis(v.node.attr_int("axis", 0), v.in_rank(0), "axis"); };
    d.infer = [axis_of](const OpView& v) {
      if (!v.has_input(0) || !v.has_input(1)) throw OpError("needs data and indices");
      if (!dtype_is_integral(v.in(1).dtype)) throw OpError("indices are not integers");
      auto axis = static_cast<size_t>(axis_of(v));
      const Shape& x = v.in_shape(0);
      Shape out(x.begin(), x.begin() + static_cast<long>(axis));
      out.insert(out.end(), v.in_shape(1).begin(), v.in_shape(1).end());
      out.insert(out.end(), x.begin() + static_cast<long>(axis) + 1, x.end());
      return std::vector<OutType>{{v.in(0).dtype, out}};
    };
    d.fold = [axis_of](const OpView& v) {
      auto axis = static_cast<size_t>(axis_of(v));
      const Shape& x = v.in_shape(0);
      const Value& ind = *v.in_value(1);
      size_t ir = v.in_shape(1).size();
      std::vector<int64_t> src(x.size());
      return std::vector<Value>{gather_fold(*v.in_value(0), v.in(0).dtype, v.out(0).shape, [&](const std::vector<int64_t>& idx) {
        std::vector<int64_t> iidx(idx.begin() + static_cast<long>(axis), idx.begin() + static_cast<long>(axis + ir));
        int64_t k = ind.integer(linear(iidx, v.in_shape(1)));
        if (k < -x[axis] || k >= x[axis]) throw OpError("index " + std::to_string(k) + " out of range for axis of size " + std::to_string(x[axis]));
        for (size_t a = 0; a < axis; ++a) src[a] = idx[a];
        src[axis] = k < 0 ? k + x[axis] : k;
        for (size_t a = axis + 1; a < x.size(); ++a) src[a] = idx[a - 1 + ir];
        return linear(src, x);
      })};
    };
    d.space = [axis_of](const OpView& v) {
      auto axis = static_cast<size_t>(axis_of(v));
      const Shape& x = v.in_shape(0);
      const Shape& out = v.out(0).shape;
      size_t ir = v.in_shape(1).size();
      IterSpace s = axes_space(out, std::vector<DimRole>(out.size(), DimRole::Parallel), {{}, {}});
      // Splitting the gathered axis of a 2-D table (an embedding) leaves partial sums: each
      // device looks up the rows it holds and zeros the rest (Megatron's vocabulary split).
      bool table = x.size() == 2 && axis == 0 && v.in(0).kind == TensorKind::Parameter;
      int vd = static_cast<int>(s.dims.size());
      s.dims.push_back({"v", x[axis], table ? DimRole::Reduction : DimRole::Fixed});
      std::vector<int> xa, ia;
      for (size_t a = 0; a < x.size(); ++a) {
        xa.push_back(a < axis ? static_cast<int>(a) : a == axis ? vd : static_cast<int>(a - 1 + ir));
      }
      for (size_t a = 0; a < ir; ++a) ia.push_back(static_cast<int>(axis + a));
      s.inputs = {xa, ia};
      return s;
    };
    d.bwd_flops = [](const OpView& v, const std::vector<bool>& g) { return g[0] ? out_elems(v) : 0.0; };
    d.saved = [](const OpView& v, const std::vector<bool>& g) {
      return g[0] ? save_inputs(v, {1}) : std::vector<Saved>{};
    };
    ops.push_back(std::move(d));
  }
  {
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
    ops.push_back(std::move(d));
  }
  {
    OpDef d = movement("Expand", {1});
    d.flops_doc = "0 / N - input elements (sum over the broadcast axes)";
    d.infer = [](const OpView& v) {
      auto shape = v.in_ints(1, "shape");
      for (int64_t s : shape) {
        if (s < 0) throw OpError("negative dimension in shape " + shape_str(shape));
      }
      return std::vector<OutType>{{v.in(0).dtype, broadcast({v.in_shape(0), shape})}};
    };
    d.fold = [](const OpView& v) {
      const Shape& in = v.in_shape(0);
      const Shape& out = v.out(0).shape;
      return std::vector<Value>{gather_fold(*v.in_value(0), v.in(0).dtype, out, [&](const std::vector<int64_t>& idx) {
        return broadcast_offset(in, out, idx);
      })};
    };
    d.space = [](const OpView& v) {
      IterSpace s = elementwise_space(v, {0});
      s.inputs.resize(2);
      return s;
    };
    d.bwd_flops = [](const OpView& v, const std::vector<bool>& g) { return g[0] ? out_elems(v) - in_elems(v) : 0.0; };
    ops.push_back(std::move(d));
  }
  {
    OpDef d = movement("Tile", {1});
    d.flops_doc = "0 / N - input elements (sum over the repeats)";
    d.infer = [](const OpView& v) {
      auto rep = v.in_ints(1, "repeats");
      Shape out = v.in_shape(0);
      if (rep.size() != out.size()) throw OpError("repeats has " + std::to_string(rep.size()) + " values for rank " + std::to_string(out.size()));
      for (size_t a = 0; a < out.size(); ++a) {
        if (rep[a] < 0) throw OpError("negative repeat");
        out[a] = mul_checked(out[a], rep[a]);
      }
      checked_numel(out);
      return std::vector<OutType>{{v.in(0).dtype, out}};
    };
    d.fold = [](const OpView& v) {
      const Shape& in = v.in_shape(0);
      std::vector<int64_t> src(in.size());
      return std::vector<Value>{gather_fold(*v.in_value(0), v.in(0).dtype, v.out(0).shape, [&](const std::vector<int64_t>& idx) {
        for (size_t a = 0; a < in.size(); ++a) src[a] = idx[a] % in[a];
        return linear(src, in);
      })};
    };
    d.space = [](const OpView& v) {
      const Shape& in = v.in_shape(0);
      const Shape& out = v.out(0).shape;
      std::vector<DimRole> roles(out.size(), DimRole::Parallel);
      std::vector<int> ia = iota_axes(out.size());
      for (size_t a = 0; a < out.size(); ++a) {
        if (in[a] != out[a]) {
          roles[a] = DimRole::Fixed;
          ia[a] = -1;
        }
      }
      return axes_space(out, roles, {ia, {}});
    };
    d.bwd_flops = [](const OpView& v, const std::vector<bool>& g) { return g[0] ? out_elems(v) - in_elems(v) : 0.0; };
    ops.push_back(std::move(d));
  }
  {
    // ScatterND(data, indices, updates): a copy of data with the slices named by the last axis of
    // indices replaced by (or, with `reduction`, combined with) updates.
    OpDef d = movement("ScatterND", {1});
    d.flops_doc = "0 / 0 (reduction add or mul: elements of updates / the same)";
    d.infer = [](const OpView& v) {
      for (int i = 0; i < 3; ++i) {
        if (!v.has_input(i)) throw OpError("needs data, indices and updates");
      }
      const Shape& x = v.in_shape(0);
      const Shape& ind = v.in_shape(1);
      if (ind.empty() || ind.back() < 1 || ind.back() > static_cast<int64_t>(x.size())) throw OpError("indices " + shape_str(ind) + " do not fit data " + shape_str(x));
      Shape upd(ind.begin(), ind.end() - 1);
      upd.insert(upd.end(), x.begin() + ind.back(), x.end());
      if (upd != v.in_shape(2)) throw OpError("updates " + shape_str(v.in_shape(2)) + " should be " + shape_str(upd));
      return std::vector<OutType>{{v.in(0).dtype, x}};
    };
    d.fold = [](const OpView& v) {
      const Shape& x = v.in_shape(0);
      const Value& ind = *v.in_value(1);
      const Value& upd = *v.in_value(2);
      std::string red = v.node.attr_string("reduction", "none");
      auto k = static_cast<size_t>(v.in_shape(1).back());
      int64_t slice = numel(Shape(x.begin() + static_cast<long>(k), x.end()));
      int64_t tuples = ind.size() / static_cast<int64_t>(k);
      Value out = *v.in_value(0);
      for (int64_t t = 0; t < tuples; ++t) {
        int64_t base = 0;
        for (size_t a = 0; a < k; ++a) {
          int64_t i = ind.integer(t * static_cast<int64_t>(k) + static_cast<int64_t>(a));
          if (i < -x[a] || i >= x[a]) throw OpError("index " + std::to_string(i) + " out of range");
          base = base * x[a] + (i < 0 ? i + x[a] : i);
        }
        for (int64_t e = 0; e < slice; ++e) {
          int64_t dst = base * slice + e, src = t * slice + e;
          double r = upd.real(src);
          int64_t n = upd.integer(src);
          if (red == "add") { r += out.real(dst); n += out.integer(dst); }
          else if (red == "mul") { r *= out.real(dst); n *= out.integer(dst); }
          set_elem(out, dst, r, n);
        }
      }
      return std::vector<Value>{out};
    };
    d.space = [](const OpView& v) {
      const Shape& x = v.in_shape(0);
      auto k = static_cast<size_t>(v.in_shape(1).back());
      std::vector<DimRole> roles(x.size(), DimRole::Parallel);
      std::vector<int> xa = iota_axes(x.size()), ua;
      for (size_t a = 0; a < k; ++a) roles[a] = DimRole::Fixed;
      for (size_t a = 0; a + 1 < v.in_shape(1).size(); ++a) ua.push_back(-1);
      for (size_t a = k; a < x.size(); ++a) ua.push_back(static_cast<int>(a));
      return axes_space(x, roles, {xa, {}, ua});
    };
    ops.push_back(std::move(d));
  }
  {
    // GatherElements(data, indices, axis): out[i] = data[i with axis replaced by indices[i]].
    OpDef d = movement("GatherElements", {1});
    d.flops_doc = "0 / N (scatter-add into the data gradient)";
    d.saves_doc = "indices, when data needs a gradient";
    d.infer = [](const OpView& v) {
      if (!v.has_input(0) || !v.has_input(1)) throw OpError("needs data and indices");
      if (v.in_rank(0) != v.in_rank(1)) throw OpError("data and indices ranks differ");
      norm_axis(v.node.attr_int("axis", 0), v.in_rank(0), "axis");
      return std::vector<OutType>{{v.in(0).dtype, v.in_shape(1)}};
    };
    d.space = [](const OpView& v) {
      const Shape& out = v.out(0).shape;
      auto axis = static_cast<size_t>(norm_axis(v.node.attr_int("axis", 0), v.in_rank(0), "axis"));
      std::vector<DimRole> roles(out.size(), DimRole::Parallel);
      roles[axis] = DimRole::Fixed;
      std::vector<int> xa = iota_axes(out.size());
      for (size_t a = 0; a < out.size(); ++a) {
        if (a == axis || v.in_shape(0)[a] != out[a]) xa[a] = -1;
      }
      return axes_space(out, roles, {xa, iota_axes(out.size())});
    };
    d.bwd_flops = [](const OpView& v, const std::vector<bool>& g) { return g[0] ? out_elems(v) : 0.0; };
    d.saved = [](const OpView& v, const std::vector<bool>& g) {
      return g[0] ? save_inputs(v, {1}) : std::vector<Saved>{};
    };
    ops.push_back(std::move(d));
  }
  {
    // OneHot(indices, depth, values; axis): a new axis of size depth; no gradient.
    OpDef d = movement("OneHot", {0, 1, 2});
    d.infer = [](const OpView& v) {
      if (!v.has_input(2)) throw OpError("needs indices, depth and values");
      int64_t depth = v.in_ints(1, "depth").at(0);
      if (depth <= 0) throw OpError("depth must be positive");
      Shape out = v.in_shape(0);
      int axis = norm_axis(v.node.attr_int("axis", -1), static_cast<int>(out.size()) + 1, "axis");
      out.insert(out.begin() + axis, depth);
      return std::vector<OutType>{{v.in(2).dtype, out}};
    };
    d.space = [](const OpView& v) {
      const Shape& out = v.out(0).shape;
      int axis = norm_axis(v.node.attr_int("axis", -1), static_cast<int>(out.size()), "axis");
      std::vector<DimRole> roles(out.size(), DimRole::Parallel);
      roles[static_cast<size_t>(axis)] = DimRole::Fixed;
      std::vector<int> ia;
      for (size_t a = 0; a < out.size(); ++a) {
        if (static_cast<int>(a) != axis) ia.push_back(static_cast<int>(a));
      }
      return axes_space(out, roles, {ia, {}, {}});
    };
    ops.push_back(std::move(d));
  }
  {
    OpDef d = movement("Trilu", {1});
    d.infer = [](const OpView& v) {
      if (v.in_rank(0) < 2) throw OpError("input must have rank >= 2");
      return std::vector<OutType>{{v.in(0).dtype, v.in_shape(0)}};
    };
    d.fold = [](const OpView& v) {
      int64_t k = v.has_input(1) ? v.in_ints(1, "k").at(0) : 0;
      bool upper = v.node.attr_int("upper", 1) != 0;
      const Shape& s = v.in_shape(0);
      size_t r = s.size();
      return std::vector<Value>{gather_fold(*v.in_value(0), v.in(0).dtype, s, [&](const std::vector<int64_t>& idx) {
        int64_t i = idx[r - 2], j = idx[r - 1];
        bool keep = upper ? j - i >= k : j - i <= k;
        return keep ? linear(idx, s) : -1;
      })};
    };
    d.space = [](const OpView& v) {
      const Shape& s = v.in_shape(0);
      std::vector<DimRole> roles(s.size(), DimRole::Parallel);
      roles[s.size() - 1] = roles[s.size() - 2] = DimRole::Fixed;
      return axes_space(s, roles, {iota_axes(s.size()), {}});
    };
    ops.push_back(std::move(d));
  }
}

}  // namespace tensoropt::ops
