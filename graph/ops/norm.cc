// Normalisations and reductions: BatchNormalization, LayerNormalization, Softmax, LogSoftmax,
// ReduceMean/Sum/Max/Min. N = elements of the input, S = elements of the statistics.
#include <algorithm>
#include <cmath>
#include <functional>
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
    std::vector<int> xa = iota_axes(x.size());
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
    for (int i = 1; i < 3; ++i) {
      if (!v.has_input(i)) continue;
      const Shape& p = v.in_shape(i);
      if (p.size() > x.size()) throw OpError("input " + std::to_string(i) + " " + shape_str(p) + " has a higher rank than X " + shape_str(x));
      broadcast({p, x});
    }
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
    std::vector<int> xa = iota_axes(x.size());
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

// Folds a Reduce* over a small constant: `combine` accumulates, `finish` maps (acc, count).
Value fold_reduce(const OpView& v, double init, const std::function<double(double, double)>& combine,
                  const std::function<double(double, int64_t)>& finish) {
  auto red = reduced_axes(v);
  const Shape& x = v.in_shape(0);
  const Value& in = *v.in_value(0);
  const Shape& out_shape = v.out(0).shape;
  // Output index of each input element: drop (or zero) the reduced axes.
  Shape kept;
  for (size_t a = 0; a < x.size(); ++a) kept.push_back(red[a] ? 1 : x[a]);
  std::vector<double> acc(static_cast<size_t>(numel(kept)), init);
  std::vector<int64_t> idx(x.size(), 0);
  for (int64_t k = 0; k < numel(x); ++k) {
    int64_t o = 0;
    for (size_t a = 0; a < x.size(); ++a) o = o * kept[a] + (red[a] ? 0 : idx[a]);
    acc[static_cast<size_t>(o)] = combine(acc[static_cast<size_t>(o)], in.real(k));
    next_index(idx, x);
  }
  int64_t count = numel(x) / std::max<int64_t>(1, numel(kept));
  Value r = make_value(v.in(0).dtype, out_shape);
  for (size_t o = 0; o < acc.size(); ++o) {
    double f = finish(acc[o], count);
    set_elem(r, static_cast<int64_t>(o), f, saturate_to_int64(f));
  }
  return r;
}

OpDef reduce(const std::string& type, bool linear) {
  OpDef d;
  d.type = type;
  d.family = "reduction";
  d.flops_doc = linear ? (type == "ReduceMean" ? "N + outputs / N" : "N / 0") : "N / N";
  d.saves_doc = linear ? "nothing" : "input and output";
  using F2 = std::function<double(double, double)>;
  using Fin = std::function<double(double, int64_t)>;
  auto ident = Fin([](double a, int64_t) { return a; });
  if (type == "ReduceSum") d.fold = [ident](const OpView& v) { return std::vector<Value>{fold_reduce(v, 0, F2(std::plus<double>()), ident)}; };
  if (type == "ReduceMean") d.fold = [](const OpView& v) {
    return std::vector<Value>{fold_reduce(v, 0, F2(std::plus<double>()), [](double a, int64_t n) { return a / static_cast<double>(n); })};
  };
  if (type == "ReduceProd") d.fold = [ident](const OpView& v) { return std::vector<Value>{fold_reduce(v, 1, F2(std::multiplies<double>()), ident)}; };
  if (type == "ReduceMax") d.fold = [ident](const OpView& v) {
    return std::vector<Value>{fold_reduce(v, -HUGE_VAL, [](double a, double b) { return std::max(a, b); }, ident)};
  };
  if (type == "ReduceMin") d.fold = [ident](const OpView& v) {
    return std::vector<Value>{fold_reduce(v, HUGE_VAL, [](double a, double b) { return std::min(a, b); }, ident)};
  };
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
      s.dims.push_back({dim_name('d', a), x[a],
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
    return linear ? std::vector<Saved>{} : save_input_and_output(v, g);
  };
  return d;
}

// InstanceNormalization(X, scale[C], B[C]) and GroupNormalization(X, scale, bias; num_groups):
// statistics over the spatial axes (and, for groups, the channels of a group).
OpDef group_stats_norm(const std::string& type) {
  OpDef d;
  d.type = type;
  d.family = "normalization";
  d.flops_doc = "7·N / 8·N";
  d.saves_doc = "X, plus mean and inverse std per (sample, group)";
  d.weight_inputs = {1, 2};
  bool instance = type == "InstanceNormalization";
  auto groups = [instance](const OpView& v) {
    return instance ? v.in_shape(0)[1] : v.node.attr_int("num_groups", 0);
  };
  d.infer = [groups](const OpView& v) {
    if (!v.has_input(0) || !v.has_input(1) || !v.has_input(2)) throw OpError("needs X, scale and bias");
    const Shape& x = v.in_shape(0);
    if (x.size() < 3) throw OpError("X " + shape_str(x) + " must be [N,C,spatial...]");
    int64_t g = groups(v);
    if (g <= 0 || x[1] % g != 0) throw OpError("num_groups " + std::to_string(g) + " does not divide the channels");
    return std::vector<OutType>{{v.in(0).dtype, x}};
  };
  d.space = [instance](const OpView& v) {
    const Shape& x = v.in_shape(0);
    std::vector<DimRole> roles(x.size(), DimRole::Normalized);
    roles[0] = DimRole::Parallel;
    if (instance) roles[1] = DimRole::Parallel;
    std::vector<int> xa = iota_axes(x.size());
    auto param = [&](int i) { return v.in_shape(i) == Shape{x[1]} ? std::vector<int>{1} : std::vector<int>{-1}; };
    return axes_space(x, roles, {xa, param(1), param(2)});
  };
  d.fwd_flops = [](const OpView& v) { return 7 * in_elems(v); };
  d.bwd_flops = [](const OpView& v, const std::vector<bool>& g) { return g[0] || g[1] || g[2] ? 8 * in_elems(v) : 0.0; };
  d.saved = [groups](const OpView& v, const std::vector<bool>& g) {
    if (!(g[0] || g[1] || g[2])) return std::vector<Saved>{};
    auto s = save_inputs(v, {0});
    // Mean and inverse deviation per sample and group; groups divide the channels, so at most
    // N * C statistics (num_groups is unbounded only when there are no channels).
    const Shape& x = v.in_shape(0);
    s.push_back({-1, 2 * x[0] * std::min(groups(v), x[1]) * 4});
    return s;
  };
  return d;
}

OpDef lp_normalization() {
  OpDef d;
  d.type = "LpNormalization";
  d.family = "normalization";
  d.flops_doc = "3·N / 4·N";
  d.saves_doc = "input and output";
  d.infer = [](const OpView& v) {
    norm_axis(v.node.attr_int("axis", -1), v.in_rank(0), "axis");
    return std::vector<OutType>{{v.in(0).dtype, v.in_shape(0)}};
  };
  d.space = [](const OpView& v) {
    const Shape& x = v.in_shape(0);
    int axis = norm_axis(v.node.attr_int("axis", -1), static_cast<int>(x.size()), "axis");
    std::vector<DimRole> roles(x.size(), DimRole::Parallel);
    roles[static_cast<size_t>(axis)] = DimRole::Normalized;
    std::vector<int> xa = iota_axes(x.size());
    return axes_space(x, roles, {xa});
  };
  d.fwd_flops = [](const OpView& v) { return 3 * in_elems(v); };
  d.bwd_flops = [](const OpView& v, const std::vector<bool>& g) { return g[0] ? 4 * in_elems(v) : 0.0; };
  d.saved = save_input_and_output;
  return d;
}

// CumSum(x, axis): running sums along one axis; backward is the reverse running sum.
OpDef cumsum() {
  OpDef d;
  d.type = "CumSum";
  d.family = "reduction";
  d.flops_doc = "N / N";
  d.saves_doc = "nothing";
  d.nondiff_inputs = {1};
  auto axis_of = [](const OpView& v) { return norm_axis(v.in_ints(1, "axis").at(0), v.in_rank(0), "axis"); };
  d.infer = [axis_of](const OpView& v) {
    if (!v.has_input(0)) throw OpError("missing input");
    axis_of(v);
    return std::vector<OutType>{{v.in(0).dtype, v.in_shape(0)}};
  };
  d.space = [axis_of](const OpView& v) {
    const Shape& x = v.in_shape(0);
    std::vector<DimRole> roles(x.size(), DimRole::Parallel);
    roles[static_cast<size_t>(axis_of(v))] = DimRole::Fixed;
    std::vector<int> xa = iota_axes(x.size());
    return axes_space(x, roles, {xa, {}});
  };
  d.fwd_flops = [](const OpView& v) { return in_elems(v); };
  d.bwd_flops = [](const OpView& v, const std::vector<bool>& g) { return g[0] ? in_elems(v) : 0.0; };
  d.saved = [](const OpView&, const std::vector<bool>&) { return std::vector<Saved>{}; };
  return d;
}

// ArgMax/ArgMin(x; axis, keepdims) -> int64 indices; TopK(x, k; axis) -> values, int64 indices.
OpDef arg_reduce(const std::string& type) {
  OpDef d;
  bool topk = type == "TopK";
  d.type = type;
  d.family = "reduction";
  d.flops_doc = topk ? "N·log2(k) / N (scatter of the gradient)" : "N / 0 (no gradient)";
  d.saves_doc = topk ? "indices" : "nothing";
  d.nondiff_inputs = topk ? std::vector<int>{1} : std::vector<int>{0};
  auto axis_of = [topk](const OpView& v) { return norm_axis(v.node.attr_int("axis", topk ? -1 : 0), v.in_rank(0), "axis"); };
  d.infer = [axis_of, topk](const OpView& v) {
    if (!v.has_input(0)) throw OpError("missing input");
    Shape out = v.in_shape(0);
    auto axis = static_cast<size_t>(axis_of(v));
    if (topk) {
      int64_t k = v.in_ints(1, "k").at(0);
      if (k < 0 || k > out[axis]) throw OpError("k = " + std::to_string(k) + " is out of range");
      out[axis] = k;
      return std::vector<OutType>{{v.in(0).dtype, out}, {DType::I64, out}};
    }
    if (v.node.attr_int("keepdims", 1) != 0) out[axis] = 1;
    else out.erase(out.begin() + static_cast<long>(axis));
    return std::vector<OutType>{{DType::I64, out}};
  };
  d.space = [axis_of, topk](const OpView& v) {
    const Shape& x = v.in_shape(0);
    auto axis = static_cast<size_t>(axis_of(v));
    IterSpace s;
    std::vector<int> xa, ya;
    bool keep = topk || v.node.attr_int("keepdims", 1) != 0;
    for (size_t a = 0; a < x.size(); ++a) {
      xa.push_back(static_cast<int>(a));
      s.dims.push_back({dim_name('d', a), x[a], a == axis ? DimRole::Normalized : DimRole::Parallel});
      if (a != axis) ya.push_back(static_cast<int>(a));
      else if (keep) ya.push_back(-1);
    }
    s.inputs = {xa, {}};
    s.outputs.assign(static_cast<size_t>(v.num_outputs()), ya);
    return s;
  };
  d.fwd_flops = [topk, axis_of](const OpView& v) {
    if (!topk) return in_elems(v);
    int64_t k = v.out(0).shape[static_cast<size_t>(axis_of(v))];
    return in_elems(v) * std::log2(static_cast<double>(std::max<int64_t>(k, 2)));
  };
  d.bwd_flops = [topk](const OpView& v, const std::vector<bool>& g) { return topk && g[0] ? in_elems(v) : 0.0; };
  d.saved = [topk](const OpView& v, const std::vector<bool>& g) {
    return topk && g[0] ? save_outputs(v, {1}) : std::vector<Saved>{};
  };
  return d;
}

}  // namespace

void register_norm(std::vector<OpDef>& ops) {
  ops.push_back(group_stats_norm("InstanceNormalization"));
  ops.push_back(group_stats_norm("GroupNormalization"));
  ops.push_back(lp_normalization());
  ops.push_back(cumsum());
  ops.push_back(arg_reduce("ArgMax"));
  ops.push_back(arg_reduce("ArgMin"));
  ops.push_back(arg_reduce("TopK"));
  ops.push_back(reduce("ReduceProd", false));
  ops.push_back(reduce("ReduceL1", false));
  ops.push_back(reduce("ReduceL2", false));
  ops.push_back(reduce("ReduceSumSquare", false));
  ops.push_back(reduce("ReduceLogSumExp", false));
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
