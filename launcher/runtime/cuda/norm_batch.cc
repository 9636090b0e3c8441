// CUDA kernel of BatchNormalization (graph/ops/norm.cc), host side; device/norm_batch.h
// computes. Modes, outputs and refusals as the CPU kernel (cpu/norm_batch.cc): a training node
// (training_mode = 1, or the running statistics as outputs before opset 14) in a training step
// uses the batch statistics, anything else the running ones; outputs 1 and 2 are the updated
// running statistics, which the executor copies into the buffers (state_updates), 3 and 4 the
// saved mean and biased variance. spatial = 0 and is_test with training outputs are refused.
// Kept: X (the catalogue saves it); a training node's mean and inv (the extras it charges); a
// one-output node's input_mean and input_var (keep_input: views); Scale (keep_input).
#include <algorithm>
#include <string>

#include "launcher/runtime/cuda/device/norm_batch.h"
#include "launcher/runtime/cuda/norm_parts.h"
#include "launcher/runtime/cuda/shapes.h"

namespace tensoropt::runtime::cuda {
namespace {

bool training_node(const Node& node) {
  if (node.attr("training_mode")) return node.attr_int("training_mode", 0) != 0;
  return node.outputs.size() > 1 && node.outputs[1] >= 0;
}

cuda_kernels::BatchNormArgs bn_args(const Node& node, const Shape& x) {
  if (node.attr_int("spatial", 1) != 1) kernel_error(node, "spatial = 0 (statistics per element) is not supported");
  if (node.attr_int("is_test", 0) != 0 && training_node(node))
    kernel_error(node, "is_test = 1 with the running statistics as outputs (a training-mode node in test mode)");
  if (x.size() < 2) kernel_error(node, "X must have a batch and a channel axis");
  cuda_kernels::BatchNormArgs a{};
  a.batch = x[0];
  a.channels = x[1];
  a.spatial = numel(x) / std::max<int64_t>(1, a.batch * a.channels);
  a.chunk = 4096;
  a.eps = static_cast<float>(node.attr_float("epsilon", 1e-5));
  a.momentum = static_cast<float>(node.attr_float("momentum", 0.9));
  return a;
}

int64_t partial_count(const cuda_kernels::BatchNormArgs& a) { return std::max<int64_t>(1, a.channels * cuda_kernels::bn_chunks(a) * 2); }

void batch_norm_forward(CudaBackend& be, const OpCall& c) {
  const Array& x = *c.in[0];
  for (int i = 0; i < 5; ++i) require_f32(c.node, *c.in[static_cast<size_t>(i)], "input");
  cuda_kernels::BatchNormArgs a = bn_args(c.node, x.shape());
  const bool train_node = training_node(c.node);
  a.batch_stats = train_node && c.ctx.training;
  if (a.batch_stats && a.batch * a.spatial < 2) kernel_error(c.node, "training needs more than one value per channel");
  Allocator& alloc = *c.ctx.allocator;
  const MemoryKind kind = train_node ? MemoryKind::Activations : MemoryKind::Transients;
  Array mean(DType::F32, {a.channels}, alloc, kind), inv(DType::F32, {a.channels}, alloc, kind);
  Array partial(DType::F64, {partial_count(a)}, alloc, MemoryKind::Transients);
  a.x = x.data<float>();
  a.scale = c.in[1]->data<float>();
  a.bias = c.in[2]->data<float>();
  a.input_mean = c.in[3]->data<float>();
  a.input_var = c.in[4]->data<float>();
  a.mean = mean.data<float>();
  a.inv = inv.data<float>();
  for (size_t o = 0; o < 4; ++o) a.outputs[o] = out_or_null(c.out, o + 1);
  a.y = c.out[0]->data<float>();
  a.partial = partial.data<double>();
  if (a.channels > 0) be.launch("batch_norm", a, c.node.op_type);
  if (train_node) c.state.saved = {mean, inv, keep_input(be, c, 1)};
  else c.state.saved = {keep_input(be, c, 3), keep_input(be, c, 4), keep_input(be, c, 1)};
}

void batch_norm_backward(CudaBackend& be, const GradCall& c) {
  cuda_kernels::BatchNormArgs a = bn_args(c.node, c.in_shapes[0]);
  const bool train_node = training_node(c.node);
  a.batch_stats = train_node && c.ctx.training;
  if (!c.dout[0]) {  // only the statistics outputs had a gradient: none reaches the inputs
    for (Array* g : c.din) {
      if (g) be.fill(*g, 0.0);
    }
    return;
  }
  TO_CHECK(c.in[0] && c.state.saved.size() == 3);
  Array partial(DType::F64, {partial_count(a)}, *c.ctx.allocator, MemoryKind::Transients);
  a.x = c.in[0]->data<float>();
  a.scale = c.state.saved[2].data<float>();
  a.input_mean = c.state.saved[0].data<float>();
  // A training node kept inv; a one-output node kept input_var.
  if (train_node) a.inv = c.state.saved[1].data<float>();
  else a.input_var = c.state.saved[1].data<float>();
  a.dy = c.dout[0]->data<float>();
  a.dx = c.din[0] ? c.din[0]->data<float>() : nullptr;
  a.dscale = c.din.size() > 1 && c.din[1] ? c.din[1]->data<float>() : nullptr;
  a.dbias = c.din.size() > 2 && c.din[2] ? c.din[2]->data<float>() : nullptr;
  a.partial = partial.data<double>();
  if (a.channels > 0) be.launch("batch_norm_backward", a, c.node.op_type);
}

}  // namespace

void register_norm_batch(CudaBackend& be, KernelTable& table) {
  table["BatchNormalization"] = {[&be](const OpCall& c) { batch_norm_forward(be, c); },
                                 [&be](const GradCall& c) { batch_norm_backward(be, c); }, false, {{1, 3}, {2, 4}}};
}

}  // namespace tensoropt::runtime::cuda
