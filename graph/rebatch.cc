// Re-batching a fixed-batch export (graph/rebatch.h).
#include "graph/rebatch.h"

#include <numeric>

#include "graph/error.h"
#include "graph/op_catalogue.h"
#include "graph/ops/helpers.h"

namespace tensoropt {
namespace {

bool is_reshape(const std::string& type) { return type == "Reshape" || type == "Flatten"; }

// The factor an axis holds the batch as; outer 0 when it holds none.
struct Factor {
  int64_t outer = 0, inner = 0;
  bool operator==(const Factor&) const = default;
};

// Union-find over (tensor, axis) slots; a class may be marked as holding the batch.
class AxisClasses {
 public:
  explicit AxisClasses(const Graph& g) : offset_(g.tensors.size() + 1, 0) {
    for (size_t t = 0; t < g.tensors.size(); ++t) offset_[t + 1] = offset_[t] + g.tensors[t].shape.size();
    parent_.resize(offset_.back());
    std::iota(parent_.begin(), parent_.end(), size_t{0});
    factor_.assign(offset_.back(), Factor{});
  }
  size_t slot(int t, size_t axis) const { return offset_[static_cast<size_t>(t)] + axis; }
  size_t find(size_t x) {
    while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];
    return x;
  }
  void unite(size_t a, size_t b) {
    a = find(a);
    b = find(b);
    if (a != b) parent_[b] = a;
  }
  Factor factor(int t, size_t axis) { return factor_[find(slot(t, axis))]; }
  // Marks the class; returns whether anything changed. Throws on a conflicting factor.
  bool mark(const Graph& g, int t, size_t axis, Factor f) {
    Factor& have = factor_[find(slot(t, axis))];
    if (have == f) return false;
    if (have.outer != 0) {
      throw InputError(g.source_path + ": tensor '" + g.tensors[static_cast<size_t>(t)].name + "' axis " +
                       std::to_string(axis) + " holds the batch as two different factors");
    }
    have = f;
    return true;
  }

 private:
  std::vector<size_t> offset_;
  std::vector<size_t> parent_;
  std::vector<Factor> factor_;
};

bool known(const Tensor& x) { return x.dtype != DType::Undefined; }

// The input position of the shape operand with which an op sets its output's shape explicitly
// (where an export writes the batch as a number), or -1.
int shape_operand(const std::string& type) {
  return type == "Reshape" || type == "Expand" || type == "Tile" ? 1
         : type == "ConstantOfShape"                             ? 0
         : type == "Resize"                                      ? 3
                                                                 : -1;
}

// Which tensors may hold the batch: the data inputs, what a shape operand sized (a class token
// expanded to [B0, 1, d]), and what is computed from either. A tensor of the model's own (a
// causal mask sliced from a buffer to [1, 1, T, T]) does not, even where it broadcasts against
// the batch at B0 = 1 with an axis of the same size.
std::vector<bool> may_hold_batch(const Graph& g) {
  std::vector<bool> holds(g.tensors.size(), false);
  for (int t : g.inputs) holds[static_cast<size_t>(t)] = true;
  for (const Node& n : g.nodes) {
    bool any = shape_operand(n.op_type) >= 0;
    for (int t : n.inputs) any = any || (t >= 0 && holds[static_cast<size_t>(t)]);
    for (int o : n.outputs)
      if (o >= 0) holds[static_cast<size_t>(o)] = any;
  }
  return holds;
}

// Operand axes mapped to one iteration dim index the same positions: one class.
void unite_by_spaces(const Graph& g, AxisClasses& c) {
  const std::vector<bool> holds = may_hold_batch(g);
  for (const Node& n : g.nodes) {
    if (is_reshape(n.op_type) || !find_op(n.op_type)) continue;
    bool ready = true;
    for (int t : n.inputs) ready = ready && (t < 0 || known(g.tensors[static_cast<size_t>(t)]));
    for (int t : n.outputs) ready = ready && (t < 0 || known(g.tensors[static_cast<size_t>(t)]));
    if (!ready) continue;
    IterSpace s;
    try {
      s = op_space(OpView(g, n));
    } catch (const std::exception&) {
      continue;  // an op whose space needs what a shape subgraph lacks: it joins nothing
    }
    std::vector<std::vector<size_t>> members(s.dims.size());
    auto collect = [&](const std::vector<int>& tensors, const std::vector<std::vector<int>>& maps) {
      for (size_t k = 0; k < tensors.size() && k < maps.size(); ++k) {
        int t = tensors[k];
        if (t < 0 || !holds[static_cast<size_t>(t)]) continue;
        const Shape& shape = g.tensors[static_cast<size_t>(t)].shape;
        for (size_t a = 0; a < maps[k].size() && a < shape.size(); ++a) {
          int d = maps[k][a];
          if (d >= 0 && static_cast<size_t>(d) < s.dims.size() && shape[a] == s.dims[static_cast<size_t>(d)].size) {
            members[static_cast<size_t>(d)].push_back(c.slot(t, a));
          }
        }
      }
    };
    collect(n.inputs, s.inputs);
    collect(n.outputs, s.outputs);
    for (const auto& m : members) {
      for (size_t k = 1; k < m.size(); ++k) c.unite(m[0], m[k]);
    }
  }
}

// Where a reshape from `in` to `out` puts the batch that input axis `a` holds as factor `f`:
// the output axis whose range of flat strides holds the batch index's stride and its B0 steps,
// or -1. At B0 = 1 several axes may qualify; the outermost wins.
std::pair<int, Factor> reshape_batch_axis(const Shape& in, size_t a, Factor f, const Shape& out, int64_t b0) {
  int64_t stride = f.inner;
  for (size_t k = a + 1; k < in.size(); ++k) stride *= in[k];
  int64_t span = stride * b0;
  int64_t after = 1;
  std::pair<int, Factor> found{-1, {}};
  if (span <= 0) return found;  // an empty axis: no batch to find
  for (size_t j = out.size(); j-- > 0;) {
    int64_t end = after * out[j];
    if (out[j] > 0 && after > 0 && after <= stride && span <= end && stride % after == 0 && end % span == 0) {
      found = {static_cast<int>(j), {end / span, stride / after}};
    }
    after = end;
  }
  return found;
}

}  // namespace

std::map<int, std::vector<BatchAxis>> batch_axes(const Graph& g, int64_t b0) {
  TO_CHECK(b0 > 0);
  AxisClasses c(g);
  unite_by_spaces(g, c);
  for (int t : g.inputs) {
    if (!g.tensors[static_cast<size_t>(t)].shape.empty()) c.mark(g, t, 0, {1, 1});
  }
  // Reshapes carry the batch by strides; repeat until nothing changes (a reshape may learn its
  // input's batch only from a class another reshape marked).
  for (bool changed = true; changed;) {
    changed = false;
    for (const Node& n : g.nodes) {
      if (!is_reshape(n.op_type) || n.inputs.empty() || n.outputs.empty()) continue;
      int ti = n.inputs[0], to = n.outputs[0];
      if (ti < 0 || to < 0 || !known(g.tensors[static_cast<size_t>(ti)]) || !known(g.tensors[static_cast<size_t>(to)])) continue;
      const Shape& in = g.tensors[static_cast<size_t>(ti)].shape;
      const Shape& out = g.tensors[static_cast<size_t>(to)].shape;
      int found = 0;
      size_t axis = 0;
      Factor f;
      for (size_t a = 0; a < in.size(); ++a) {
        if (Factor fa = c.factor(ti, a); fa.outer > 0) {
          ++found;
          axis = a;
          f = fa;
        }
      }
      if (found != 1) continue;
      auto [j, fo] = reshape_batch_axis(in, axis, f, out, b0);
      if (j >= 0) changed = c.mark(g, to, static_cast<size_t>(j), fo) || changed;
    }
  }
  std::map<int, std::vector<BatchAxis>> result;
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    for (size_t a = 0; a < g.tensors[t].shape.size(); ++a) {
      if (Factor f = c.factor(static_cast<int>(t), a); f.outer > 0) {
        result[static_cast<int>(t)].push_back({static_cast<int>(a), f.outer, f.inner});
      }
    }
  }
  return result;
}

ShapeRewrites shape_rewrites(const Graph& g, const std::map<int, std::vector<BatchAxis>>& axes, int64_t b0) {
  ShapeRewrites out;
  auto batch_of = [&](int t) -> const std::vector<BatchAxis>* {
    auto it = axes.find(t);
    return it == axes.end() ? nullptr : &it->second;
  };
  for (const Node& n : g.nodes) {
    if (n.outputs.empty() || n.outputs[0] < 0) continue;
    const std::vector<BatchAxis>* ba = batch_of(n.outputs[0]);
    if (!ba) continue;
    const Shape& shape = g.tensors[static_cast<size_t>(n.outputs[0])].shape;
    const int pos = shape_operand(n.op_type);
    if (pos < 0 || static_cast<int>(n.inputs.size()) <= pos || n.inputs[static_cast<size_t>(pos)] < 0) continue;
    const Tensor& operand = g.tensors[static_cast<size_t>(n.inputs[static_cast<size_t>(pos)])];
    if (!operand.value || !dtype_is_integral(operand.value->dtype)) continue;
    const std::vector<int64_t>& v = operand.value->ints;
    auto& list = out[g.tensors[static_cast<size_t>(n.outputs[0])].name];
    for (const BatchAxis& b : *ba) {
      auto j = static_cast<size_t>(b.axis);
      if (n.op_type == "Tile") {
        const std::vector<BatchAxis>* in_axes = batch_of(n.inputs[0]);
        bool input_batched = false;
        if (in_axes) {
          for (const BatchAxis& ib : *in_axes) input_batched = input_batched || ib.axis == b.axis;
        }
        if (!input_batched && j < v.size()) list.push_back({pos, j, b});
        continue;
      }
      // Expand aligns its shape operand to the output's trailing axes.
      size_t offset = n.op_type == "Expand" ? shape.size() - std::min(shape.size(), v.size()) : 0;
      if (j < offset) continue;
      size_t e = j - offset;
      if (e < v.size() && v[e] == shape[j] && shape[j] == b.size(b0)) list.push_back({pos, e, b});
    }
    if (list.empty()) out.erase(g.tensors[static_cast<size_t>(n.outputs[0])].name);
  }
  return out;
}

void apply_shape_rewrites(Graph& g, size_t ni, const ShapeRewrites& rewrites, int64_t batch) {
  const Node& node = g.nodes[ni];
  if (node.outputs.empty() || node.outputs[0] < 0) return;
  auto it = rewrites.find(g.tensors[static_cast<size_t>(node.outputs[0])].name);
  if (it == rewrites.end()) return;
  std::map<int, Value> replaced;
  for (const ShapeRewrite& r : it->second) {
    int t = node.inputs[static_cast<size_t>(r.input)];
    const Tensor& operand = g.tensors[static_cast<size_t>(t)];
    if (!operand.value || !dtype_is_integral(operand.value->dtype) || r.entry >= operand.value->ints.size()) {
      throw InputError(g.source_path + ": node " + node.label() + ": its shape operand '" + operand.name +
                       "' is not a constant at batch " + std::to_string(batch));
    }
    Value& v = replaced.try_emplace(r.input, *operand.value).first->second;
    int64_t want = ops::mul_checked(ops::mul_checked(r.axis.outer, batch), r.axis.inner);
    if (node.op_type == "Tile") {
      int64_t in = g.tensors[static_cast<size_t>(node.inputs[0])].shape[r.entry];
      if (in <= 0 || want % in != 0) {
        throw InputError(g.source_path + ": node " + node.label() + " tiles an axis of " + std::to_string(in) +
                         " to the batch, which does not divide " + std::to_string(want));
      }
      want /= in;
    }
    v.ints[r.entry] = want;
  }
  for (auto& [pos, value] : replaced) {
    Tensor t;
    t.name = g.tensors[static_cast<size_t>(g.nodes[ni].inputs[static_cast<size_t>(pos)])].name + "#batch" + std::to_string(batch) +
             "@" + g.tensors[static_cast<size_t>(g.nodes[ni].outputs[0])].name;
    t.dtype = value.dtype;
    t.shape = value.shape;
    t.kind = TensorKind::Constant;
    t.value = std::move(value);
    int idx = g.add_tensor(std::move(t));
    g.nodes[ni].inputs[static_cast<size_t>(pos)] = idx;
  }
}

void check_rebatched(const Graph& at_b0, const Graph& at_b, const std::map<int, std::vector<BatchAxis>>& axes,
                     int64_t b0, int64_t b) {
  for (size_t t = 0; t < at_b0.tensors.size(); ++t) {
    const Tensor& x0 = at_b0.tensors[t];
    if (!known(x0)) continue;
    int tb = at_b.find(x0.name);
    TO_CHECK(tb >= 0);
    const Tensor& xb = at_b.tensors[static_cast<size_t>(tb)];
    Shape want = x0.shape;
    if (auto it = axes.find(static_cast<int>(t)); it != axes.end()) {
      for (const BatchAxis& a : it->second) want[static_cast<size_t>(a.axis)] = a.size(b);
    }
    if (xb.shape != want || xb.dtype != x0.dtype) {
      std::string where = x0.producer >= 0 ? " (node " + at_b0.nodes[static_cast<size_t>(x0.producer)].label() + ")" : "";
      throw InputError(at_b0.source_path + ": exported at a fixed batch of " + std::to_string(b0) + ", and at batch " +
                       std::to_string(b) + " tensor '" + x0.name + "'" + where + " would be " + shape_str(xb.shape) +
                       " instead of " + shape_str(want) + "; " + rebatch_advice(at_b0, b0));
    }
  }
}

std::string rebatch_advice(const Graph& g, int64_t b0) {
  std::string names;
  for (int t : g.inputs) names += (names.empty() ? "'" : ", '") + g.tensors[static_cast<size_t>(t)].name + "': {0: 'batch'}";
  return "re-export with torch.onnx.export(..., dynamic_axes={" + names +
         ", <each output>: {0: 'batch'}}), or use --batch " + std::to_string(b0);
}

}  // namespace tensoropt
