#include "graph/ir.h"

#include <limits>
#include <sstream>

#include "graph/error.h"
#include "graph/op_catalogue.h"

namespace tensoropt {

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::string shape_str(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += ",";
    out += std::to_string(s[i]);
  }
  return out + "]";
}

double Value::real(int64_t i) const {
  return dtype_is_integral(dtype) ? static_cast<double>(ints.at(static_cast<size_t>(i)))
                                  : reals.at(static_cast<size_t>(i));
}

int64_t saturate_to_int64(double r) {
  if (r != r) return 0;
  if (r >= 9.2e18) return std::numeric_limits<int64_t>::max();
  if (r <= -9.2e18) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(r);
}

int64_t Value::integer(int64_t i) const {
  if (dtype_is_integral(dtype)) return ints.at(static_cast<size_t>(i));
  return saturate_to_int64(reals.at(static_cast<size_t>(i)));
}

std::string_view tensor_kind_name(TensorKind k) {
  switch (k) {
    case TensorKind::Input: return "input";
    case TensorKind::Parameter: return "parameter";
    case TensorKind::Buffer: return "buffer";
    case TensorKind::Constant: return "constant";
    case TensorKind::Activation: return "activation";
  }
  return "?";
}

const Attribute* Node::attr(const std::string& key) const {
  auto it = attrs.find(key);
  return it == attrs.end() ? nullptr : &it->second;
}

namespace {

std::string_view kind_name(Attribute::Kind k) {
  switch (k) {
    case Attribute::Kind::Int: return "INT";
    case Attribute::Kind::Float: return "FLOAT";
    case Attribute::Kind::String: return "STRING";
    case Attribute::Kind::Ints: return "INTS";
    case Attribute::Kind::Floats: return "FLOATS";
    case Attribute::Kind::Strings: return "STRINGS";
    case Attribute::Kind::Tensor: return "TENSOR";
    case Attribute::Kind::Graph: return "GRAPH";
  }
  return "?";
}

// The attribute `key` when present; an OpError when present with another type (a model whose
// attribute types disagree with the op's schema is refused, never read with a default).
const Attribute* typed(const Node& n, const std::string& key, Attribute::Kind want) {
  const Attribute* a = n.attr(key);
  if (a && a->kind != want) {
    throw OpError("attribute '" + key + "' has type " + std::string(kind_name(a->kind)) + ", expected " +
                  std::string(kind_name(want)));
  }
  return a;
}

}  // namespace

int64_t Node::attr_int(const std::string& key, int64_t fallback) const {
  const Attribute* a = typed(*this, key, Attribute::Kind::Int);
  return a ? a->i : fallback;
}

double Node::attr_float(const std::string& key, double fallback) const {
  const Attribute* a = typed(*this, key, Attribute::Kind::Float);
  return a ? a->f : fallback;
}

std::string Node::attr_string(const std::string& key, const std::string& fallback) const {
  const Attribute* a = typed(*this, key, Attribute::Kind::String);
  return a ? a->s : fallback;
}

std::optional<std::vector<int64_t>> Node::attr_ints(const std::string& key) const {
  const Attribute* a = typed(*this, key, Attribute::Kind::Ints);
  if (!a) return std::nullopt;
  return a->ints;
}

std::string Node::label() const {
  return "'" + name + "' (" + op_type + ")";
}

int Node::num_present_inputs() const {
  int n = 0;
  for (int t : inputs) n += t >= 0;
  return n;
}

int Graph::find(const std::string& tensor_name) const {
  auto it = by_name.find(tensor_name);
  return it == by_name.end() ? -1 : it->second;
}

int Graph::add_tensor(Tensor t) {
  TO_CHECK(!by_name.count(t.name));
  int id = static_cast<int>(tensors.size());
  by_name[t.name] = id;
  tensors.push_back(std::move(t));
  return id;
}

std::vector<std::vector<int>> Graph::consumers() const {
  std::vector<std::vector<int>> out(tensors.size());
  for (size_t n = 0; n < nodes.size(); ++n) {
    for (int t : nodes[n].inputs) {
      if (t < 0) continue;
      auto& list = out[static_cast<size_t>(t)];
      if (list.empty() || list.back() != static_cast<int>(n)) list.push_back(static_cast<int>(n));
    }
  }
  return out;
}

}  // namespace tensoropt
