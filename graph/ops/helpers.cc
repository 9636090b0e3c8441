#include "graph/ops/helpers.h"

#include <algorithm>
#include <limits>

namespace tensoropt::ops {

Shape broadcast(const std::vector<Shape>& shapes) {
  size_t rank = 0;
  for (const Shape& s : shapes) rank = std::max(rank, s.size());
  Shape out(rank, 1);
  for (const Shape& s : shapes) {
    size_t off = rank - s.size();
    for (size_t a = 0; a < s.size(); ++a) {
      int64_t d = s[a];
      int64_t& o = out[off + a];
      if (d == o || d == 1) continue;
      if (o == 1) {
        o = d;
        continue;
      }
      throw OpError("shapes " + shape_str(shapes.front()) + " and " + shape_str(s) + " do not broadcast");
    }
  }
  return out;
}

int norm_axis(int64_t axis, int rank, const char* what) {
  if (rank <= 0 || axis < -rank || axis >= rank) {
    throw OpError(std::string(what) + " " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  }
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

int64_t checked_numel(const Shape& s) {
  int64_t nonzero = 1;
  bool empty = false;
  for (int64_t d : s) {
    if (d < 0) throw OpError("negative dimension in shape " + shape_str(s));
    empty = empty || d == 0;
    if (d == 0) continue;
    if (nonzero > kMaxElements / d) {
      throw OpError("shape " + shape_str(s) + " has more than 2^59 elements: its size in bytes could overflow 64 bits");
    }
    nonzero *= d;
  }
  return empty ? 0 : nonzero;
}

int64_t add_checked(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) throw OpError("dimension arithmetic overflows");
  return r;
}

int64_t mul_checked(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) throw OpError("dimension arithmetic overflows");
  return r;
}

int64_t broadcast_offset(const Shape& in, const Shape& out, const std::vector<int64_t>& out_index) {
  size_t off = out.size() - in.size();
  int64_t lin = 0;
  for (size_t a = 0; a < in.size(); ++a) {
    int64_t i = in[a] == 1 ? 0 : out_index[off + a];
    lin = lin * in[a] + i;
  }
  return lin;
}

void next_index(std::vector<int64_t>& idx, const Shape& shape) {
  for (size_t a = shape.size(); a-- > 0;) {
    if (++idx[a] < shape[a]) return;
    idx[a] = 0;
  }
}

Value make_value(DType t, const Shape& shape) {
  Value v;
  v.dtype = t;
  v.shape = shape;
  auto n = static_cast<size_t>(checked_numel(shape));
  if (dtype_is_integral(t)) v.ints.assign(n, 0);
  else v.reals.assign(n, 0.0);
  return v;
}

void set_elem(Value& v, int64_t i, double real, int64_t integer) {
  if (dtype_is_integral(v.dtype)) {
    v.ints[static_cast<size_t>(i)] = v.dtype == DType::Bool ? (integer != 0) : integer;
  } else {
    v.reals[static_cast<size_t>(i)] = real;
  }
}

Value eval_elementwise(const OpView& v, DType out, const IntFn& int_fn, const RealFn& real_fn,
                       int first_input, int count) {
  int last = count < 0 ? v.num_inputs() : first_input + count;
  std::vector<const Value*> ins;
  std::vector<Shape> shapes;
  for (int i = first_input; i < last; ++i) {
    const Value* val = v.in_value(i);
    if (!val) throw OpError("input " + std::to_string(i) + " is not a constant");
    ins.push_back(val);
    shapes.push_back(val->shape);
  }
  Shape shape = broadcast(shapes);
  Value result = make_value(out, shape);
  int64_t n = checked_numel(shape);
  std::vector<int64_t> idx(shape.size(), 0);
  bool all_int = dtype_is_integral(out) && int_fn;
  for (const Value* val : ins) all_int = all_int && dtype_is_integral(val->dtype);
  std::vector<int64_t> iargs(ins.size());
  std::vector<double> rargs(ins.size());
  for (int64_t k = 0; k < n; ++k) {
    for (size_t j = 0; j < ins.size(); ++j) {
      int64_t off = broadcast_offset(ins[j]->shape, shape, idx);
      if (all_int) iargs[j] = ins[j]->integer(off);
      else rargs[j] = ins[j]->real(off);
    }
    if (all_int) {
      int64_t r = int_fn(iargs);
      set_elem(result, k, static_cast<double>(r), r);
    } else {
      if (!real_fn) throw OpError("cannot evaluate on these input types");
      double r = real_fn(rargs);
      set_elem(result, k, r, saturate_to_int64(r));
    }
    next_index(idx, shape);
  }
  return result;
}

IterSpace elementwise_space(const OpView& v, const std::vector<int>& data_inputs) {
  const Shape& out = v.out(0).shape;
  IterSpace s;
  for (size_t a = 0; a < out.size(); ++a) s.dims.push_back({dim_name('d', a), out[a], DimRole::Parallel});
  s.inputs.resize(static_cast<size_t>(v.num_inputs()));
  for (int i : data_inputs) {
    if (!v.has_input(i)) continue;
    const Shape& in = v.in_shape(i);
    size_t off = out.size() - in.size();
    auto& axes = s.inputs[static_cast<size_t>(i)];
    for (size_t a = 0; a < in.size(); ++a) {
      axes.push_back(in[a] == out[off + a] ? static_cast<int>(off + a) : -1);
    }
  }
  std::vector<int> all = iota_axes(out.size());
  for (int o = 0; o < v.num_outputs(); ++o) s.outputs.push_back(v.has_output(o) ? all : std::vector<int>{});
  return s;
}

IterSpace axes_space(const Shape& out, const std::vector<DimRole>& roles,
                     std::vector<std::vector<int>> input_axes, int num_outputs) {
  IterSpace s;
  for (size_t a = 0; a < out.size(); ++a) s.dims.push_back({dim_name('d', a), out[a], roles[a]});
  s.inputs = std::move(input_axes);
  std::vector<int> all = iota_axes(out.size());
  s.outputs.assign(static_cast<size_t>(num_outputs), all);
  return s;
}

double out_elems(const OpView& v, int i) {
  return v.has_output(i) ? static_cast<double>(v.out(i).elements()) : 0.0;
}

double in_elems(const OpView& v, int i) {
  return v.has_input(i) ? static_cast<double>(v.in(i).elements()) : 0.0;
}

std::vector<Saved> save_inputs(const OpView& v, const std::vector<int>& positions) {
  std::vector<Saved> out;
  for (int p : positions) {
    if (v.has_input(p)) out.push_back({v.node.inputs[static_cast<size_t>(p)], v.in(p).bytes()});
  }
  return out;
}

std::vector<Saved> save_outputs(const OpView& v, const std::vector<int>& positions) {
  std::vector<Saved> out;
  for (int p : positions) {
    if (v.has_output(p)) out.push_back({v.node.outputs[static_cast<size_t>(p)], v.out(p).bytes()});
  }
  return out;
}

std::vector<Saved> save_input_and_output(const OpView& v, const std::vector<bool>& needs_grad) {
  if (!needs_grad[0]) return {};
  auto s = save_inputs(v, {0});
  auto o = save_outputs(v, {0});
  s.insert(s.end(), o.begin(), o.end());
  return s;
}

std::vector<Saved> save_for_other_operand(const OpView& v, const std::vector<bool>& needs_grad) {
  std::vector<int> pos;
  if (needs_grad.size() > 1 && needs_grad[1]) pos.push_back(0);
  if (needs_grad[0]) pos.push_back(1);
  return save_inputs(v, pos);
}

std::string dim_name(char prefix, size_t index) {
  std::string name(1, prefix);
  name += std::to_string(index);
  return name;
}

std::vector<int> iota_axes(size_t n) {
  std::vector<int> v(n);
  for (size_t a = 0; a < n; ++a) v[a] = static_cast<int>(a);
  return v;
}

}  // namespace tensoropt::ops

namespace tensoropt::ops {

Shape window_output(const OpView& v, const Shape& in, const Shape& kernel) {
  size_t r = in.size();
  auto attr = [&](const char* key, int64_t fill, size_t n) {
    auto a = v.node.attr_ints(key);
    if (!a || a->empty()) return std::vector<int64_t>(n, fill);
    if (a->size() != n) throw OpError(std::string("attribute '") + key + "' has " + std::to_string(a->size()) +
                                      " values, expected " + std::to_string(n));
    return *a;
  };
  auto strides = attr("strides", 1, r);
  auto dil = attr("dilations", 1, r);
  auto pads = attr("pads", 0, 2 * r);
  std::string auto_pad = v.node.attr_string("auto_pad", "NOTSET");
  bool ceil_mode = v.node.attr_int("ceil_mode", 0) != 0;
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    if (strides[i] <= 0 || dil[i] <= 0 || kernel[i] <= 0 || pads[i] < 0 || pads[i + r] < 0) {
      throw OpError("non-positive stride, dilation or kernel, or negative padding");
    }
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      out[i] = add_checked(in[i], strides[i] - 1) / strides[i];
      continue;
    }
    int64_t span = add_checked(mul_checked(dil[i], kernel[i] - 1), 1);
    int64_t padded = add_checked(in[i], auto_pad == "VALID" ? 0 : add_checked(pads[i], pads[i + r]));
    if (padded < span) throw OpError("window of " + std::to_string(span) + " is larger than the padded input " +
                                     std::to_string(padded));
    int64_t num = padded - span;
    out[i] = (ceil_mode ? add_checked(num, strides[i] - 1) / strides[i] : num / strides[i]) + 1;
    // ONNX (as PyTorch): with ceil_mode the last window must start inside the input or left pad.
    if (ceil_mode && mul_checked(out[i] - 1, strides[i]) >= add_checked(in[i], pads[i])) --out[i];
  }
  return out;
}

}  // namespace tensoropt::ops
