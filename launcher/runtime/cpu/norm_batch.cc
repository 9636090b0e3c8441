// BatchNormalization (graph/ops/norm.cc): X [B, C, S...] with S the spatial elements; statistics
// per channel over the m = B * S elements of B blocks of S contiguous values.
//
// Mode: a training node (training_mode = 1, or the running statistics as outputs before opset 14,
// as the catalogue reads it) in a training step uses the batch statistics; anything else (a
// one-output node, or ctx.training false) uses the running statistics input_mean, input_var.
//   batch:   mean = sum(x) / m, var = sum((x - mean)^2) / m (biased), inv = 1 / sqrt(var + epsilon)
//   running: mean = input_mean, inv = 1 / sqrt(input_var + epsilon)
//   y = (x - mean) * inv * scale + B
// Outputs 1 and 2 (running_mean, running_var) as PyTorch updates them, with ONNX's momentum
// (PyTorch exports 1 - its own): momentum * input_mean + (1 - momentum) * mean, and the same for
// the variance with the unbiased batch variance var * m / (m - 1). In a training step the executor
// copies them into the buffers input_mean and input_var (the kernel's state_updates,
// apply_state_updates: at the shard's offset when the node splits channels; a kernel that wrote
// into its inputs would write into a worker's transitioned copy, not the buffer).
// Outputs 3 and 4 (saved_mean, saved_var, before opset 14): mean and the biased variance. Out of a
// training step all four pass the running statistics through.
//
// Backward, xhat = (x - mean) * inv, sums over a channel's m elements:
//   batch:   dx = scale * inv * (dy - sum(dy) / m - xhat * sum(dy * xhat) / m)
//   running: dx = scale * inv * dy
//   dscale = sum(dy * xhat), dB = sum(dy). The statistics outputs take no gradient (as in PyTorch,
//   where they are buffers).
// Kept: X (the catalogue saves it); a training node's mean and inv (the extras it charges); a
// one-output node's input_mean and input_var, unchanged by the step (keep_input: views, no
// bytes); Scale (keep_input).
#include <algorithm>
#include <cmath>
#include <string>

#include "launcher/runtime/cpu/norm_parts.h"
#include "launcher/runtime/cpu/util.h"

namespace tensoropt::runtime::cpu {
namespace {

bool training_node(const Node& node) {
  if (node.attr("training_mode")) return node.attr_int("training_mode", 0) != 0;
  return node.outputs.size() > 1 && node.outputs[1] >= 0;
}

struct BnDims {
  int64_t batch, channels, spatial;
  float eps;
  int64_t m() const { return batch * spatial; }
  int64_t at(int64_t b, int64_t ch) const { return (b * channels + ch) * spatial; }  // block start
};

BnDims bn_dims(const Node& node, const Shape& x) {
  if (node.attr_int("spatial", 1) != 1) kernel_error(node, "spatial = 0 (statistics per element) is not supported");
  if (node.attr_int("is_test", 0) != 0 && training_node(node)) {
    kernel_error(node, "is_test = 1 with the running statistics as outputs (a training-mode node in test mode)");
  }
  int64_t b = x[0], ch = x[1];
  return {b, ch, numel(x) / std::max<int64_t>(1, b * ch), static_cast<float>(node.attr_float("epsilon", 1e-5))};
}

void batch_norm_forward(const OpCall& c) {
  const Array& x = *c.in[0];
  for (int i = 0; i < 5; ++i) require_f32(c.node, *c.in[static_cast<size_t>(i)], "input");
  BnDims d = bn_dims(c.node, x.shape());
  bool train_node = training_node(c.node), batch_stats = train_node && c.ctx.training;
  if (batch_stats && d.m() < 2) kernel_error(c.node, "training needs more than one value per channel");
  auto out = [&](size_t o) { return c.out.size() > o && c.out[o] ? c.out[o]->data<float>() : nullptr; };
  const float *px = x.data<float>(), *ps = c.in[1]->data<float>(), *pb = c.in[2]->data<float>();
  const float *prm = c.in[3]->data<float>(), *prv = c.in[4]->data<float>();
  float* py = c.out[0]->data<float>();
  Array mean, inv;
  if (train_node) {
    mean = Array(DType::F32, {d.channels}, *c.ctx.allocator, MemoryKind::Activations);
    inv = Array(DType::F32, {d.channels}, *c.ctx.allocator, MemoryKind::Activations);
  }
  auto momentum = static_cast<float>(c.node.attr_float("momentum", 0.9));
  parallel_for(d.channels, 1, c.ctx.threads, [&](int64_t lo, int64_t hi) {
    for (int64_t ch = lo; ch < hi; ++ch) {
      float mu = prm[ch], var = prv[ch];
      if (batch_stats) {
        double s = 0, q = 0;
        for (int64_t b = 0; b < d.batch; ++b) s += row_sum(px + d.at(b, ch), d.spatial, 1);
        double dm = s / static_cast<double>(d.m());
        for (int64_t b = 0; b < d.batch; ++b) {
          const float* xb = px + d.at(b, ch);
          for (int64_t k = 0; k < d.spatial; ++k) q += (xb[k] - dm) * (xb[k] - dm);
        }
        mu = static_cast<float>(dm);
        var = static_cast<float>(q / static_cast<double>(d.m()));
        float unbiased = static_cast<float>(q / static_cast<double>(d.m() - 1));
        if (float* o = out(1)) o[ch] = momentum * prm[ch] + (1 - momentum) * mu;
        if (float* o = out(2)) o[ch] = momentum * prv[ch] + (1 - momentum) * unbiased;
      } else {
        if (float* o = out(1)) o[ch] = mu;
        if (float* o = out(2)) o[ch] = var;
      }
      if (float* o = out(3)) o[ch] = mu;
      if (float* o = out(4)) o[ch] = var;
      auto is = static_cast<float>(1.0 / std::sqrt(static_cast<double>(var) + d.eps));
      if (train_node) {
        mean.data<float>()[ch] = mu;
        inv.data<float>()[ch] = is;
      }
      float sc = ps[ch] * is, sh = pb[ch];
      for (int64_t b = 0; b < d.batch; ++b) {
        const float* xb = px + d.at(b, ch);
        float* yb = py + d.at(b, ch);
        for (int64_t k = 0; k < d.spatial; ++k) yb[k] = (xb[k] - mu) * sc + sh;
      }
    }
  });
  if (train_node) c.state.saved = {mean, inv, keep_input(c, 1)};
  else c.state.saved = {keep_input(c, 3), keep_input(c, 4), keep_input(c, 1)};
}

void batch_norm_backward(const GradCall& c) {
  const Shape& xs = c.in_shapes[0];
  BnDims d = bn_dims(c.node, xs);
  bool train_node = training_node(c.node), batch_stats = train_node && c.ctx.training;
  if (!c.dout[0]) {  // only the statistics outputs had a gradient: none reaches the inputs
    for (Array* g : c.din) {
      if (g) std::fill_n(g->data<float>(), g->numel(), 0.0f);
    }
    return;
  }
  const float *px = c.in[0]->data<float>(), *pdy = c.dout[0]->data<float>();
  const float *pmean = c.state.saved[0].data<float>(), *pstat = c.state.saved[1].data<float>();
  const float* ps = c.state.saved[2].data<float>();
  float* pdx = c.din[0] ? c.din[0]->data<float>() : nullptr;
  float* pds = c.din[1] ? c.din[1]->data<float>() : nullptr;
  float* pdb = c.din[2] ? c.din[2]->data<float>() : nullptr;
  auto m = static_cast<double>(d.m());
  parallel_for(d.channels, 1, c.ctx.threads, [&](int64_t lo, int64_t hi) {
    for (int64_t ch = lo; ch < hi; ++ch) {
      float mu = pmean[ch];
      // A training node kept inv; a one-output node kept input_var.
      float is = train_node ? pstat[ch] : static_cast<float>(1.0 / std::sqrt(static_cast<double>(pstat[ch]) + d.eps));
      double sd = 0, sdx = 0;
      for (int64_t b = 0; b < d.batch; ++b) {
        const float *xb = px + d.at(b, ch), *dyb = pdy + d.at(b, ch);
        for (int64_t k = 0; k < d.spatial; ++k) {
          sd += dyb[k];
          sdx += static_cast<double>(dyb[k]) * ((xb[k] - mu) * is);
        }
      }
      if (pds) pds[ch] = static_cast<float>(sdx);
      if (pdb) pdb[ch] = static_cast<float>(sd);
      if (!pdx) continue;
      float k1 = ps[ch] * is;
      float a = batch_stats ? static_cast<float>(sd / m) : 0.0f, q = batch_stats ? static_cast<float>(sdx / m) : 0.0f;
      for (int64_t b = 0; b < d.batch; ++b) {
        const float *xb = px + d.at(b, ch), *dyb = pdy + d.at(b, ch);
        float* dxb = pdx + d.at(b, ch);
        for (int64_t k = 0; k < d.spatial; ++k) dxb[k] = k1 * (dyb[k] - a - (xb[k] - mu) * is * q);
      }
    }
  });
}

}  // namespace

void register_norm_batch(KernelTable& table) {
  table["BatchNormalization"] = {batch_norm_forward, batch_norm_backward, false, {{1, 3}, {2, 4}}};
}

}  // namespace tensoropt::runtime::cpu
