// CUDA kernels of GroupNormalization and InstanceNormalization (graph/ops/norm.cc), host side;
// device/norm_group.h computes. X [N, C, S...]; scale and bias per channel [C], or per group [G]
// (GroupNormalization's opset-18 form); anything else is refused as the CPU kernel
// (cpu/norm_group.cc) refuses it, and so is stash_type other than 1.
// Kept for backward: X (the catalogue saves it), mean and inv per (sample, group) (the extras it
// charges), and Scale (keep_input). Both take bfloat16 as stored (OpKernel::takes_bf16): X,
// Scale, Bias, Y and dY float32 or bfloat16, the statistics and the input gradients float32.
#include <algorithm>
#include <string>
#include <utility>

#include "launcher/runtime/cuda/device/norm_group.h"
#include "launcher/runtime/cuda/norm_parts.h"
#include "launcher/runtime/cuda/shapes.h"

namespace tensoropt::runtime::cuda {
namespace {

cuda_kernels::GroupNormArgs gn_args(const Node& node, const Shape& x, const Shape& scale, const Shape& bias) {
  if (x.size() < 2) kernel_error(node, "X must have a batch and a channel axis");
  cuda_kernels::GroupNormArgs d{};
  d.batch = x[0];
  d.channels = x[1];
  d.spatial = numel(x) / std::max<int64_t>(1, d.batch * d.channels);
  const bool instance = node.op_type == "InstanceNormalization";
  d.groups = instance ? d.channels : node.attr_int("num_groups", 0);
  if (d.groups <= 0 || d.channels % d.groups != 0)
    kernel_error(node, "num_groups " + std::to_string(d.groups) + " does not divide " + std::to_string(d.channels) + " channels");
  if (node.attr_int("stash_type", 1) != 1) kernel_error(node, "stash_type other than 1 (float32 statistics)");
  const int64_t ns = numel(scale), nb = numel(bias);
  d.per_group = !instance && ns == d.groups && ns != d.channels;
  const int64_t want = d.per_group ? d.groups : d.channels;
  if (ns != want || nb != want) {
    kernel_error(node, "scale " + shape_str(scale) + " and bias " + shape_str(bias) + " must hold " + std::to_string(d.channels) +
                           " values (one per channel)" + (instance ? "" : " or " + std::to_string(d.groups) + " (one per group)"));
  }
  d.eps = static_cast<float>(node.attr_float("epsilon", 1e-5));
  return d;
}

void group_norm_forward(CudaBackend& be, const OpCall& c) {
  const Array& x = *c.in[0];
  cuda_kernels::GroupNormArgs a = gn_args(c.node, x.shape(), c.in[1]->shape(), c.in[2]->shape());
  Array mean(DType::F32, {a.batch * a.groups}, *c.ctx.allocator, MemoryKind::Activations);
  Array inv(DType::F32, {a.batch * a.groups}, *c.ctx.allocator, MemoryKind::Activations);
  a.x = float_in(c.node, &x, "X");
  a.scale = float_in(c.node, c.in[1], "scale");
  a.bias = float_in(c.node, c.in[2], "bias");
  a.y = float_out(c.node, c.out[0], "Y");
  a.mean = mean.data<float>();
  a.inv = inv.data<float>();
  if (x.numel() > 0) be.launch("group_norm", a, c.node.op_type);
  c.state.saved = {mean, inv, keep_input(be, c, 1)};
}

void group_norm_backward(CudaBackend& be, const GradCall& c) {
  const Array& scale = c.state.saved[2];
  cuda_kernels::GroupNormArgs a = gn_args(c.node, c.in_shapes[0], scale.shape(), c.in_shapes[2]);
  TO_CHECK(c.in[0] && c.dout[0]);
  a.x = float_in(c.node, c.in[0], "X");
  a.scale = float_in(c.node, &scale, "scale");
  a.mean = c.state.saved[0].data<float>();
  a.inv = c.state.saved[1].data<float>();
  a.dy = float_in(c.node, c.dout[0], "the output gradient");
  a.dx = c.din[0] ? c.din[0]->data<float>() : nullptr;
  a.dscale = c.din[1] ? c.din[1]->data<float>() : nullptr;
  a.dbias = c.din[2] ? c.din[2]->data<float>() : nullptr;
  if (numel(c.in_shapes[0]) > 0) {
    be.launch("group_norm_backward", a, c.node.op_type);
    return;
  }
  for (Array* p : {c.din[1], c.din[2]}) {
    if (p) be.fill(*p, 0.0);
  }
}

}  // namespace

void register_norm_group(CudaBackend& be, KernelTable& table) {
  for (const char* type : {"GroupNormalization", "InstanceNormalization"}) {
    OpKernel kernel{[&be](const OpCall& c) { group_norm_forward(be, c); }, [&be](const GradCall& c) { group_norm_backward(be, c); }};
    kernel.takes_bf16 = true;
    table[type] = std::move(kernel);
  }
}

}  // namespace tensoropt::runtime::cuda
