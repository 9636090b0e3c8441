#include "profiler/signature.h"

#include <cstdio>

namespace tensoropt::profiler {

namespace {

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

template <typename T, typename F>
std::string list(const std::vector<T>& v, F f) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ',';
    s += f(v[i]);
  }
  s += ']';
  return s;
}

std::string attribute(const Attribute& a) {
  auto integer = [](int64_t x) { return std::to_string(x); };
  auto quoted = [](const std::string& x) {
    std::string q = "\"";
    q += x;
    q += '"';
    return q;
  };
  switch (a.kind) {
    case Attribute::Kind::Int: return integer(a.i);
    case Attribute::Kind::Float: return number(a.f);
    case Attribute::Kind::String: return quoted(a.s);
    case Attribute::Kind::Ints: return list(a.ints, integer);
    case Attribute::Kind::Floats: return list(a.floats, number);
    case Attribute::Kind::Strings: return quoted(a.s);
    case Attribute::Kind::Tensor: {
      std::string t = "tensor";
      if (a.tensor) t += shape_str(a.tensor->shape);
      return t;
    }
    case Attribute::Kind::Graph: return "graph";
  }
  return "?";
}

std::string operand(const Tensor& t, const Shape& local, planner::Precision precision) {
  std::string s = std::string(dtype_name(storage_dtype(t, precision))) + shape_str(local);
  if (t.kind == TensorKind::Constant && t.value && t.value->size() <= 8) {
    s += '=';
    for (int64_t i = 0; i < t.value->size(); ++i) {
      if (i) s += ',';
      s += dtype_is_integral(t.value->dtype) ? std::to_string(t.value->integer(i)) : number(t.value->real(i));
    }
  }
  return s;
}

}  // namespace

DType storage_dtype(const Tensor& t, planner::Precision precision) {
  return precision == planner::Precision::Bf16 && dtype_is_float(t.dtype) ? DType::BF16 : t.dtype;
}

std::string shard_signature(const planner::ShardWork& w, planner::Precision precision) {
  const Graph& g = *w.graph;
  const Node& n = *w.node;
  std::string s = n.op_type + "|";
  bool first = true;
  for (const auto& [name, a] : n.attrs) {
    if (!first) s += ',';
    s += name;
    s += '=';
    s += attribute(a);
    first = false;
  }
  s += "|";
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    if (i) s += ";";
    s += n.inputs[i] < 0 ? "-" : operand(g.tensors[static_cast<size_t>(n.inputs[i])], w.local_inputs[i], precision);
  }
  s += "|";
  for (size_t o = 0; o < n.outputs.size(); ++o) {
    if (o) s += ";";
    s += n.outputs[o] < 0 ? "-" : operand(g.tensors[static_cast<size_t>(n.outputs[o])], w.local_outputs[o], precision);
  }
  s += "|grad ";
  if (!w.has_backward) return s + "-";
  for (size_t i = 0; i < n.inputs.size(); ++i) s += i < w.input_grad.size() && w.input_grad[i] ? "1" : "0";
  return s;
}

}  // namespace tensoropt::profiler
