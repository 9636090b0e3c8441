// Comparisons, logic, IsNaN, IsInf and Where on the CUDA backend (the CPU's
// cpu/elementwise_logic.cc and cpu/elementwise_unary.cc's classify), operands broadcast to y [N]:
// Equal, Less, LessOrEqual, Greater, GreaterOrEqual of two operands of one dtype (float32,
// float64, int64, int32, bool, uint8) -> bool; And, Or, Xor, Not of bools; IsNaN, IsInf of float32
// or float64; none has a gradient. Where(cond, x, y) moves elements of any width; its backward
// gives dx = cond ? dy : 0 and dy_ = cond ? 0 : dy, each summed onto its operand's shape.
#include <string>
#include <utility>

#include "launcher/runtime/cuda/elementwise_parts.h"

namespace tensoropt::runtime::cuda {
namespace {

using namespace cuda_kernels;  // EW_* codes

void compare_forward(CudaBackend& be, const OpCall& c, int op) {
  if (c.in[0]->dtype() != c.in[1]->dtype()) kernel_error(c.node, "the two inputs have different dtypes");
  typed_binary(be, c.node, c.ctx, op, *c.in[0], c.in[1], 0, *c.out[0]);
}

void logic_forward(CudaBackend& be, const OpCall& c, int op) {
  for (const Array* x : c.in) {
    if (x->dtype() != DType::Bool) kernel_error(c.node, "takes bool inputs");
  }
  typed_binary(be, c.node, c.ctx, op, *c.in[0], c.in[1], 0, *c.out[0]);
}

// ---- Not, IsNaN, IsInf(detect_negative = 1, detect_positive = 1).
void test_forward(CudaBackend& be, const OpCall& c, int op) {
  const Array& x = *c.in[0];
  if (op == EW_NOT && x.dtype() != DType::Bool) kernel_error(c.node, "takes a bool input");
  if (op != EW_NOT && x.dtype() != DType::F64) require_f32(c.node, x, "the input");
  EwTestArgs args{};
  args.op = op;
  args.dtype = dtype_code(x.dtype());
  args.negative = c.node.attr_int("detect_negative", 1) != 0;
  args.positive = c.node.attr_int("detect_positive", 1) != 0;
  args.x = x.raw();
  args.y = c.out[0]->data<uint8_t>();
  args.n = c.out[0]->numel();
  be.launch("ew_test", args, c.node.op_type);
}

// ---- Where: out = cond ? x : y. Under mixed precision x and y come as stored and the output is
// bfloat16: a float32 operand (a constant) is converted to it first, as a transient (choosing,
// then rounding, is rounding, then choosing).
const Array& in_dtype_of(CudaBackend& be, const OpCall& c, const Array& x, Array& converted) {
  const DType t = c.out[0]->dtype();
  if (x.dtype() == t || (t != DType::BF16 && t != DType::F32) || (x.dtype() != DType::BF16 && x.dtype() != DType::F32)) return x;
  converted = Array(t, x.shape(), *c.ctx.allocator, MemoryKind::Transients);
  be.convert(x, converted);
  return converted;
}

void where_forward(CudaBackend& be, const OpCall& c) {
  if (c.in[0]->dtype() != DType::Bool) kernel_error(c.node, "the condition is not bool");
  Array x32, y32;
  const Array& x = in_dtype_of(be, c, *c.in[1], x32);
  const Array& y = in_dtype_of(be, c, *c.in[2], y32);
  if (x.dtype() != y.dtype()) kernel_error(c.node, "x and y have different dtypes");
  const int64_t width = dtype_size(x.dtype());
  if (width != 1 && width != 2 && width != 4 && width != 8)
    kernel_error(c.node, "no CUDA kernel for " + std::string(dtype_name(c.in[1]->dtype())) + " operands");
  const Shape& out = c.out[0]->shape();
  EwWhereArgs args{};
  args.cond = c.in[0]->data<uint8_t>();
  args.x = x.raw();
  args.y = y.raw();
  args.out = c.out[0]->raw();
  args.width = static_cast<int>(width);
  args.cx = broadcast_of(c.node, out, c.in[0]->shape(), x.shape());
  const TensoroptBroadcast ys = broadcast_of(c.node, out, y.shape(), y.shape());
  for (int d = 0; d < ys.rank; ++d) args.y_stride[d] = ys.a_stride[d];
  be.launch("ew_where", args, c.node.op_type);
}

void where_backward(CudaBackend& be, const GradCall& c) {
  TO_CHECK(c.in[0] != nullptr);
  const Shape& out = c.dout[0]->shape();
  GradientTerms terms(c, out);
  EwWhereBackwardArgs args{};
  args.cond = c.in[0]->data<uint8_t>();
  args.dout = c.dout[0]->raw();
  args.dout_dtype = require_float(c.node, *c.dout[0], "the output gradient");
  args.dx_full = terms.target(1);
  args.dy_full = terms.target(2);
  args.shape = broadcast_of(c.node, out, c.in_shapes[0], c.in_shapes[0]);
  be.launch("ew_where_backward", args, c.node.op_type);
  terms.finish(be);
}

}  // namespace

void register_elementwise_logic(CudaBackend& be, KernelTable& table) {
  const std::pair<const char*, int> compare[] = {{"Equal", EW_EQUAL}, {"Less", EW_LESS}, {"LessOrEqual", EW_LESS_EQUAL},
                                                 {"Greater", EW_GREATER}, {"GreaterOrEqual", EW_GREATER_EQUAL}};
  for (const auto& entry : compare) {
    const int op = entry.second;
    table[entry.first] = {[&be, op](const OpCall& c) { compare_forward(be, c, op); }, nullptr};
  }
  const std::pair<const char*, int> logic[] = {{"And", EW_AND}, {"Or", EW_OR}, {"Xor", EW_XOR}};
  for (const auto& entry : logic) {
    const int op = entry.second;
    table[entry.first] = {[&be, op](const OpCall& c) { logic_forward(be, c, op); }, nullptr};
  }
  const std::pair<const char*, int> tests[] = {{"Not", EW_NOT}, {"IsNaN", EW_ISNAN}, {"IsInf", EW_ISINF}};
  for (const auto& entry : tests) {
    const int op = entry.second;
    table[entry.first] = {[&be, op](const OpCall& c) { test_forward(be, c, op); }, nullptr};
  }
  OpKernel where{[&be](const OpCall& c) { where_forward(be, c); }, [&be](const GradCall& c) { where_backward(be, c); }};
  where.takes_bf16 = true;  // bfloat16 as stored
  table["Where"] = std::move(where);
}

}  // namespace tensoropt::runtime::cuda
