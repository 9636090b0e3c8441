// CUDA kernels of ArgMax, ArgMin, TopK and CumSum (graph/ops/norm.cc), host side: the axis, the
// rows along it and the attributes; device/norm_select.h computes. As the CPU kernels
// (cpu/norm_select.cc): ArgMax/ArgMin have no gradient; TopK's K is the output's extent along
// the axis (no read of the K input); CumSum takes floats, int64 or int32 and reads its axis input
// back from the device (a constant, kept for backward as a view).
// All four take bfloat16 as stored (OpKernel::takes_bf16): float inputs, outputs and output
// gradients float32 or bfloat16, outputs in their storage dtype, input gradients float32.
#include <string>

#include "launcher/runtime/cuda/device/norm_select.h"
#include "launcher/runtime/cuda/norm_parts.h"

namespace tensoropt::runtime::cuda {
namespace {

using cuda_kernels::SelectArgs;

void arg_forward(CudaBackend& be, bool max, const OpCall& c) {
  const Array& x = *c.in[0];
  const int axis = node_axis(c.node, "axis", 0, x.rank());
  SelectArgs a{};
  a.rows = rows_of(x.shape(), axis, axis + 1);
  a.x = float_in(c.node, &x, "data");
  a.indices = c.out[0]->data<int64_t>();
  a.largest = max;
  a.last = c.node.attr_int("select_last_index", 0) != 0;
  if (a.rows.count() > 0) be.launch("arg_extreme", a, c.node.op_type);
}

void topk_forward(CudaBackend& be, const OpCall& c) {
  const Array& x = *c.in[0];
  const int axis = node_axis(c.node, "axis", -1, x.rank());
  SelectArgs a{};
  a.rows = rows_of(x.shape(), axis, axis + 1);
  a.k = c.out[0]->dim(axis);
  a.x = float_in(c.node, &x, "X");
  a.values = float_out(c.node, c.out[0], "Values");
  a.indices = c.out.size() > 1 && c.out[1] ? c.out[1]->data<int64_t>() : nullptr;
  a.largest = c.node.attr_int("largest", 1) != 0;
  if (a.k > 0 && a.rows.count() > 0) be.launch("top_k", a, c.node.op_type);
}

void topk_backward(CudaBackend& be, const GradCall& c) {
  const Shape& xs = c.in_shapes[0];
  const int axis = node_axis(c.node, "axis", -1, static_cast<int>(xs.size()));
  TO_CHECK(c.out.size() > 1 && c.out[1] && c.out[1]->dtype() == DType::I64);
  cuda_kernels::TopKBackwardArgs a{};
  a.rows = rows_of(xs, axis, axis + 1);
  a.k = c.out[1]->dim(axis);
  a.dvalues = float_in(c.node, c.dout[0], "the gradient of Values");
  a.indices = c.out[1]->data<int64_t>();
  a.dx = c.din[0]->data<float>();
  be.launch("top_k_backward", a, c.node.op_type);
}

int cumsum_axis(CudaBackend& be, const Node& node, const Array& axis, int rank) {
  const std::vector<int64_t> v = read_indices(be, node, axis);
  if (v.empty()) kernel_error(node, "the axis input is empty");
  const int64_t a = v[0];
  if (a < -rank || a >= rank) kernel_error(node, "axis " + std::to_string(a) + " is out of range for rank " + std::to_string(rank));
  return static_cast<int>(a < 0 ? a + rank : a);
}

cuda_kernels::CumSumArgs cumsum_args(const Node& node, const Shape& x, int axis) {
  cuda_kernels::CumSumArgs a{};
  a.rows = rows_of(x, axis, axis + 1);
  a.exclusive = node.attr_int("exclusive", 0) != 0;
  a.reverse = node.attr_int("reverse", 0) != 0;
  return a;
}

void cumsum_forward(CudaBackend& be, const OpCall& c) {
  const Array& x = *c.in[0];
  if (x.dtype() != DType::F32 && x.dtype() != DType::BF16 && x.dtype() != DType::I64 && x.dtype() != DType::I32)
    kernel_error(c.node, "x is " + x.str() + "; the CUDA kernel takes float32, bfloat16, int64 or int32");
  cuda_kernels::CumSumArgs a = cumsum_args(c.node, x.shape(), cumsum_axis(be, c.node, *c.in[1], x.rank()));
  a.x = x.raw();
  a.y = c.out[0]->raw();
  a.dtype = static_cast<int>(x.dtype());
  a.y_dtype = static_cast<int>(c.out[0]->dtype());
  if (x.numel() > 0) be.launch("cumsum", a, c.node.op_type);
  c.state.saved = {keep_input(be, c, 1)};
}

void cumsum_backward(CudaBackend& be, const GradCall& c) {
  const Shape& xs = c.in_shapes[0];
  const Array& dy = *c.dout[0];
  if (dy.dtype() != DType::F32 && dy.dtype() != DType::BF16)
    kernel_error(c.node, "the output gradient is " + dy.str() + "; the CUDA kernel takes float32 or bfloat16");
  cuda_kernels::CumSumArgs a = cumsum_args(c.node, xs, cumsum_axis(be, c.node, c.state.saved[0], static_cast<int>(xs.size())));
  a.reverse = !a.reverse;
  a.x = dy.raw();
  a.y = c.din[0]->raw();
  a.dtype = static_cast<int>(dy.dtype());
  a.y_dtype = TO_DTYPE_F32;
  if (numel(xs) > 0) be.launch("cumsum", a, c.node.op_type);
}

}  // namespace

void register_norm_select(CudaBackend& be, KernelTable& table) {
  table["ArgMax"] = {[&be](const OpCall& c) { arg_forward(be, true, c); }, {}};
  table["ArgMin"] = {[&be](const OpCall& c) { arg_forward(be, false, c); }, {}};
  table["TopK"] = {[&be](const OpCall& c) { topk_forward(be, c); }, [&be](const GradCall& c) { topk_backward(be, c); }};
  table["CumSum"] = {[&be](const OpCall& c) { cumsum_forward(be, c); }, [&be](const GradCall& c) { cumsum_backward(be, c); }};
  for (const char* type : {"ArgMax", "ArgMin", "TopK", "CumSum"}) table[type].takes_bf16 = true;
}

}  // namespace tensoropt::runtime::cuda
