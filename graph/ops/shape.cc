// Ops that produce constants or shape values: Shape, Size, Constant, ConstantOfShape, Range.
// The importer evaluates them whenever their inputs are known, so after import they survive only
// as ConstantOfShape/Range of a large, non-folded output.
#include <cmath>

#include "graph/ops/helpers.h"

namespace tensoropt::ops {
namespace {

OpDef source(const std::string& type) {
  OpDef d;
  d.type = type;
  d.family = "constant";
  d.flops_doc = "0 / 0";
  d.saves_doc = "nothing";
  d.nondiff_inputs = {0, 1, 2};
  d.fwd_flops = [](const OpView&) { return 0.0; };
  d.bwd_flops = [](const OpView&, const std::vector<bool>&) { return 0.0; };
  d.saved = [](const OpView&, const std::vector<bool>&) { return std::vector<Saved>{}; };
  d.space = [](const OpView& v) {
    Shape out = v.out(0).shape;
    std::vector<std::vector<int>> none(static_cast<size_t>(v.num_inputs()));
    return axes_space(out, std::vector<DimRole>(out.size(), DimRole::Parallel), none);
  };
  return d;
}

std::pair<int64_t, int64_t> shape_range(const OpView& v) {
  auto r = static_cast<int64_t>(v.in_shape(0).size());
  auto clamp = [r](int64_t x) { return std::max<int64_t>(0, std::min(x < 0 ? x + r : x, r)); };
  int64_t start = clamp(v.node.attr_int("start", 0));
  int64_t end = v.node.attr("end") ? clamp(v.node.attr_int("end", r)) : r;
  return {start, std::max(start, end)};
}

// The value of a Constant node from whichever attribute holds it.
Value constant_value(const OpView& v) {
  const Node& n = v.node;
  if (const Attribute* a = n.attr("value"); a && a->tensor) return *a->tensor;
  Value r;
  if (const Attribute* a = n.attr("value_int")) {
    r.dtype = DType::I64;
    r.ints = {a->i};
  } else if (const Attribute* b = n.attr("value_ints")) {
    r.dtype = DType::I64;
    r.ints = b->ints;
    r.shape = {static_cast<int64_t>(b->ints.size())};
  } else if (const Attribute* c = n.attr("value_float")) {
    r.dtype = DType::F32;
    r.reals = {c->f};
  } else if (const Attribute* e = n.attr("value_floats")) {
    r.dtype = DType::F32;
    r.reals = e->floats;
    r.shape = {static_cast<int64_t>(e->floats.size())};
  } else {
    throw OpError("no supported value attribute (value, value_int(s), value_float(s))");
  }
  return r;
}

OpDef shape() {
  OpDef d = source("Shape");
  d.folds_from_shapes = true;
  d.infer = [](const OpView& v) {
    auto [s, e] = shape_range(v);
    return std::vector<OutType>{{DType::I64, {e - s}}};
  };
  d.fold = [](const OpView& v) {
    auto [s, e] = shape_range(v);
    Value r = make_value(DType::I64, {e - s});
    for (int64_t k = s; k < e; ++k) r.ints[static_cast<size_t>(k - s)] = v.in_shape(0)[static_cast<size_t>(k)];
    return std::vector<Value>{r};
  };
  return d;
}

OpDef size() {
  OpDef d = source("Size");
  d.folds_from_shapes = true;
  d.infer = [](const OpView&) { return std::vector<OutType>{{DType::I64, {}}}; };
  d.fold = [](const OpView& v) {
    Value r = make_value(DType::I64, {});
    r.ints[0] = checked_numel(v.in_shape(0));
    return std::vector<Value>{r};
  };
  return d;
}

OpDef constant() {
  OpDef d = source("Constant");
  d.folds_always = true;
  d.infer = [](const OpView& v) {
    Value c = constant_value(v);
    if (c.dtype == DType::String) throw OpError("its value is of strings, which no supported op reads");
    return std::vector<OutType>{{c.dtype, c.shape}};
  };
  d.fold = [](const OpView& v) { return std::vector<Value>{constant_value(v)}; };
  return d;
}

// The one-element fill value of a ConstantOfShape: its 'value' attribute, else a float 0.
Value constant_of_shape_fill(const OpView& v) {
  Value f;
  if (const Attribute* a = v.node.attr("value"); a && a->tensor) f = *a->tensor;
  else {
    f.dtype = DType::F32;
    f.reals = {0.0};
  }
  if (f.size() != 1) throw OpError("value must hold one element");
  return f;
}

OpDef constant_of_shape() {
  OpDef d = source("ConstantOfShape");
  d.infer = [](const OpView& v) {
    auto shape = v.in_ints(0, "shape");
    for (int64_t s : shape) {
      if (s < 0) throw OpError("negative dimension in shape " + shape_str(shape));
    }
    checked_numel(shape);
    return std::vector<OutType>{{constant_of_shape_fill(v).dtype, shape}};
  };
  d.fold = [](const OpView& v) {
    Value f = constant_of_shape_fill(v);
    Value r = make_value(f.dtype, v.out(0).shape);
    for (int64_t k = 0; k < r.size(); ++k) set_elem(r, k, f.real(0), f.integer(0));
    return std::vector<Value>{r};
  };
  return d;
}

// The element count of a Range from its constant scalar start, limit and delta.
int64_t range_count(const OpView& v) {
  for (int i = 0; i < 3; ++i) {
    const Value* x = v.in_value(i);
    if (!x) throw OpError("input " + std::to_string(i) + " is not a constant the importer could compute");
    if (x->size() != 1) throw OpError("inputs must be scalars");
    if (x->dtype != v.in_value(0)->dtype) throw OpError("start, limit and delta differ in type");
  }
  double start = v.in_value(0)->real(0), limit = v.in_value(1)->real(0), delta = v.in_value(2)->real(0);
  if (delta == 0) throw OpError("delta is zero");
  double n = std::ceil((limit - start) / delta);
  if (!(n < 4e18)) throw OpError("range too long");
  return n > 0 ? static_cast<int64_t>(n) : int64_t{0};
}

OpDef range() {
  OpDef d = source("Range");
  d.infer = [](const OpView& v) { return std::vector<OutType>{{v.in(0).dtype, {range_count(v)}}}; };
  d.fold = [](const OpView& v) {
    int64_t n = range_count(v);
    Value r = make_value(v.in(0).dtype, {n});
    const Value& s = *v.in_value(0);
    const Value& dl = *v.in_value(2);
    for (int64_t k = 0; k < n; ++k) {
      int64_t ik = dtype_is_integral(r.dtype) ? add_checked(s.integer(0), mul_checked(k, dl.integer(0))) : 0;
      set_elem(r, k, s.real(0) + static_cast<double>(k) * dl.real(0), ik);
    }
    return std::vector<Value>{r};
  };
  return d;
}

}  // namespace

void register_shape(std::vector<OpDef>& ops) {
  ops.push_back(shape());
  ops.push_back(size());
  ops.push_back(constant());
  ops.push_back(constant_of_shape());
  ops.push_back(range());
}

}  // namespace tensoropt::ops
