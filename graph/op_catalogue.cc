#include "graph/op_catalogue.h"

#include <algorithm>
#include <set>

#include "graph/error.h"
#include "graph/ops/helpers.h"

namespace tensoropt {

std::string_view dim_role_name(DimRole r) {
  switch (r) {
    case DimRole::Batch: return "batch";
    case DimRole::Parallel: return "parallel";
    case DimRole::Reduction: return "reduction";
    case DimRole::Spatial: return "spatial";
    case DimRole::Window: return "window";
    case DimRole::Normalized: return "normalized";
    case DimRole::Fixed: return "fixed";
  }
  return "?";
}

const Tensor& OpView::in(int i) const {
  if (!has_input(i)) throw OpError("missing input " + std::to_string(i));
  return graph.tensors[static_cast<size_t>(node.inputs[static_cast<size_t>(i)])];
}

const Value* OpView::in_value(int i) const {
  if (!has_input(i)) return nullptr;
  const Tensor& t = in(i);
  return t.value ? &*t.value : nullptr;
}

std::vector<int64_t> OpView::in_ints(int i, const char* what) const {
  const Value* v = in_value(i);
  if (!v) {
    std::string name = has_input(i) ? "'" + in(i).name + "'" : "(absent)";
    throw OpError(std::string(what) + " input " + name + " is not a constant the importer could compute");
  }
  std::vector<int64_t> out(static_cast<size_t>(v->size()));
  for (int64_t k = 0; k < v->size(); ++k) out[static_cast<size_t>(k)] = v->integer(k);
  return out;
}

const Tensor& OpView::out(int i) const {
  TO_CHECK(has_output(i));
  return graph.tensors[static_cast<size_t>(node.outputs[static_cast<size_t>(i)])];
}

const std::vector<OpDef>& all_ops() {
  static const std::vector<OpDef> ops = [] {
    std::vector<OpDef> v;
    ops::register_elementwise(v);
    ops::register_linear(v);
    ops::register_norm(v);
    ops::register_pool(v);
    ops::register_movement(v);
    ops::register_shape(v);
    ops::register_resample(v);
    std::sort(v.begin(), v.end(), [](const OpDef& a, const OpDef& b) { return a.type < b.type; });
    for (size_t i = 1; i < v.size(); ++i) TO_CHECK(v[i - 1].type != v[i].type);
    return v;
  }();
  return ops;
}

const OpDef* find_op(std::string_view type) {
  const auto& ops = all_ops();
  auto it = std::lower_bound(ops.begin(), ops.end(), type,
                             [](const OpDef& d, std::string_view t) { return d.type < t; });
  return it != ops.end() && it->type == type ? &*it : nullptr;
}

std::string supported_op_list() {
  std::string out;
  for (const OpDef& d : all_ops()) {
    if (!out.empty()) out += ", ";
    out += d.type;
  }
  return out;
}

OpBytes op_bytes(const OpView& v, const std::vector<bool>& needs_grad, const std::vector<Saved>& saved) {
  // Each tensor's bytes fit in int64 (ops::kMaxElements); their sums are checked.
  auto add = [&](int64_t& total, int64_t bytes) {
    if (__builtin_add_overflow(total, bytes, &total)) {
      throw InputError(v.graph.source_path + ": node " + v.node.label() + " reads or writes more than 2^63 bytes");
    }
  };
  OpBytes b;
  std::set<int> seen;
  for (int i = 0; i < v.num_inputs(); ++i) {
    if (v.has_input(i) && seen.insert(v.node.inputs[static_cast<size_t>(i)]).second) add(b.fwd_read, v.in(i).bytes());
  }
  bool any_grad = false;
  for (int i = 0; i < v.num_inputs(); ++i) {
    if (v.has_input(i) && needs_grad[static_cast<size_t>(i)]) {
      add(b.bwd_write, v.in(i).bytes());
      any_grad = true;
    }
  }
  for (int o = 0; o < v.num_outputs(); ++o) {
    if (!v.has_output(o)) continue;
    add(b.fwd_write, v.out(o).bytes());
    if (any_grad && dtype_is_float(v.out(o).dtype)) add(b.bwd_read, v.out(o).bytes());
  }
  if (any_grad) {
    for (const Saved& s : saved) add(b.bwd_read, s.bytes);
  }
  return b;
}

IterSpace op_space(const OpView& v) {
  const OpDef* def = find_op(v.node.op_type);
  TO_CHECK(def != nullptr);
  IterSpace s = def->space(v);
  // One operand list per input and output position the node has: optional operands a space
  // lists but the node omits are dropped; positions it does not list map no dims.
  s.inputs.resize(v.node.inputs.size());
  s.outputs.resize(v.node.outputs.size());
  for (size_t i = 0; i < s.inputs.size(); ++i) {
    if (!v.has_input(static_cast<int>(i))) continue;
    int b = v.in(static_cast<int>(i)).batch_axis;
    if (b < 0 || b >= static_cast<int>(s.inputs[i].size())) continue;
    int d = s.inputs[i][static_cast<size_t>(b)];
    if (d < 0) continue;
    DimRole& r = s.dims[static_cast<size_t>(d)].role;
    if (r == DimRole::Parallel || r == DimRole::Spatial) r = DimRole::Batch;
  }
  return s;
}

}  // namespace tensoropt
