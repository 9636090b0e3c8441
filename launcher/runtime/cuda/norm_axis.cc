// CUDA kernels of Softmax, LogSoftmax and LpNormalization (graph/ops/norm.cc), host side: the
// axis and the rows along it; device/norm_axis.h computes. Attribute semantics and refusals as the
// CPU kernels (cpu/norm_axis.cc): Softmax without an axis attribute on a rank > 2 input is refused
// (opset 13 and earlier disagree and the kernel does not see the opset); LpNormalization takes
// p = 1 or 2. Softmax and LogSoftmax read Y in backward, LpNormalization X and Y. All three take
// bfloat16 as stored (OpKernel::takes_bf16): X, Y and dY float32 or bfloat16, Y in its storage
// dtype, dX float32.
#include <string>
#include <utility>

#include "launcher/runtime/cuda/device/norm_axis.h"
#include "launcher/runtime/cuda/norm_parts.h"

namespace tensoropt::runtime::cuda {
namespace {

enum class Kind { Softmax, LogSoftmax, Lp };

int axis_of(Kind k, const Node& node, int rank) {
  if (k != Kind::Lp && !node.attr("axis") && rank > 2) {
    kernel_error(node, "no axis attribute on a rank-" + std::to_string(rank) +
                           " input: the default is 1 (coerced to 2-D) before opset 13 and -1 from opset 13, "
                           "and the kernel does not see the model's opset; give the axis explicitly");
  }
  return node_axis(node, "axis", -1, rank);
}

int lp_order(const Node& node) {
  const int64_t p = node.attr_int("p", 2);
  if (p != 1 && p != 2) kernel_error(node, "p = " + std::to_string(p) + " (LpNormalization takes 1 or 2)");
  return static_cast<int>(p);
}

cuda_kernels::AxisArgs args_for(Kind k, const Node& node, const Shape& x) {
  cuda_kernels::AxisArgs a{};
  const int axis = axis_of(k, node, static_cast<int>(x.size()));
  a.rows = rows_of(x, axis, axis + 1);
  a.p = k == Kind::Lp ? lp_order(node) : 0;
  return a;
}

void axis_forward(CudaBackend& be, Kind k, const OpCall& c) {
  cuda_kernels::AxisArgs a = args_for(k, c.node, c.in[0]->shape());
  a.x = float_in(c.node, c.in[0], "X");
  a.out = float_out(c.node, c.out[0], "Y");
  if (a.rows.n == 0) return;
  be.launch(k == Kind::Softmax ? "softmax" : k == Kind::LogSoftmax ? "log_softmax" : "lp_norm", a, c.node.op_type);
}

void axis_backward(CudaBackend& be, Kind k, const GradCall& c) {
  cuda_kernels::AxisArgs a = args_for(k, c.node, c.in_shapes[0]);
  TO_CHECK(c.out[0] && (k != Kind::Lp || c.in[0]));
  a.x = float_in(c.node, k == Kind::Lp ? c.in[0] : nullptr, "X");
  a.y = float_in(c.node, c.out[0], "Y");
  a.dy = float_in(c.node, c.dout[0], "the output gradient");
  a.out = float_out(c.node, c.din[0], "the input gradient");
  if (a.rows.n == 0) return;
  be.launch(k == Kind::Softmax ? "softmax_backward" : k == Kind::LogSoftmax ? "log_softmax_backward" : "lp_norm_backward", a,
            c.node.op_type);
}

}  // namespace

void register_norm_axis(CudaBackend& be, KernelTable& table) {
  const std::pair<const char*, Kind> ops[] = {{"Softmax", Kind::Softmax}, {"LogSoftmax", Kind::LogSoftmax}, {"LpNormalization", Kind::Lp}};
  for (const auto& [type, kind] : ops) {
    const Kind k = kind;
    OpKernel kernel{[&be, k](const OpCall& c) { axis_forward(be, k, c); }, [&be, k](const GradCall& c) { axis_backward(be, k, c); }};
    kernel.takes_bf16 = true;
    table[type] = std::move(kernel);
  }
}

}  // namespace tensoropt::runtime::cuda
