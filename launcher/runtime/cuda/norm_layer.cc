// CUDA kernel of LayerNormalization (graph/ops/norm.cc, opset 17), host side; device/norm_layer.h
// computes. X's normalised axes [axis, rank) are rows of n. A scale or bias spanning exactly the
// normalised axes (every exported model) is read in place; one of another shape that broadcasts
// to X is first expanded to X's shape (a transient), and its gradient's terms are summed back to
// its shape (shapes.h's sum_onto), as the CPU kernel (cpu/norm_layer.cc) does.
// Kept for backward: X (the catalogue saves it), mean and inv per row (the extras it charges),
// and Scale (keep_input). stash_type other than 1 is refused.
#include <string>

#include "launcher/runtime/cuda/device/norm_layer.h"
#include "launcher/runtime/cuda/norm_parts.h"
#include "launcher/runtime/cuda/shapes.h"

namespace tensoropt::runtime::cuda {
namespace {

struct LnDims {
  int axis;
  int64_t rows, n;
  float eps;
};

LnDims ln_dims(const Node& node, const Shape& x) {
  const int axis = node_axis(node, "axis", -1, static_cast<int>(x.size()));
  if (node.attr_int("stash_type", 1) != 1)
    kernel_error(node, "stash_type " + std::to_string(node.attr_int("stash_type", 1)) + " (the kernel keeps float32 statistics)");
  const cuda_kernels::AxisRows r = rows_of(x, axis, static_cast<int>(x.size()));
  return {axis, r.outer, r.n, static_cast<float>(node.attr_float("epsilon", 1e-5))};
}

// Whether a parameter of shape `p` spans exactly the normalised axes of X (after leading 1s).
bool column_shaped(const Shape& p, const Shape& x, int axis) {
  if (p.size() > x.size()) return false;
  Shape padded(x.size() - p.size(), 1);
  padded.insert(padded.end(), p.begin(), p.end());
  for (size_t d = 0; d < x.size(); ++d) {
    if (padded[d] != (static_cast<int>(d) < axis ? 1 : x[d])) return false;
  }
  return true;
}

// A scale or bias as the kernels read it: row r at data + r * stride.
struct Param {
  const float* data = nullptr;
  int64_t stride = 0;
  Array expanded;

  Param(CudaBackend& be, const Node& node, const Array* a, const Shape& x, const LnDims& d, Allocator& alloc) {
    if (!a) return;
    require_f32(node, *a, "a scale or bias");
    data = a->data<float>();
    if (column_shaped(a->shape(), x, d.axis)) return;
    expanded = Array(DType::F32, x, alloc, MemoryKind::Transients);
    cuda_kernels::ExpandArgs e{};
    e.src = data;
    e.dst = expanded.data<float>();
    e.shape = broadcast_of(node, x, a->shape(), x);
    be.launch("norm_expand", e, node.op_type);
    data = expanded.data<float>();
    stride = d.n;
  }
};

void layer_norm_forward(CudaBackend& be, const OpCall& c) {
  const Array& x = *c.in[0];
  require_f32(c.node, x, "X");
  const LnDims d = ln_dims(c.node, x.shape());
  Param scale(be, c.node, c.in[1], x.shape(), d, *c.ctx.allocator);
  Param bias(be, c.node, c.in.size() > 2 ? c.in[2] : nullptr, x.shape(), d, *c.ctx.allocator);
  Array mean(DType::F32, {d.rows}, *c.ctx.allocator, MemoryKind::Activations);
  Array inv(DType::F32, {d.rows}, *c.ctx.allocator, MemoryKind::Activations);
  cuda_kernels::LayerNormArgs a{};
  a.rows = d.rows;
  a.n = d.n;
  a.eps = d.eps;
  a.x = x.data<float>();
  a.scale = scale.data;
  a.scale_stride = scale.stride;
  a.bias = bias.data;
  a.bias_stride = bias.stride;
  a.y = c.out[0]->data<float>();
  a.mean = mean.data<float>();
  a.inv = inv.data<float>();
  a.mean_out = out_or_null(c.out, 1);
  a.inv_out = out_or_null(c.out, 2);
  if (d.n > 0) be.launch("layer_norm", a, c.node.op_type);
  c.state.saved = {mean, inv, keep_input(be, c, 1)};
}

void layer_norm_backward(CudaBackend& be, const GradCall& c) {
  const Shape& xs = c.in_shapes[0];
  const LnDims d = ln_dims(c.node, xs);
  if (d.n == 0) return;
  TO_CHECK(c.in[0] && c.state.saved.size() == 3);
  Allocator& alloc = *c.ctx.allocator;
  const float* dy = in_or_null(c.dout, 0);
  if (Array* dx = c.din[0]) {
    Param scale(be, c.node, &c.state.saved[2], xs, d, alloc);
    cuda_kernels::LayerNormBackwardArgs a{};
    a.rows = d.rows;
    a.n = d.n;
    a.x = c.in[0]->data<float>();
    a.scale = scale.data;
    a.scale_stride = scale.stride;
    a.mean = c.state.saved[0].data<float>();
    a.inv = c.state.saved[1].data<float>();
    a.dy = dy;
    a.dmean = in_or_null(c.dout, 1);
    a.dinv = in_or_null(c.dout, 2);
    a.dx = dx->data<float>();
    be.launch("layer_norm_backward", a, c.node.op_type);
  }
  Array* dscale = c.din.size() > 1 ? c.din[1] : nullptr;
  Array* dbias = c.din.size() > 2 ? c.din[2] : nullptr;
  if (!dy) {  // only Mean and InvStdDev had gradients: none reaches the parameters
    for (Array* p : {dscale, dbias}) {
      if (p) be.fill(*p, 0.0);
    }
    return;
  }
  cuda_kernels::LayerNormParamArgs p{};
  p.rows = d.rows;
  p.n = d.n;
  p.chunk = 64;
  p.x = c.in[0]->data<float>();
  p.mean = c.state.saved[0].data<float>();
  p.inv = c.state.saved[1].data<float>();
  p.dy = dy;
  const bool columns = (!dscale || column_shaped(dscale->shape(), xs, d.axis)) && (!dbias || column_shaped(dbias->shape(), xs, d.axis));
  if (columns && (dscale || dbias)) {
    const int64_t chunks = (d.rows + p.chunk - 1) / p.chunk;
    Array partial(DType::F64, {2, chunks, d.n}, alloc, MemoryKind::Transients);
    p.partial = partial.data<double>();
    p.dscale = dscale ? dscale->data<float>() : nullptr;
    p.dbias = dbias ? dbias->data<float>() : nullptr;
    be.launch("layer_norm_params", p, c.node.op_type);
    return;
  }
  if (dscale) {
    Array terms(DType::F32, xs, alloc, MemoryKind::Transients);
    p.dscale = terms.data<float>();
    be.launch("layer_norm_dscale_terms", p, c.node.op_type);
    sum_onto(be, c.node, terms, *dscale);
  }
  if (dbias) sum_onto(be, c.node, c.dout[0]->view(xs), *dbias);
}

}  // namespace

void register_norm_layer(CudaBackend& be, KernelTable& table) {
  table["LayerNormalization"] = {[&be](const OpCall& c) { layer_norm_forward(be, c); },
                                 [&be](const GradCall& c) { layer_norm_backward(be, c); }};
}

}  // namespace tensoropt::runtime::cuda
