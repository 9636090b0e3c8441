// CUDA kernel of LayerNormalization (graph/ops/norm.cc, opset 17), host side; device/norm_layer.h
// computes. X's normalised axes [axis, rank) are rows of n. A scale or bias spanning exactly the
// normalised axes (every exported model) is read in place; one of another shape that broadcasts
// to X is first expanded to X's shape (a transient), and its gradient's terms are summed back to
// its shape (shapes.h's sum_onto), as the CPU kernel (cpu/norm_layer.cc) does.
// Kept for backward: X (the catalogue saves it), mean and inv per row (the extras it charges),
// and Scale (keep_input). stash_type other than 1 is refused.
// Takes bfloat16 as stored (OpKernel::takes_bf16): X, Scale, Bias, Y, the optional Mean and
// InvStdDev outputs and the output gradients float32 or bfloat16; the statistics it keeps stay
// float32 (the extras the catalogue charges), the input gradients are float32.
#include <string>
#include <utility>

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
  cuda_kernels::FloatIn data{nullptr, TO_DTYPE_F32};
  int64_t stride = 0;
  Array expanded;  // float32

  Param(CudaBackend& be, const Node& node, const Array* a, const Shape& x, const LnDims& d, Allocator& alloc) {
    data = float_in(node, a, "a scale or bias");
    if (!a || column_shaped(a->shape(), x, d.axis)) return;
    expanded = Array(DType::F32, x, alloc, MemoryKind::Transients);
    cuda_kernels::ExpandArgs e{};
    e.src = data;
    e.dst = expanded.data<float>();
    e.shape = broadcast_of(node, x, a->shape(), x);
    be.launch("norm_expand", e, node.op_type);
    data = float_in(node, &expanded, "a scale or bias");
    stride = d.n;
  }
};

void layer_norm_forward(CudaBackend& be, const OpCall& c) {
  const Array& x = *c.in[0];
  const LnDims d = ln_dims(c.node, x.shape());
  Param scale(be, c.node, c.in[1], x.shape(), d, *c.ctx.allocator);
  Param bias(be, c.node, c.in.size() > 2 ? c.in[2] : nullptr, x.shape(), d, *c.ctx.allocator);
  Array mean(DType::F32, {d.rows}, *c.ctx.allocator, MemoryKind::Activations);
  Array inv(DType::F32, {d.rows}, *c.ctx.allocator, MemoryKind::Activations);
  cuda_kernels::LayerNormArgs a{};
  a.rows = d.rows;
  a.n = d.n;
  a.eps = d.eps;
  a.x = float_in(c.node, &x, "X");
  a.scale = scale.data;
  a.scale_stride = scale.stride;
  a.bias = bias.data;
  a.bias_stride = bias.stride;
  a.y = float_out(c.node, c.out[0], "Y");
  a.mean = mean.data<float>();
  a.inv = inv.data<float>();
  a.mean_out = float_out(c.node, c.out.size() > 1 ? c.out[1] : nullptr, "Mean");
  a.inv_out = float_out(c.node, c.out.size() > 2 ? c.out[2] : nullptr, "InvStdDev");
  if (d.n > 0) be.launch("layer_norm", a, c.node.op_type);
  c.state.saved = {mean, inv, keep_input(be, c, 1)};
}

void layer_norm_backward(CudaBackend& be, const GradCall& c) {
  const Shape& xs = c.in_shapes[0];
  const LnDims d = ln_dims(c.node, xs);
  if (d.n == 0) return;
  TO_CHECK(c.in[0] && c.state.saved.size() == 3);
  Allocator& alloc = *c.ctx.allocator;
  const cuda_kernels::FloatIn dy = float_in_at(c.node, c.dout, 0, "the output gradient");
  if (Array* dx = c.din[0]) {
    Param scale(be, c.node, &c.state.saved[2], xs, d, alloc);
    cuda_kernels::LayerNormBackwardArgs a{};
    a.rows = d.rows;
    a.n = d.n;
    a.x = float_in(c.node, c.in[0], "X");
    a.scale = scale.data;
    a.scale_stride = scale.stride;
    a.mean = c.state.saved[0].data<float>();
    a.inv = c.state.saved[1].data<float>();
    a.dy = dy;
    a.dmean = float_in_at(c.node, c.dout, 1, "the gradient of Mean");
    a.dinv = float_in_at(c.node, c.dout, 2, "the gradient of InvStdDev");
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
  p.x = float_in(c.node, c.in[0], "X");
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
  if (dbias) {  // sum_onto reads float32: a bfloat16 dY as a float32 copy
    const Array dy32 = c.dout[0]->dtype() == DType::F32 ? *c.dout[0] : float32_copy(be, *c.dout[0]);
    sum_onto(be, c.node, dy32.view(xs), *dbias);
  }
}

}  // namespace

void register_norm_layer(CudaBackend& be, KernelTable& table) {
  OpKernel kernel{[&be](const OpCall& c) { layer_norm_forward(be, c); }, [&be](const GradCall& c) { layer_norm_backward(be, c); }};
  kernel.takes_bf16 = true;
  table["LayerNormalization"] = std::move(kernel);
}

}  // namespace tensoropt::runtime::cuda
