// Ops that contract over a reduction dimension: Conv, ConvTranspose, Gemm, MatMul (Einsum: einsum.cc).
// Legend: N batch, C input channels, M output channels, g groups, K kernel elements,
// O output spatial positions, and for matrix products [m,k] x [k,n] with b batch elements.
#include <numeric>

#include "graph/ops/helpers.h"

namespace tensoropt::ops {
namespace {

// Multiply-accumulates of a Conv: N·M·O·(C/g)·K.
double conv_macs(const OpView& v) {
  const Shape& w = v.in_shape(1);
  double per_out = 1;
  for (size_t i = 1; i < w.size(); ++i) per_out *= static_cast<double>(w[i]);
  return out_elems(v) * per_out;
}

OpDef conv() {
  OpDef d;
  d.type = "Conv";
  d.family = "linear";
  d.flops_doc = "2·N·M·O·(C/g)·K (+ N·M·O bias) / the same per gradient needed: dX, dW (bias: N·M·O)";
  d.saves_doc = "X for dW, W for dX";
  d.weight_inputs = {1, 2};
  d.infer = [](const OpView& v) {
    if (!v.has_input(0) || !v.has_input(1)) throw OpError("needs X and W");
    const Shape& x = v.in_shape(0);
    const Shape& w = v.in_shape(1);
    if (x.size() < 3 || w.size() != x.size()) throw OpError("X " + shape_str(x) + " and W " + shape_str(w) + " ranks do not match");
    int64_t g = v.node.attr_int("group", 1);
    if (g <= 0 || x[1] % g != 0 || w[0] % g != 0 || x[1] / g != w[1]) {
      throw OpError("channels of X " + shape_str(x) + " do not match W " + shape_str(w) + " with group " + std::to_string(g));
    }
    if (auto ks = v.node.attr_ints("kernel_shape"); ks && *ks != Shape(w.begin() + 2, w.end())) {
      throw OpError("kernel_shape disagrees with W " + shape_str(w));
    }
    if (v.has_input(2) && v.in_shape(2) != Shape{w[0]}) throw OpError("bias shape " + shape_str(v.in_shape(2)) + " is not [M]");
    Shape out{x[0], w[0]};
    Shape sp = window_output(v, Shape(x.begin() + 2, x.end()), Shape(w.begin() + 2, w.end()));
    out.insert(out.end(), sp.begin(), sp.end());
    return std::vector<OutType>{{v.in(0).dtype, out}};
  };
  d.space = [](const OpView& v) {
    const Shape& x = v.in_shape(0);
    const Shape& w = v.in_shape(1);
    const Shape& y = v.out(0).shape;
    int64_t g = v.node.attr_int("group", 1);
    size_t sp = x.size() - 2;
    IterSpace s;
    // dims: n, [g], m (per group), o0.., c (per group), k0..
    s.dims.push_back({"n", x[0], DimRole::Parallel});
    int gd = -1;
    if (g > 1) {
      gd = static_cast<int>(s.dims.size());
      s.dims.push_back({"g", g, DimRole::Parallel});
    }
    int md = static_cast<int>(s.dims.size());
    s.dims.push_back({"m", w[0] / g, DimRole::Parallel});
    int od = static_cast<int>(s.dims.size());
    for (size_t i = 0; i < sp; ++i) s.dims.push_back({dim_name('o', i), y[2 + i], DimRole::Spatial});
    int cd = static_cast<int>(s.dims.size());
    s.dims.push_back({"c", w[1], DimRole::Reduction});
    int kd = static_cast<int>(s.dims.size());
    for (size_t i = 0; i < sp; ++i) s.dims.push_back({dim_name('k', i), w[2 + i], DimRole::Window});
    std::vector<int> xa{0, g > 1 ? gd : cd}, wa{g > 1 ? gd : md, cd}, ya{0, g > 1 ? gd : md};
    for (size_t i = 0; i < sp; ++i) {
      xa.push_back(od + static_cast<int>(i));
      wa.push_back(kd + static_cast<int>(i));
      ya.push_back(od + static_cast<int>(i));
    }
    s.inputs = {xa, wa, {g > 1 ? gd : md}};
    s.additive = {2};
    s.outputs = {ya};
    return s;
  };
  d.fwd_flops = [](const OpView& v) { return 2 * conv_macs(v) + (v.has_input(2) ? out_elems(v) : 0.0); };
  d.bwd_flops = [](const OpView& v, const std::vector<bool>& g) {
    double m = 2 * conv_macs(v);
    return (g[0] ? m : 0.0) + (g[1] ? m : 0.0) + (v.num_inputs() > 2 && g[2] ? out_elems(v) : 0.0);
  };
  d.saved = save_for_other_operand;
  return d;
}

struct GemmDims {
  int64_t m, n, k;
};

GemmDims gemm_dims(const OpView& v) {
  const Shape& a = v.in_shape(0);
  const Shape& b = v.in_shape(1);
  if (a.size() != 2 || b.size() != 2) throw OpError("A " + shape_str(a) + " and B " + shape_str(b) + " must be matrices");
  bool ta = v.node.attr_int("transA", 0) != 0, tb = v.node.attr_int("transB", 0) != 0;
  int64_t m = ta ? a[1] : a[0], k = ta ? a[0] : a[1];
  int64_t kb = tb ? b[1] : b[0], n = tb ? b[0] : b[1];
  if (k != kb) throw OpError("inner dimensions of A " + shape_str(a) + " and B " + shape_str(b) + " differ");
  return {m, n, k};
}

OpDef gemm() {
  OpDef d;
  d.type = "Gemm";
  d.family = "linear";
  d.flops_doc = "2·m·n·k (+ m·n for C) / 2·m·n·k per operand A, B needing a gradient (+ m·n for C)";
  d.saves_doc = "A for dB, B for dA";
  d.weight_inputs = {1, 2};
  d.infer = [](const OpView& v) {
    if (!v.has_input(0) || !v.has_input(1)) throw OpError("needs A and B");
    GemmDims g = gemm_dims(v);
    if (v.has_input(2)) broadcast({v.in_shape(2), {g.m, g.n}});
    return std::vector<OutType>{{v.in(0).dtype, {g.m, g.n}}};
  };
  d.space = [](const OpView& v) {
    GemmDims g = gemm_dims(v);
    bool ta = v.node.attr_int("transA", 0) != 0, tb = v.node.attr_int("transB", 0) != 0;
    IterSpace s;
    s.dims = {{"m", g.m, DimRole::Parallel}, {"n", g.n, DimRole::Parallel}, {"k", g.k, DimRole::Reduction}};
    s.inputs = {ta ? std::vector<int>{2, 0} : std::vector<int>{0, 2}, tb ? std::vector<int>{1, 2} : std::vector<int>{2, 1}};
    if (v.has_input(2)) {
      const Shape& c = v.in_shape(2);
      std::vector<int> ca;
      for (size_t i = 0; i < c.size(); ++i) {
        int axis = static_cast<int>(i + 2 - c.size());
        ca.push_back(c[i] == (axis == 0 ? g.m : g.n) ? axis : -1);
      }
      s.inputs.push_back(ca);
      s.additive = {2};
    }
    s.outputs = {{0, 1}};
    return s;
  };
  d.fwd_flops = [](const OpView& v) {
    GemmDims g = gemm_dims(v);
    double mn = static_cast<double>(g.m) * static_cast<double>(g.n);
    return 2 * mn * static_cast<double>(g.k) + (v.has_input(2) ? mn : 0.0);
  };
  d.bwd_flops = [](const OpView& v, const std::vector<bool>& gr) {
    GemmDims g = gemm_dims(v);
    double mn = static_cast<double>(g.m) * static_cast<double>(g.n), f = 2 * mn * static_cast<double>(g.k);
    return (gr[0] ? f : 0.0) + (gr[1] ? f : 0.0) + (v.num_inputs() > 2 && gr[2] ? mn : 0.0);
  };
  d.saved = save_for_other_operand;
  return d;
}

// MatMul with numpy semantics: 1-D operands are promoted (A: [k] -> [1,k]; B: [k] -> [k,1])
// and the promoted axis dropped from the result; leading axes broadcast.
struct MatMulShape {
  Shape batch;           // broadcast batch shape
  int64_t m, n, k;
  bool a_vec, b_vec;
  Shape out;
};

MatMulShape matmul_shape(const OpView& v) {
  Shape a = v.in_shape(0), b = v.in_shape(1);
  if (a.empty() || b.empty()) throw OpError("operands must have rank >= 1");
  MatMulShape r{};
  r.a_vec = a.size() == 1;
  r.b_vec = b.size() == 1;
  if (r.a_vec) a.insert(a.begin(), 1);
  if (r.b_vec) b.push_back(1);
  r.m = a[a.size() - 2];
  r.k = a.back();
  r.n = b.back();
  if (b[b.size() - 2] != r.k) throw OpError("inner dimensions of " + shape_str(v.in_shape(0)) + " and " + shape_str(v.in_shape(1)) + " differ");
  r.batch = broadcast({Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2)});
  r.out = r.batch;
  if (!r.a_vec) r.out.push_back(r.m);
  if (!r.b_vec) r.out.push_back(r.n);
  return r;
}

OpDef matmul() {
  OpDef d;
  d.type = "MatMul";
  d.family = "linear";
  d.flops_doc = "2·b·m·n·k / 2·b·m·n·k per operand needing a gradient";
  d.saves_doc = "A for dB, B for dA";
  d.infer = [](const OpView& v) {
    if (!v.has_input(0) || !v.has_input(1)) throw OpError("needs two inputs");
    return std::vector<OutType>{{v.in(0).dtype, matmul_shape(v).out}};
  };
  d.space = [](const OpView& v) {
    MatMulShape ms = matmul_shape(v);
    IterSpace s;
    int nb = static_cast<int>(ms.batch.size());
    for (int i = 0; i < nb; ++i) s.dims.push_back({dim_name('b', i), ms.batch[static_cast<size_t>(i)], DimRole::Parallel});
    int md = nb, nd = nb + 1, kd = nb + 2;
    s.dims.push_back({"m", ms.m, DimRole::Parallel});
    s.dims.push_back({"n", ms.n, DimRole::Parallel});
    s.dims.push_back({"k", ms.k, DimRole::Reduction});
    auto operand = [&](const Shape& sh, bool vec, bool is_a) {
      std::vector<int> axes;
      size_t mat = vec ? 1 : 2;
      size_t lead = sh.size() - mat;
      for (size_t i = 0; i < lead; ++i) {
        int bd = nb - static_cast<int>(lead) + static_cast<int>(i);
        axes.push_back(sh[i] == ms.batch[static_cast<size_t>(bd)] ? bd : -1);
      }
      if (is_a) {
        if (!vec) axes.push_back(md);
        axes.push_back(kd);
      } else {
        axes.push_back(kd);
        if (!vec) axes.push_back(nd);
      }
      return axes;
    };
    s.inputs = {operand(v.in_shape(0), ms.a_vec, true), operand(v.in_shape(1), ms.b_vec, false)};
    std::vector<int> out;
    for (int i = 0; i < nb; ++i) out.push_back(i);
    if (!ms.a_vec) out.push_back(md);
    if (!ms.b_vec) out.push_back(nd);
    s.outputs = {out};
    return s;
  };
  auto macs = [](const OpView& v) {
    MatMulShape ms = matmul_shape(v);
    return static_cast<double>(numel(ms.batch)) * static_cast<double>(ms.m) * static_cast<double>(ms.n) *
           static_cast<double>(ms.k);
  };
  d.fwd_flops = [macs](const OpView& v) { return 2 * macs(v); };
  d.bwd_flops = [macs](const OpView& v, const std::vector<bool>& g) {
    return (g[0] ? 2 * macs(v) : 0.0) + (g[1] ? 2 * macs(v) : 0.0);
  };
  d.saved = save_for_other_operand;
  return d;
}

// ConvTranspose: X [N,C,in...], W [C, M/g, k...] -> Y [N,M,out...] with
// out = stride·(in-1) + output_padding + dilation·(k-1) + 1 - pads, or output_shape.
OpDef conv_transpose() {
  OpDef d;
  d.type = "ConvTranspose";
  d.family = "linear";
  d.flops_doc = "2·N·C·I·(M/g)·K (I = input spatial positions; + N·M·O bias) / the same per gradient needed";
  d.saves_doc = "X for dW, W for dX";
  d.weight_inputs = {1, 2};
  d.infer = [](const OpView& v) {
    if (!v.has_input(0) || !v.has_input(1)) throw OpError("needs X and W");
    const Shape& x = v.in_shape(0);
    const Shape& w = v.in_shape(1);
    int64_t g = v.node.attr_int("group", 1);
    if (x.size() < 3 || w.size() != x.size() || g <= 0 || w[0] != x[1] || x[1] % g != 0) {
      throw OpError("X " + shape_str(x) + " and W " + shape_str(w) + " do not match");
    }
    size_t r = x.size() - 2;
    auto attr = [&](const char* key, int64_t fill, size_t n) {
      auto a = v.node.attr_ints(key);
      if (!a || a->empty()) return std::vector<int64_t>(n, fill);
      if (a->size() != n) throw OpError(std::string("attribute '") + key + "' has the wrong length");
      return *a;
    };
    auto strides = attr("strides", 1, r), dil = attr("dilations", 1, r), pads = attr("pads", 0, 2 * r),
         outpad = attr("output_padding", 0, r);
    Shape out{x[0], w[1] * g};
    auto given = v.node.attr_ints("output_shape");
    for (size_t i = 0; i < r; ++i) {
      int64_t o = given && given->size() == r ? (*given)[i]
                                               : add_checked(add_checked(mul_checked(strides[i], x[2 + i] - 1), add_checked(outpad[i], 1)),
                                                             mul_checked(dil[i], w[2 + i] - 1)) - add_checked(pads[i], pads[i + r]);
      if (o <= 0) throw OpError("output size is not positive");
      out.push_back(o);
    }
    return std::vector<OutType>{{v.in(0).dtype, out}};
  };
  d.space = [](const OpView& v) {
    const Shape& x = v.in_shape(0);
    const Shape& w = v.in_shape(1);
    const Shape& y = v.out(0).shape;
    size_t sp = x.size() - 2;
    IterSpace s;
    s.dims = {{"n", x[0], DimRole::Parallel}, {"m", y[1], DimRole::Parallel}};
    std::vector<int> xa{0, -1}, wa{-1, 1}, ya{0, 1};
    for (size_t i = 0; i < sp; ++i) {
      xa.push_back(static_cast<int>(s.dims.size()));
      ya.push_back(static_cast<int>(s.dims.size()));
      s.dims.push_back({dim_name('o', i), y[2 + i], DimRole::Spatial});
    }
    xa[1] = wa[0] = static_cast<int>(s.dims.size());
    s.dims.push_back({"c", x[1], DimRole::Reduction});
    for (size_t i = 0; i < sp; ++i) {
      wa.push_back(static_cast<int>(s.dims.size()));
      s.dims.push_back({dim_name('k', i), w[2 + i], DimRole::Window});
    }
    if (v.node.attr_int("group", 1) > 1) wa[1] = -1;
    s.inputs = {xa, wa, {1}};
    s.additive = {2};
    s.outputs = {ya};
    return s;
  };
  auto macs = [](const OpView& v) {
    const Shape& w = v.in_shape(1);
    double per_in = 1;
    for (size_t i = 1; i < w.size(); ++i) per_in *= static_cast<double>(w[i]);
    return in_elems(v) * per_in;
  };
  d.fwd_flops = [macs](const OpView& v) { return 2 * macs(v) + (v.has_input(2) ? out_elems(v) : 0.0); };
  d.bwd_flops = [macs](const OpView& v, const std::vector<bool>& g) {
    return (g[0] ? 2 * macs(v) : 0.0) + (g[1] ? 2 * macs(v) : 0.0) + (v.num_inputs() > 2 && g[2] ? out_elems(v) : 0.0);
  };
  d.saved = save_for_other_operand;
  return d;
}

}  // namespace

void register_linear(std::vector<OpDef>& ops) {
  register_einsum(ops);
  ops.push_back(conv_transpose());
  ops.push_back(conv());
  ops.push_back(gemm());
  ops.push_back(matmul());
}

}  // namespace tensoropt::ops
