// CUDA kernels of Conv and ConvTranspose (graph/ops/linear.cc), host side: each pass is one
// convolution of the executor (device/conv_args.h: cuDNN on a GPU) plus own kernels for the
// padding cuDNN cannot take, the bias and its gradient (device/conv.h). float32 only, as the CPU
// backend (cpu/linear_conv.cc, whose window geometry, cpu/linear_window.h, this file shares).
//
// Legend: N batch, C input channels, M output channels, g groups, Mg = M/g; 1 to 3 spatial axes.
// Conv: X [N,C,in...], W [M,C/g,k...], B [M] -> Y [N,M,out...]
//   Y = FORWARD(X, W) + B;  dX = BACKWARD_DATA(dY, W);  dW = BACKWARD_FILTER(X, dY);  dB = Σ dY
// ConvTranspose: X [N,C,in...], W [C,Mg,k...], B [M] -> Y [N,M,out...], the data gradient of
// the Conv from Y (C_conv = M) to X (M_conv = C) with W as that Conv's weight:
//   Y = BACKWARD_DATA(X, W) + B;  dX = FORWARD(dY, W);  dW = BACKWARD_FILTER(dY, X);  dB = Σ dY
//
// Padding. The executor's convolution pads symmetrically by p = max(0, min(pad, pad_end)) per
// axis. What is left (asymmetric pads, SAME_* with an odd total, negative pads of a transposed
// convolution's output_shape) becomes explicit: the Conv's input is copied into a buffer with
// pad - p zeros before and pad_end - p after (negative: cropped), and its data gradient is
// computed in that shape and cropped back. The buffer's tail is trimmed or extended so the
// convolution's size rule, out = (len + 2p - dilation·(k-1) - 1) / stride + 1, holds exactly:
// a ConvTranspose's output_padding leaves positions no output reads.
#include <algorithm>
#include <array>
#include <string>

#include "launcher/runtime/cpu/linear_window.h"
#include "launcher/runtime/cuda/backend.h"
#include "launcher/runtime/cuda/device/conv.h"
#include "launcher/runtime/cuda/shapes.h"

namespace tensoropt::runtime::cuda {
namespace {

using cuda_kernels::ConvArgs;

// One convolution's geometry: the ConvArgs without pointers, and the explicit padding of its
// input (`lo` before, the buffer's length `len` per axis; unit axes in front).
struct Canon {
  ConvArgs args{};
  std::array<int64_t, 3> in{}, lo{};
  bool padded = false;
  Shape input, buffer;  // [N, C, in...] and [N, C, len...] of the rank
};

Canon canon_of(const Node& node, const cpu::Window& w, size_t rank, int64_t n, int64_t c, int64_t m, int64_t g) {
  if (g < 1 || c % g != 0 || m % g != 0) kernel_error(node, "group " + std::to_string(g) + " does not divide the channels");
  Canon k;
  ConvArgs& a = k.args;
  a.spatial = rank <= 2 ? 2 : 3;
  a.n = n;
  a.c = c;
  a.m = m;
  a.groups = g;
  k.input = {n, c};
  k.buffer = {n, c};
  for (size_t x = 0; x < 3; ++x) {
    const int64_t s = w.stride[x], span = w.dilation[x] * (w.kernel[x] - 1) + 1, out = w.out[x];
    int64_t p = std::max<int64_t>(0, std::min(w.pad[x], w.pad_end[x]));
    // Trimming the tail is exact only while the symmetric padding is under a stride.
    if (w.in[x] + w.pad[x] + w.pad_end[x] - span >= out * s) p = std::min(p, s - 1);
    const int64_t least = (out - 1) * s + span - 2 * p, most = out * s - 1 + span - 2 * p;
    const int64_t len = std::clamp(w.in[x] + w.pad[x] + w.pad_end[x] - 2 * p, std::max<int64_t>(least, 1), std::max<int64_t>(most, 1));
    k.in[x] = w.in[x];
    k.lo[x] = w.pad[x] - p;
    k.padded |= k.lo[x] != 0 || len != w.in[x];
    a.in[x] = len;
    a.out[x] = out;
    a.kernel[x] = w.kernel[x];
    a.stride[x] = s;
    a.dilation[x] = w.dilation[x];
    a.pad[x] = p;
    if (x >= 3 - rank) {
      k.input.push_back(w.in[x]);
      k.buffer.push_back(len);
    }
  }
  return k;
}

Array transient(const Shape& s, const StepContext& ctx) { return Array(DType::F32, s, *ctx.allocator, MemoryKind::Transients); }

// dst [planes, dst_dims] = src [planes, src_dims] shifted by `offset` per axis, zeros outside.
void shift(CudaBackend& be, const Node& node, const Array& src, const std::array<int64_t, 3>& src_dims, Array& dst,
           const std::array<int64_t, 3>& dst_dims, const std::array<int64_t, 3>& offset) {
  cuda_kernels::ConvPadArgs a{};
  a.src = src.data<float>();
  a.dst = dst.data<float>();
  a.planes = src.dim(0) * src.dim(1);
  for (size_t x = 0; x < 3; ++x) {
    a.src_dims[x] = src_dims[x];
    a.dst_dims[x] = dst_dims[x];
    a.offset[x] = offset[x];
  }
  be.launch("conv_pad", a, node.op_type + " (padding)");
}

std::array<int64_t, 3> buffer_dims(const Canon& k) { return {k.args.in[0], k.args.in[1], k.args.in[2]}; }

// The convolution's input: `x` itself, or its explicitly padded copy in `keep`.
const Array& conv_input(CudaBackend& be, const Node& node, const Canon& k, const Array& x, Array& keep, const StepContext& ctx) {
  if (!k.padded) return x;
  keep = transient(k.buffer, ctx);
  shift(be, node, x, k.in, keep, buffer_dims(k), k.lo);
  return keep;
}

void run(CudaBackend& be, const Node& node, ConvArgs a, int direction, const StepContext& ctx) {
  a.direction = direction;
  int64_t bytes = 0;
  a.workspace_needed = &bytes;
  be.launch("conv_workspace", a, node.op_type + " (planning)");
  a.workspace_needed = nullptr;
  Array workspace;
  if (bytes > 0) workspace = Array(DType::U8, {bytes}, *ctx.allocator, MemoryKind::Transients);
  a.workspace = bytes > 0 ? workspace.raw() : nullptr;
  a.workspace_bytes = bytes;
  be.launch("conv", a, node.op_type);
}

// The input's data gradient (BACKWARD_DATA) into `dx`, through a buffer when padded.
void data_gradient(CudaBackend& be, const Node& node, const Canon& k, ConvArgs a, Array& dx, const StepContext& ctx) {
  Array buffer = k.padded ? transient(k.buffer, ctx) : Array();
  a.result = k.padded ? buffer.data<float>() : dx.data<float>();
  run(be, node, a, cuda_kernels::TO_CONV_BACKWARD_DATA, ctx);
  if (!k.padded) return;
  const std::array<int64_t, 3> back = {-k.lo[0], -k.lo[1], -k.lo[2]};
  shift(be, node, buffer, buffer_dims(k), dx, k.in, back);
}

void add_bias(CudaBackend& be, const Node& node, const Array* bias, Array& y) {
  if (!bias || y.numel() == 0) return;
  require_f32(node, *bias, "B");
  cuda_kernels::ConvBiasArgs a{y.data<float>(), bias->data<float>(), y.dim(0), y.dim(1), y.numel() / (y.dim(0) * y.dim(1))};
  be.launch("conv_bias", a, node.op_type + " (bias)");
}

void bias_gradient(CudaBackend& be, const Node& node, const Array& dy, Array& db, const StepContext& ctx) {
  if (dy.numel() == 0) return be.fill(db, 0.0);
  Array partial = transient({dy.dim(0), dy.dim(1)}, ctx);
  cuda_kernels::ConvBiasGradArgs a{dy.data<float>(), partial.data<float>(), db.data<float>(), dy.dim(0), dy.dim(1),
                                   dy.numel() / (dy.dim(0) * dy.dim(1))};
  be.launch("conv_bias_grad", a, node.op_type + " (bias gradient)");
}

const Array* bias_of(const OpCall& c) { return c.in.size() > 2 ? c.in[2] : nullptr; }
Array* bias_grad_of(const GradCall& c) { return c.din.size() > 2 ? c.din[2] : nullptr; }
Shape kernel_of(const Shape& w) { return Shape(w.begin() + 2, w.end()); }

// An empty dY: dX and dW are zero (true when it filled them).
bool zero_gradients(CudaBackend& be, const GradCall& c) {
  if (c.dout[0]->numel() != 0) return false;
  for (size_t i = 0; i < 2; ++i) {
    if (c.din[i]) be.fill(*c.din[i], 0.0);
  }
  return true;
}

// ---- Conv

Canon conv_canon(const Node& node, const Shape& x, const Shape& w, const Shape& y) {
  if (x.size() < 3) kernel_error(node, "X of rank " + std::to_string(x.size()) + ": a convolution needs a spatial axis");
  const cpu::Window win = cpu::conv_window(node, x, y, kernel_of(w));
  const int64_t g = node.attr_int("group", 1);
  if (w[1] * g != x[1]) kernel_error(node, "W has " + std::to_string(w[1]) + " channels per group, X " + std::to_string(x[1]));
  return canon_of(node, win, x.size() - 2, x[0], x[1], w[0], g);
}

void conv_forward(CudaBackend& be, const OpCall& c) {
  const Array& x = *c.in[0];
  const Array& w = *c.in[1];
  Array& y = *c.out[0];
  require_f32(c.node, x, "X");
  require_f32(c.node, w, "W");
  if (y.numel() == 0) return;
  const Canon k = conv_canon(c.node, x.shape(), w.shape(), y.shape());
  Array keep;
  ConvArgs a = k.args;
  a.x = conv_input(be, c.node, k, x, keep, c.ctx).data<float>();
  a.w = w.data<float>();
  a.result = y.data<float>();
  run(be, c.node, a, cuda_kernels::TO_CONV_FORWARD, c.ctx);
  add_bias(be, c.node, bias_of(c), y);
}

// X is kept when W takes a gradient, W when X does (the catalogue's `saved`).
void conv_backward(CudaBackend& be, const GradCall& c) {
  const Array& dy = *c.dout[0];
  if (Array* db = bias_grad_of(c)) bias_gradient(be, c.node, dy, *db, c.ctx);
  if (zero_gradients(be, c)) return;
  const Canon k = conv_canon(c.node, c.in_shapes[0], c.in_shapes[1], dy.shape());
  ConvArgs a = k.args;
  a.y = dy.data<float>();
  if (Array* dw = c.din[1]) {
    Array keep;
    a.x = conv_input(be, c.node, k, *c.in[0], keep, c.ctx).data<float>();
    a.result = dw->data<float>();
    run(be, c.node, a, cuda_kernels::TO_CONV_BACKWARD_FILTER, c.ctx);
    a.x = nullptr;
  }
  if (Array* dx = c.din[0]) {
    a.w = c.in[1]->data<float>();
    data_gradient(be, c.node, k, a, *dx, c.ctx);
  }
}

// ---- ConvTranspose

// The Conv from Y to X: its window runs over Y's positions. Y's padding: the pads attribute, or
// with output_shape or auto_pad SAME_* the total stride·(in-1) + output_padding +
// dilation·(k-1) + 1 - out split evenly, the odd unit at the end for SAME_UPPER and at the start
// otherwise (as cpu/linear_conv.cc).
Canon transpose_canon(const Node& node, const Shape& x, const Shape& wt, const Shape& y) {
  if (x.size() < 3) kernel_error(node, "X of rank " + std::to_string(x.size()) + ": a convolution needs a spatial axis");
  const size_t r = x.size() - 2;
  const Shape kernel = kernel_of(wt);
  const auto stride = cpu::ints_or(node, "strides", 1, r), dil = cpu::ints_or(node, "dilations", 1, r),
             outpad = cpu::ints_or(node, "output_padding", 0, r), pads = cpu::ints_or(node, "pads", 0, 2 * r);
  const std::string auto_pad = node.attr_string("auto_pad", "NOTSET");
  const auto given = node.attr_ints("output_shape");
  const bool split = (given && given->size() == r) || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  std::vector<int64_t> pad(r), pad_end(r);
  for (size_t i = 0; i < r; ++i) {
    const int64_t total = stride[i] * (x[2 + i] - 1) + outpad[i] + dil[i] * (kernel[i] - 1) + 1 - y[2 + i];
    pad[i] = !split ? pads[i] : auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
    pad_end[i] = total - pad[i];
  }
  const cpu::Window win = cpu::make_window(node, Shape(y.begin() + 2, y.end()), Shape(x.begin() + 2, x.end()), kernel, pad, pad_end);
  const int64_t g = node.attr_int("group", 1);
  if (wt[0] != x[1]) kernel_error(node, "W has " + std::to_string(wt[0]) + " input channels, X " + std::to_string(x[1]));
  return canon_of(node, win, r, x[0], wt[1] * g, x[1], g);
}

void conv_transpose_forward(CudaBackend& be, const OpCall& c) {
  const Array& x = *c.in[0];
  const Array& w = *c.in[1];
  Array& y = *c.out[0];
  require_f32(c.node, x, "X");
  require_f32(c.node, w, "W");
  if (y.numel() == 0) return;
  const Canon k = transpose_canon(c.node, x.shape(), w.shape(), y.shape());
  ConvArgs a = k.args;
  a.y = x.data<float>();
  a.w = w.data<float>();
  data_gradient(be, c.node, k, a, y, c.ctx);
  add_bias(be, c.node, bias_of(c), y);
}

void conv_transpose_backward(CudaBackend& be, const GradCall& c) {
  const Array& dy = *c.dout[0];
  if (Array* db = bias_grad_of(c)) bias_gradient(be, c.node, dy, *db, c.ctx);
  if (zero_gradients(be, c) || (!c.din[0] && !c.din[1])) return;
  const Canon k = transpose_canon(c.node, c.in_shapes[0], c.in_shapes[1], dy.shape());
  Array keep;
  ConvArgs a = k.args;
  a.x = conv_input(be, c.node, k, dy, keep, c.ctx).data<float>();
  if (Array* dx = c.din[0]) {
    a.w = c.in[1]->data<float>();
    a.result = dx->data<float>();
    run(be, c.node, a, cuda_kernels::TO_CONV_FORWARD, c.ctx);
  }
  if (Array* dw = c.din[1]) {
    a.w = nullptr;
    a.y = c.in[0]->data<float>();
    a.result = dw->data<float>();
    run(be, c.node, a, cuda_kernels::TO_CONV_BACKWARD_FILTER, c.ctx);
  }
}

}  // namespace

void register_conv(CudaBackend& be, KernelTable& table) {
  table["Conv"] = {[&be](const OpCall& c) { conv_forward(be, c); }, [&be](const GradCall& c) { conv_backward(be, c); }};
  table["ConvTranspose"] = {[&be](const OpCall& c) { conv_transpose_forward(be, c); },
                            [&be](const GradCall& c) { conv_transpose_backward(be, c); }};
}

}  // namespace tensoropt::runtime::cuda
