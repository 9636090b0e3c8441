// Pooling: MaxPool, AveragePool (windowed) and GlobalAveragePool, GlobalMaxPool.
// N = input elements, P = output elements, K = kernel window elements.
#include "graph/ops/helpers.h"

namespace tensoropt::ops {
namespace {

Shape kernel_of(const OpView& v) {
  auto k = v.node.attr_ints("kernel_shape");
  if (!k || k->size() + 2 != v.in_shape(0).size()) throw OpError("kernel_shape missing or of the wrong rank");
  return *k;
}

double window_elems(const OpView& v) { return static_cast<double>(numel(kernel_of(v))); }

OpDef windowed(const std::string& type, bool is_max) {
  OpDef d;
  d.type = type;
  d.family = "pooling";
  d.flops_doc = is_max ? "P·K / P" : "P·K + P / P·K";
  d.saves_doc = is_max ? "input and int64 argmax indices (8 bytes per output)" : "input";
  d.infer = [](const OpView& v) {
    if (!v.has_input(0)) throw OpError("missing input");
    const Shape& x = v.in_shape(0);
    if (x.size() < 3) throw OpError("input " + shape_str(x) + " must be [N,C,spatial...]");
    Shape k = kernel_of(v);
    Shape out{x[0], x[1]};
    Shape sp = window_output(v, Shape(x.begin() + 2, x.end()), k);
    out.insert(out.end(), sp.begin(), sp.end());
    std::vector<OutType> r{{v.in(0).dtype, out}};
    if (v.num_outputs() > 1) r.push_back({DType::I64, out});
    return r;
  };
  d.space = [](const OpView& v) {
    const Shape& x = v.in_shape(0);
    const Shape& y = v.out(0).shape;
    Shape k = kernel_of(v);
    size_t sp = x.size() - 2;
    IterSpace s;
    s.dims = {{"n", x[0], DimRole::Parallel}, {"c", x[1], DimRole::Parallel}};
    std::vector<int> axes{0, 1};
    for (size_t i = 0; i < sp; ++i) {
      axes.push_back(static_cast<int>(s.dims.size()));
      s.dims.push_back({dim_name('o', i), y[2 + i], DimRole::Spatial});
    }
    for (size_t i = 0; i < sp; ++i) s.dims.push_back({dim_name('k', i), k[i], DimRole::Window});
    s.inputs = {axes};
    s.outputs.assign(static_cast<size_t>(v.num_outputs()), axes);
    return s;
  };
  d.fwd_flops = [is_max](const OpView& v) {
    return out_elems(v) * window_elems(v) + (is_max ? 0.0 : out_elems(v));
  };
  d.bwd_flops = [is_max](const OpView& v, const std::vector<bool>& g) {
    return g[0] ? (is_max ? out_elems(v) : out_elems(v) * window_elems(v)) : 0.0;
  };
  d.saved = [is_max](const OpView& v, const std::vector<bool>& g) {
    if (!g[0]) return std::vector<Saved>{};
    auto s = save_inputs(v, {0});
    if (is_max) s.push_back({-1, v.out(0).elements() * 8});
    return s;
  };
  return d;
}

OpDef global(const std::string& type, bool is_max) {
  OpDef d;
  d.type = type;
  d.family = "pooling";
  d.flops_doc = is_max ? "N / N" : "N + P / N";
  d.saves_doc = is_max ? "input and output" : "input";
  d.infer = [](const OpView& v) {
    if (!v.has_input(0)) throw OpError("missing input");
    Shape x = v.in_shape(0);
    if (x.size() < 3) throw OpError("input " + shape_str(x) + " must be [N,C,spatial...]");
    for (size_t a = 2; a < x.size(); ++a) x[a] = 1;
    return std::vector<OutType>{{v.in(0).dtype, x}};
  };
  d.space = [is_max](const OpView& v) {
    const Shape& x = v.in_shape(0);
    IterSpace s;
    s.dims = {{"n", x[0], DimRole::Parallel}, {"c", x[1], DimRole::Parallel}};
    std::vector<int> xa{0, 1}, ya{0, 1};
    for (size_t a = 2; a < x.size(); ++a) {
      xa.push_back(static_cast<int>(s.dims.size()));
      ya.push_back(-1);
      s.dims.push_back({dim_name('s', a - 2), x[a], is_max ? DimRole::Normalized : DimRole::Reduction});
    }
    s.inputs = {xa};
    s.outputs = {ya};
    return s;
  };
  d.fwd_flops = [is_max](const OpView& v) { return in_elems(v) + (is_max ? 0.0 : out_elems(v)); };
  d.bwd_flops = [](const OpView& v, const std::vector<bool>& g) { return g[0] ? in_elems(v) : 0.0; };
  d.saved = [is_max](const OpView& v, const std::vector<bool>& g) {
    return is_max ? save_input_and_output(v, g) : g[0] ? save_inputs(v, {0}) : std::vector<Saved>{};
  };
  return d;
}

}  // namespace

void register_pool(std::vector<OpDef>& ops) {
  ops.push_back(windowed("MaxPool", true));
  ops.push_back(windowed("AveragePool", false));
  ops.push_back(global("GlobalAveragePool", false));
  ops.push_back(global("GlobalMaxPool", true));
}

}  // namespace tensoropt::ops
