// Gather, GatherElements, ScatterND and OneHot: the indexed ops (movement.h).
#include <algorithm>
#include <numeric>

#include "graph/ops/movement.h"

namespace tensoropt::ops {
namespace {



// Gather(data, indices, axis): out = data[:axis] + indices.shape + data[axis+1:]. The backward
// scatter-adds N output gradients into the data gradient.
OpDef gather_op() {
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
  return d;
}

// ScatterND(data, indices, updates): a copy of data with the slices named by the last axis of
// indices replaced by (or, with `reduction`, combined with) updates.
OpDef scatter_nd_op() {
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
  return d;
}

// GatherElements(data, indices, axis): out[i] = data[i with axis replaced by indices[i]].
OpDef gather_elements_op() {
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
  return d;
}

// OneHot(indices, depth, values; axis): a new axis of size depth; no gradient.
OpDef one_hot_op() {
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
  return d;
}

}  // namespace


void register_movement_indexed(std::vector<OpDef>& ops) {
  ops.push_back(gather_op());
  ops.push_back(scatter_nd_op());
  ops.push_back(gather_elements_op());
  ops.push_back(one_hot_op());
}

}  // namespace tensoropt::ops
