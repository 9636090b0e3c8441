// CUDA kernels of the Reduce* ops (graph/ops/norm.cc), host side: which axes a node reduces and
// the merged shape device/norm_reduce.h reads. Axes as the catalogue reads them (the `axes`
// attribute, or the constant second input; none: all axes, or none with noop_with_empty_axes).
// An axes input is not read back from the device when keepdims = 1 on one device: the output's
// shape says which axes shrank to 1 (reducing an axis of size 1 changes nothing), so only
// keepdims = 0 or a sharded run downloads it (norm_parts.h's read_indices). A mean divides by
// the whole tensor's count when a reduced axis is split (kernel.h's mean_count).
// Kept for backward: the axes input, when there is one (keep_input: a view of a constant);
// Sum and Mean read nothing else, the others X and Y (the catalogue saves them).
// Every Reduce* takes bfloat16 as stored (OpKernel::takes_bf16): X, Y and dY float32 or
// bfloat16, Y in its storage dtype, dX float32.
#include <string>
#include <vector>

#include "launcher/runtime/cuda/device/norm_reduce.h"
#include "launcher/runtime/cuda/norm_parts.h"

namespace tensoropt::runtime::cuda {
namespace {

using cuda_kernels::ReduceArgs;

std::vector<bool> reduced_axes(CudaBackend& be, const Node& node, const Array* axes_input, const Shape& x, const Shape& y,
                               const ShardInfo* shard) {
  const int rank = static_cast<int>(x.size());
  std::vector<int64_t> axes;
  if (auto a = node.attr_ints("axes")) {
    axes = *a;
  } else if (axes_input) {
    if (node.attr_int("keepdims", 1) != 0 && !shard && y.size() == x.size()) {
      std::vector<bool> red(x.size());
      for (size_t d = 0; d < x.size(); ++d) red[d] = y[d] != x[d];
      return red;
    }
    axes = read_indices(be, node, *axes_input);
  }
  std::vector<bool> red(static_cast<size_t>(rank), axes.empty() && node.attr_int("noop_with_empty_axes", 0) == 0);
  for (int64_t a : axes) {
    if (a < -rank || a >= rank) kernel_error(node, "axis " + std::to_string(a) + " is out of range for rank " + std::to_string(rank));
    red[static_cast<size_t>(a < 0 ? a + rank : a)] = true;
  }
  return red;
}

// X's shape without size-1 axes, neighbours of the same kind merged; groups, their size and the
// chunk a partial sums (long along memory for a warp, shorter for a thread per group).
ReduceArgs reduce_args(const Node& node, int op, const Shape& x, const std::vector<bool>& red) {
  ReduceArgs a{};
  a.op = op;
  a.count = 1;
  a.size = 1;
  for (size_t d = 0; d < x.size(); ++d) {
    if (x[d] == 1) continue;
    (red[d] ? a.size : a.count) *= x[d];
    const int r = red[d] ? 1 : 0;
    if (a.shape.rank > 0 && a.shape.reduced[a.shape.rank - 1] == r) {
      a.shape.dim[a.shape.rank - 1] *= x[d];
      continue;
    }
    if (a.shape.rank == TO_MAX_RANK) kernel_error(node, "the CUDA kernel takes at most " + std::to_string(TO_MAX_RANK) + " axes");
    a.shape.dim[a.shape.rank] = x[d];
    a.shape.reduced[a.shape.rank] = r;
    ++a.shape.rank;
  }
  a.chunk = cuda_kernels::reduce_last_axis_reduced(a.shape) ? 4096 : 256;
  return a;
}

int64_t chunks_of(const ReduceArgs& a) { return a.size > 0 ? (a.size + a.chunk - 1) / a.chunk : 1; }

template <int Op>
void reduce_forward(CudaBackend& be, const OpCall& c) {
  const Array& x = *c.in[0];
  const Array* axes = c.in.size() > 1 ? c.in[1] : nullptr;
  const std::vector<bool> red = reduced_axes(be, c.node, axes, x.shape(), c.out[0]->shape(), c.shard);
  ReduceArgs a = reduce_args(c.node, Op, x.shape(), red);
  a.divisor = static_cast<double>(mean_count(c.shard, 0, x.shape(), red));
  Array partial(DType::F64, {a.count * chunks_of(a) * 2}, *c.ctx.allocator, MemoryKind::Transients);
  a.x = float_in(c.node, &x, "data");
  a.out = float_out(c.node, c.out[0], "reduced");
  a.partial = partial.data<double>();
  if (x.numel() > 0) be.launch("reduce", a, c.node.op_type);
  if (axes) c.state.saved = {keep_input(be, c, 1)};
}

template <int Op>
void reduce_backward(CudaBackend& be, const GradCall& c) {
  const Shape& xs = c.in_shapes[0];
  const Array* axes = c.state.saved.empty() ? nullptr : &c.state.saved[0];
  const std::vector<bool> red = reduced_axes(be, c.node, axes, xs, c.dout[0]->shape(), c.shard);
  ReduceArgs a = reduce_args(c.node, Op, xs, red);
  a.divisor = static_cast<double>(mean_count(c.shard, 0, xs, red));
  const bool reads_x = Op != cuda_kernels::NORM_REDUCE_SUM && Op != cuda_kernels::NORM_REDUCE_MEAN;
  TO_CHECK(!reads_x || (c.in[0] && c.out[0]));
  a.x = float_in(c.node, reads_x ? c.in[0] : nullptr, "data");
  a.y = float_in(c.node, reads_x ? c.out[0] : nullptr, "reduced");
  a.dy = float_in(c.node, c.dout[0], "the output gradient");
  if (numel(xs) == 0) return;
  Array partial, stats;
  if (Op == cuda_kernels::NORM_REDUCE_MAX || Op == cuda_kernels::NORM_REDUCE_MIN || Op == cuda_kernels::NORM_REDUCE_PROD) {
    partial = Array(DType::F64, {a.count * chunks_of(a) * 2}, *c.ctx.allocator, MemoryKind::Transients);
    stats = Array(DType::F64, {a.count * 2}, *c.ctx.allocator, MemoryKind::Transients);
    ReduceArgs s = a;
    s.op = Op == cuda_kernels::NORM_REDUCE_PROD ? cuda_kernels::NORM_REDUCE_PROD_STATS : cuda_kernels::NORM_REDUCE_TIES;
    s.partial = partial.data<double>();
    s.stats = stats.data<double>();
    be.launch("reduce", s, c.node.op_type);
    a.stats = stats.data<double>();
  }
  a.out = float_out(c.node, c.din[0], "the input gradient");
  be.launch("reduce_backward", a, c.node.op_type);
}

template <int Op>
OpKernel reduce_kernel(CudaBackend& be) {
  OpKernel k{[&be](const OpCall& c) { reduce_forward<Op>(be, c); }, [&be](const GradCall& c) { reduce_backward<Op>(be, c); }};
  k.takes_bf16 = true;
  return k;
}

}  // namespace

void register_norm_reduce(CudaBackend& be, KernelTable& table) {
  using namespace cuda_kernels;
  table["ReduceSum"] = reduce_kernel<NORM_REDUCE_SUM>(be);
  table["ReduceMean"] = reduce_kernel<NORM_REDUCE_MEAN>(be);
  table["ReduceProd"] = reduce_kernel<NORM_REDUCE_PROD>(be);
  table["ReduceMax"] = reduce_kernel<NORM_REDUCE_MAX>(be);
  table["ReduceMin"] = reduce_kernel<NORM_REDUCE_MIN>(be);
  table["ReduceL1"] = reduce_kernel<NORM_REDUCE_L1>(be);
  table["ReduceL2"] = reduce_kernel<NORM_REDUCE_L2>(be);
  table["ReduceSumSquare"] = reduce_kernel<NORM_REDUCE_SUM_SQUARE>(be);
  table["ReduceLogSumExp"] = reduce_kernel<NORM_REDUCE_LOG_SUM_EXP>(be);
}

}  // namespace tensoropt::runtime::cuda
