// Reshape, Flatten, Squeeze and Unsqueeze: views that relabel a shape (movement.h).
#include <algorithm>
#include <numeric>

#include "graph/ops/movement.h"

namespace tensoropt::ops {
namespace {

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

OpDef reshape_op() {
  OpDef d = movement("Reshape", {1});
  d.infer = [](const OpView& v) { return std::vector<OutType>{{v.in(0).dtype, reshape_target(v)}}; };
  d.fold = [](const OpView& v) { return std::vector<Value>{relabel(*v.in_value(0), v.out(0).shape)}; };
  d.space = [](const OpView& v) { return reshape_space(v, 2); };
  return d;
}

OpDef flatten_op() {
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
  return d;
}

void add_squeeze_unsqueeze(std::vector<OpDef>& ops) {
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
}

}  // namespace


void register_movement_views(std::vector<OpDef>& ops) {
  ops.push_back(reshape_op());
  ops.push_back(flatten_op());
  add_squeeze_unsqueeze(ops);
}

}  // namespace tensoropt::ops
