// CUDA kernels of Softmax, LogSoftmax and LpNormalization (graph/ops/norm.cc), host side: the
// axis and the rows along it; device/norm_axis.h computes. Attribute semantics and refusals as the
// CPU kernels (cpu/norm_axis.cc): Softmax without an axis attribute on a rank > 2 input is refused
// (opset 13 and earlier disagree and the kernel does not see the opset); LpNormalization takes
// p = 1 or 2. Softmax and LogSoftmax read Y in backward, LpNormalization X and Y.
#include <string>
#include <utility>

#include "launcher/runtime/cuda/device/norm_axis.h"
#include "launcher/runtime/cuda/norm_parts.h"
#include "launcher/runtime/cuda/shapes.h"

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
  require_f32(c.node, *c.in[0], "X");
  cuda_kernels::AxisArgs a = args_for(k, c.node, c.in[0]->shape());
  if (a.rows.n == 0) return;
  a.x = c.in[0]->data<float>();
  a.out = c.out[0]->data<float>();
  be.launch(k == Kind::Softmax ? "softmax" : k == Kind::LogSoftmax ? "log_softmax" : "lp_norm", a, c.node.op_type);
}

void axis_backward(CudaBackend& be, Kind k, const GradCall& c) {
  require_f32(c.node, *c.dout[0], "the output gradient");
  cuda_kernels::AxisArgs a = args_for(k, c.node, c.in_shapes[0]);
  if (a.rows.n == 0) return;
  TO_CHECK(c.out[0] && (k != Kind::Lp || c.in[0]));
  a.x = k == Kind::Lp ? c.in[0]->data<float>() : nullptr;
  a.y = c.out[0]->data<float>();
  a.dy = c.dout[0]->data<float>();
  a.out = c.din[0]->data<float>();
  be.launch(k == Kind::Softmax ? "softmax_backward" : k == Kind::LogSoftmax ? "log_softmax_backward" : "lp_norm_backward", a,
            c.node.op_type);
}

}  // namespace

void register_norm_axis(CudaBackend& be, KernelTable& table) {
  const std::pair<const char*, Kind> ops[] = {{"Softmax", Kind::Softmax}, {"LogSoftmax", Kind::LogSoftmax}, {"LpNormalization", Kind::Lp}};
  for (const auto& [type, kind] : ops) {
    const Kind k = kind;
    table[type] = {[&be, k](const OpCall& c) { axis_forward(be, k, c); }, [&be, k](const GradCall& c) { axis_backward(be, k, c); }};
  }
}

}  // namespace tensoropt::runtime::cuda
