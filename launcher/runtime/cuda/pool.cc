// CUDA kernels of graph/ops/pool.cc, host side: MaxPool, AveragePool, GlobalAveragePool and
// GlobalMaxPool on own kernels (device/pool.h), over the window geometry of the CPU backend
// (cpu/linear_window.h: auto_pad, pads, ceil_mode's longer output), float32 only as on the CPU.
// MaxPool keeps its argmax (int64, one per output: the extra the catalogue charges) for its
// backward; GlobalMaxPool's backward reads X and Y, as the catalogue saves them.
#include <string>
#include <vector>

#include "launcher/runtime/cpu/linear_window.h"
#include "launcher/runtime/cuda/backend.h"
#include "launcher/runtime/cuda/device/pool.h"
#include "launcher/runtime/cuda/shapes.h"

namespace tensoropt::runtime::cuda {
namespace {

using cuda_kernels::PoolWindow;

PoolWindow pool_window(const Node& node, const Shape& x, const Shape& y) {
  if (x.size() < 3) kernel_error(node, "X of rank " + std::to_string(x.size()) + ": a pool needs a spatial axis");
  const auto kernel = node.attr_ints("kernel_shape");
  if (!kernel || kernel->size() != x.size() - 2) kernel_error(node, "kernel_shape must give every spatial axis");
  const cpu::Window w = cpu::conv_window(node, x, y, *kernel);
  PoolWindow p{};
  for (size_t a = 0; a < 3; ++a) {
    p.in[a] = w.in[a];
    p.out[a] = w.out[a];
    p.kernel[a] = w.kernel[a];
    p.stride[a] = w.stride[a];
    p.dilation[a] = w.dilation[a];
    p.pad[a] = w.pad[a];
    p.pad_end[a] = w.pad_end[a];
  }
  return p;
}

int64_t planes_of(const Array& a) { return a.dim(0) * a.dim(1); }

void maxpool_forward(CudaBackend& be, const OpCall& c) {
  const Array& x = *c.in[0];
  Array& y = *c.out[0];
  require_f32(c.node, x, "X");
  Array arg(DType::I64, y.shape(), *c.ctx.allocator, MemoryKind::Activations);
  Array* indices = c.out.size() > 1 ? c.out[1] : nullptr;
  TO_CHECK(!indices || indices->dtype() == DType::I64);
  cuda_kernels::MaxPoolArgs a{};
  a.x = x.data<float>();
  a.y = y.data<float>();
  a.arg = arg.data<int64_t>();
  a.indices = indices ? indices->data<int64_t>() : nullptr;
  a.planes = planes_of(x);
  a.w = pool_window(c.node, x.shape(), y.shape());
  a.rank = x.rank() - 2;
  a.column_major = c.node.attr_int("storage_order", 0) != 0;
  be.launch("maxpool", a, c.node.op_type);
  c.state.saved = {arg};
}

void maxpool_backward(CudaBackend& be, const GradCall& c) {
  Array& dx = *c.din[0];
  cuda_kernels::MaxPoolBackwardArgs a{};
  a.dy = c.dout[0]->data<float>();
  a.arg = c.state.saved.at(0).data<int64_t>();
  a.dx = dx.data<float>();
  a.planes = planes_of(dx);
  a.w = pool_window(c.node, dx.shape(), c.dout[0]->shape());
  be.launch("maxpool_backward", a, c.node.op_type);
}

// Forward (X -> Y) or backward (dY -> dX) of AveragePool.
void avgpool(CudaBackend& be, const Node& node, const Array& src, Array& dst, const Shape& x, const Shape& y, const char* kernel) {
  cuda_kernels::AvgPoolArgs a{};
  a.src = src.data<float>();
  a.dst = dst.data<float>();
  a.planes = x[0] * x[1];
  a.w = pool_window(node, x, y);
  a.include_pad = node.attr_int("count_include_pad", 0) != 0;
  be.launch(kernel, a, node.op_type);
}

// The count a GlobalAveragePool divides by: the whole plane's (a shard of split spatial axes
// gives its part of the mean).
float global_count(const ShardInfo* shard, const Shape& x) {
  std::vector<bool> spatial(x.size(), true);
  spatial[0] = spatial[1] = false;
  return static_cast<float>(mean_count(shard, 0, x, spatial));
}

cuda_kernels::GlobalPoolArgs global_args(const Shape& x) {
  cuda_kernels::GlobalPoolArgs a{};
  a.planes = x[0] * x[1];
  a.in = a.planes > 0 ? numel(x) / a.planes : 0;
  return a;
}

void global_avgpool_forward(CudaBackend& be, const OpCall& c) {
  const Array& x = *c.in[0];
  require_f32(c.node, x, "X");
  cuda_kernels::GlobalPoolArgs a = global_args(x.shape());
  a.x = x.data<float>();
  a.out = c.out[0]->data<float>();
  a.count = global_count(c.shard, x.shape());
  be.launch("global_avgpool", a, c.node.op_type);
}

void global_avgpool_backward(CudaBackend& be, const GradCall& c) {
  Array& dx = *c.din[0];
  cuda_kernels::GlobalPoolArgs a = global_args(dx.shape());
  a.dy = c.dout[0]->data<float>();
  a.out = dx.data<float>();
  a.count = global_count(c.shard, dx.shape());
  be.launch("global_avgpool_backward", a, c.node.op_type);
}

void global_maxpool_forward(CudaBackend& be, const OpCall& c) {
  const Array& x = *c.in[0];
  require_f32(c.node, x, "X");
  cuda_kernels::GlobalPoolArgs a = global_args(x.shape());
  a.x = x.data<float>();
  a.out = c.out[0]->data<float>();
  be.launch("global_maxpool", a, c.node.op_type);
}

void global_maxpool_backward(CudaBackend& be, const GradCall& c) {
  Array& dx = *c.din[0];
  cuda_kernels::GlobalPoolArgs a = global_args(dx.shape());
  a.x = c.in[0]->data<float>();
  a.y = c.out[0]->data<float>();
  a.dy = c.dout[0]->data<float>();
  a.out = dx.data<float>();
  be.launch("global_maxpool_backward", a, c.node.op_type);
}

}  // namespace

void register_pool(CudaBackend& be, KernelTable& table) {
  table["MaxPool"] = {[&be](const OpCall& c) { maxpool_forward(be, c); }, [&be](const GradCall& c) { maxpool_backward(be, c); }};
  table["AveragePool"] = {
      [&be](const OpCall& c) {
        require_f32(c.node, *c.in[0], "X");
        avgpool(be, c.node, *c.in[0], *c.out[0], c.in[0]->shape(), c.out[0]->shape(), "avgpool");
      },
      [&be](const GradCall& c) {
        avgpool(be, c.node, *c.dout[0], *c.din[0], c.din[0]->shape(), c.dout[0]->shape(), "avgpool_backward");
      }};
  table["GlobalAveragePool"] = {[&be](const OpCall& c) { global_avgpool_forward(be, c); },
                                [&be](const GradCall& c) { global_avgpool_backward(be, c); }};
  table["GlobalMaxPool"] = {[&be](const OpCall& c) { global_maxpool_forward(be, c); },
                            [&be](const GradCall& c) { global_maxpool_backward(be, c); }};
}

}  // namespace tensoropt::runtime::cuda
