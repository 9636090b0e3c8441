// Normalisations and reductions: BatchNormalization, LayerNormalization, Softmax, LogSoftmax,
// ReduceMean/Sum/Max/Min. N = elements of the input, S = elements of the statistics.
#include <algorithm>
#include <set>

#include "graph/ops/helpers.h"

namespace tensoropt::ops {
namespace {

bool bn_training(const OpView& v) {
  if (v.node.attr("training_mode")) return v.node.attr_int("training_mode", 0) != 0;
  return v.num_outputs() > 1 && v.has_output(1);  // before opset 14: running stats as outputs
}

OpDef batch_norm() {
  OpDef d;
  d.type = "BatchNormalization";
  d.family = "normalization";
  d.flops_doc = "training: 7·N / 8·N; inference: 2·N / 2·N";
  d.saves_doc = "X, plus mean and inverse std per channel in training";
  d.weight_inputs = {1, 2};
  d.buffer_inputs = {3, 4};
  d.nondiff_inputs = {3, 4};
  d.infer = [](const OpView& v) {
    for (int i = 0; i < 5; ++i) {
      if (!v.has_input(i)) throw OpError("needs 5 inputs (X, scale, B, mean, var)");
    }
    const Shape& x = v.in_shape(0);
    if (x.size() < 2) throw OpError("X " + shape_str(x) + " has no channel axis");
    for (int i = 1; i < 5; ++i) {
      if (v.in_shape(i) != Shape{x[1]}) throw OpError("input " + std::to_string(i) + " " + shape_str(v.in_shape(i)) + " is not [C]");
    }
    std::vector<OutType> out{{v.in(0).dtype, x}};
    for (int o = 1; o < v.num_outputs(); ++o) out.push_back({v.in(3).dtype, {x[1]}});
    return out;
  };
  d.space = [](const OpView& v) {
    const Shape& x = v.in_shape(0);
    bool train = bn_training(v);
    std::vector<DimRole> roles(x.size(), train ? DimRole::Normalized : DimRole::Parallel);
    roles[0] = DimRole::Parallel;
    roles[1] = DimRole::Parallel;
    std::vector<int> xa(x.size());
    for (size_t a = 0; a < x.size(); ++a) xa[a] = static_cast<int>(a);
    IterSpace s = axes_space(x, roles, {xa, {1}, {1}, {1}, {1}}, v.num_outputs());
    for (size_t o = 1; o < s.outputs.size(); ++o) s.outputs[o] = {1};
    return s;
  };
  d.fwd_flops = [](const OpView& v) { return (bn_training(v) ? 7 : 2) * in_elems(v); };
  d.bwd_flops = [](const OpView& v, const std::vector<bool>& g) {
    bool any = g[0] || g[1] || g[2];
    return any ? (bn_training(v) ? 8 : 2) * in_elems(v) : 0.0;
  };
  d.saved = [](const OpView& v, const std::vector<bool>& g) {
    if (!(g[0] || g[1] || g[2])) return std::vector<Saved>{};
    auto s = save_inputs(v, {0});
    if (bn_training(v)) s.push_back({-1, 2 * v.in_shape(0)[1] * 4});
    return s;
  };
  return d;
}

OpDef layer_norm() {
  OpDef d;
  d.type = "LayerNormalization";
  d.family = "normalization";
  d.flops_doc = "7·N / 8·N";
  d.saves_doc = "X, plus mean and inverse std per normalised row";
  d.weight_inputs = {1, 2};
  d.infer = [](const OpView& v) {
    if (!v.has_input(0) || !v.has_input(1)) throw OpError("needs X and Scale");
    const Shape& x = v.in_shape(0);
    int axis = norm_axis(v.node.attr_int("axis", -1), static_cast<int>(x.size()), "axis");
    Shape stat(x.begin(), x.begin() + axis);
    stat.resize(x.size(), 1);
    std::vector<OutType> out{{v.in(0).dtype, x}};
    for (int o = 1; o < v.num_outputs(); ++o) out.push_back({DType::F32, stat});
    return out;
  };
  d.space = [](const OpView& v) {
    const Shape& x = v.in_shape(0);
    int axis = norm_axis(v.node.attr_int("axis", -1), static_cast<int>(x.size()), "axis");
    std::vector<DimRole> roles(x.size(), DimRole::Parallel);
    std::vector<int> xa(x.size());
    for (size_t a = 0; a < x.size(); ++a) {
      xa[a] = static_cast<int>(a);
      if (static_cast<int>(a) >= axis) roles[a] = DimRole::Normalized;
    }
    auto param_axes = [&](int i) {
      std::vector<int> axes;
      if (!v.has_input(i)) return axes;
      const Shape& p = v.in_shape(i);
      for (size_t a = 0; a < p.size(); ++a) {
        size_t xa_i = x.size() - p.size() + a;
        axes.push_back(p[a] == x[xa_i] ? static_cast<int>(xa_i) : -1);
      }
      return axes;
    };
    IterSpace s = axes_space(x, roles, {xa, param_axes(1), param_axes(2)}, v.num_outputs());
    for (size_t o = 1; o < s.outputs.size(); ++o) {
      for (size_t a = static_cast<size_t>(axis); a < x.size(); ++a) s.outputs[o][a] = -1;
    }
    return s;
  };
  d.fwd_flops = [](const OpView& v) { return 7 * in_elems(v); };
  d.bwd_flops = [](const OpView& v, const std::vector<bool>& g) {
    return g[0] || g[1] || (v.num_inputs() > 2 && g[2]) ? 8 * in_elems(v) : 0.0;
  };
  d.saved = [](const OpView& v, const std::vector<bool>& g) {
    if (!(g[0] || g[1] || (v.num_inputs() > 2 && g[2]))) return std::vector<Saved>{};
    const Shape& x = v.in_shape(0);
    int axis = norm_axis(v.node.attr_int("axis", -1), static_cast<int>(x.size()), "axis");
    auto s = save_inputs(v, {0});
    s.push_back({-1, 2 * numel(Shape(x.begin(), x.begin() + axis)) * 4});
    return s;
  };
  return d;
}

OpDef softmax(const std::string& type) {
  OpDef d;
  d.type = type;
  d.family = "normalization";
  d.flops_doc = "5·N / 4·N";
  d.saves_doc = "output";
  auto axis_of = [](const OpView& v) {
    int rank = v.in_rank(0);
    return norm_axis(v.node.attr_int("axis", v.graph.opset >= 13 ? -1 : 1), rank, "axis");
  };
  d.infer = [axis_of](const OpView& v) {
    if (!v.has_input(0)) throw OpError("missing input");
    axis_of(v);
    return std::vector<OutType>{{v.in(0).dtype, v.in_shape(0)}};
  };
  d.space = [axis_of](const OpView& v) {
    const Shape& x = v.in_shape(0);
    int axis = axis_of(v);
    std::vector<DimRole> roles(x.size(), DimRole::Parallel);
    // Before opset 13 the op flattens to 2-D at `axis`: every axis from there on is normalised.
    for (size_t a = 0; a < x.size(); ++a) {
      if (static_cast<int>(a) == axis || (v.graph.opset < 13 && static_cast<int>(a) > axis)) roles[a] = DimRole::Normalized;
    }
    std::vector<int> xa(x.size());
    for (size_t a = 0; a < x.size(); ++a) xa[a] = static_cast<int>(a);
    return axes_space(x, roles, {xa});
  };
  d.fwd_flops = [](const OpView& v) { return 5 * in_elems(v); };
  d.bwd_flops = [](const OpView& v, const std::vector<bool>& g) { return g[0] ? 4 * in_elems(v) : 0.0; };
  d.saved = [](const OpView& v, const std::vector<bool>& g) {
    return g[0] ? save_outputs(v, {0}) : std::vector<Saved>{};
  };
  return d;
}

// Reduced axes of a Reduce* node: the `axes` attribute, or (ReduceSum from opset 13, all from
// opset 18) the optional second input. Empty axes reduce everything unless noop_with_empty_axes.
std::vector<bool> reduced_axes(const OpView& v) {
  int rank = v.in_rank(0);
  std::vector<int64_t> axes;
  if (auto a = v.node.attr_ints("axes")) axes = *a;
  else if (v.has_input(1)) axes = v.in_ints(1, "axes");
  std::vector<bool> red(static_cast<size_t>(rank), false);
  if (axes.empty()) {
    if (v.node.attr_int("noop_with_empty_axes", 0) == 0) red.assign(static_cast<size_t>(rank), true);
    return red;
  }
  for (int64_t a : axes) {
    int n = norm_axis(a, rank, "axis");
    if (red[static_cast<size_t>(n)]) throw OpError("axis " + std::to_string(a) + " repeated");
    red[static_cast<size_t>(n)] = true;
  }
  return red;
}

OpDef reduce(const std::string& type, bool linear) {
  OpDef d;
  d.type = type;
  d.family = "reduction";
  d.flops_doc = linear ? (type == "ReduceMean" ? "N + outputs / N" : "N / 0") : "N / N";
  d.saves_doc = linear ? "nothing" : "input and output";
  d.nondiff_inputs = {1};
  d.infer = [](const OpView& v) {
    if (!v.has_input(0)) throw OpError("missing input");
    auto red = reduced_axes(v);
    bool keep = v.node.attr_int("keepdims", 1) != 0;
    Shape out;
    const Shape& x = v.in_shape(0);
    for (size_t a = 0; a < x.size(); ++a) {
      if (!red[a]) out.push_back(x[a]);
      else if (keep) out.push_back(1);
    }
    return std::vector<OutType>{{v.in(0).dtype, out}};
  };
  d.space = [linear](const OpView& v) {
    auto red = reduced_axes(v);
    bool keep = v.node.attr_int("keepdims", 1) != 0;
    const Shape& x = v.in_shape(0);
    IterSpace s;
    std::vector<int> xa, ya;
    for (size_t a = 0; a < x.size(); ++a) {
      int dim = static_cast<int>(s.dims.size());
      s.dims.push_back({"d" + std::to_string(a), x[a],
                        red[a] ? (linear ? DimRole::Reduction : DimRole::Normalized) : DimRole::Parallel});
      xa.push_back(dim);
      if (!red[a]) ya.push_back(dim);
      else if (keep) ya.push_back(-1);
    }
    s.inputs = {xa, {}};
    s.outputs = {ya};
    return s;
  };
  bool mean = type == "ReduceMean";
  d.fwd_flops = [mean](const OpView& v) { return in_elems(v) + (mean ? out_elems(v) : 0.0); };
  d.bwd_flops = [linear, mean](const OpView& v, const std::vector<bool>& g) {
    return g[0] && (!linear || mean) ? in_elems(v) : 0.0;
  };
  d.saved = [linear](const OpView& v, const std::vector<bool>& g) {
    if (linear || !g[0]) return std::vector<Saved>{};
    auto s = save_inputs(v, {0});
    auto o = save_outputs(v, {0});
    s.insert(s.end(), o.begin(), o.end());
    return s;
  };
  return d;
}

}  // namespace

void register_norm(std::vector<OpDef>& ops) {
  ops.push_back(batch_norm());
  ops.push_back(layer_norm());
  ops.push_back(softmax("Softmax"));
  ops.push_back(softmax("LogSoftmax"));
  ops.push_back(reduce("ReduceMean", true));
  ops.push_back(reduce("ReduceSum", true));
  ops.push_back(reduce("ReduceMax", false));
  ops.push_back(reduce("ReduceMin", false));
}

}  // namespace tensoropt::ops
