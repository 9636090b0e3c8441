// CUDA kernels of graph/ops/elementwise.cc, host side: which kernel runs each op, with what
// attributes and broadcast strides; other dtypes and attribute values than the CPU kernels take
// are refused naming the node (kernel_error), never run wrongly. This file: the unary ops of
// device/unary.h (float32, forward and backward, the backward reading x or y as the catalogue
// saves it; Relu, Neg, Abs, Sign, Floor, Ceil and Round also int64 and int32, forward only) and
// Add, Sub, Mul, Div, Pow (float32 on binary.h, with gradients: each operand's per-element term
// summed back to its shape; float64, int64 and int32 forward on ew_binary). Under mixed precision
// all of them read bfloat16 as stored (OpKernel::takes_bf16): float operands may be float32 or
// bfloat16 each (a float32 constant beside bfloat16 activations), outputs are written in their
// storage dtype, input gradients in float32. The rest of the family: elementwise_parts.h.
#include <string>
#include <vector>

#include "launcher/runtime/cuda/device/unary.h"
#include "launcher/runtime/cuda/elementwise_parts.h"

namespace tensoropt::runtime::cuda {
namespace {

struct UnaryOp {
  const char* type;
  int code;
  // alpha and beta from the node's attributes.
  void (*attrs)(const Node& n, float* a, float* b) = nullptr;
};

float attr(const Node& n, const char* key, double fallback) { return static_cast<float>(n.attr_float(key, fallback)); }

const UnaryOp kUnary[] = {
    {"Relu", TO_UNARY_RELU},
    {"LeakyRelu", TO_UNARY_LEAKY_RELU, [](const Node& n, float* a, float*) { *a = attr(n, "alpha", 0.01); }},
    {"Sigmoid", TO_UNARY_SIGMOID},
    {"Tanh", TO_UNARY_TANH},
    {"Erf", TO_UNARY_ERF},
    {"Exp", TO_UNARY_EXP},
    {"Log", TO_UNARY_LOG},
    {"Sqrt", TO_UNARY_SQRT},
    {"Reciprocal", TO_UNARY_RECIPROCAL},
    {"Neg", TO_UNARY_NEG},
    {"Abs", TO_UNARY_ABS},
    {"Floor", TO_UNARY_FLOOR},
    {"Ceil", TO_UNARY_CEIL},
    {"Round", TO_UNARY_ROUND},
    {"Sign", TO_UNARY_SIGN},
    {"Softplus", TO_UNARY_SOFTPLUS},
    {"Elu", TO_UNARY_ELU, [](const Node& n, float* a, float*) { *a = attr(n, "alpha", 1.0); }},
    {"Selu", TO_UNARY_SELU,
     [](const Node& n, float* a, float* b) {
       *a = attr(n, "alpha", 1.67326319217681884765625);
       *b = attr(n, "gamma", 1.05070102214813232421875);
     }},
    {"HardSigmoid", TO_UNARY_HARD_SIGMOID,
     [](const Node& n, float* a, float* b) {
       *a = attr(n, "alpha", 0.2);
       *b = attr(n, "beta", 0.5);
     }},
    {"HardSwish", TO_UNARY_HARD_SWISH},
    {"Sin", TO_UNARY_SIN},
    {"Cos", TO_UNARY_COS},
    {"Softsign", TO_UNARY_SOFTSIGN},
    {"Celu", TO_UNARY_CELU, [](const Node& n, float* a, float*) { *a = attr(n, "alpha", 1.0); }},
    {"ThresholdedRelu", TO_UNARY_THRESHOLDED_RELU, [](const Node& n, float* a, float*) { *a = attr(n, "alpha", 1.0); }},
    {"Mish", TO_UNARY_MISH},
    {"Shrink", TO_UNARY_SHRINK,
     [](const Node& n, float* a, float* b) {
       *a = attr(n, "bias", 0.0);
       *b = attr(n, "lambd", 0.5);
     }},
    {"Tan", TO_UNARY_TAN},
    {"Atan", TO_UNARY_ATAN},
    {"Asin", TO_UNARY_ASIN},
    {"Acos", TO_UNARY_ACOS},
    {"Sinh", TO_UNARY_SINH},
    {"Cosh", TO_UNARY_COSH},
    {"Gelu", TO_UNARY_GELU},  // approximate="tanh" picks TO_UNARY_GELU_TANH (unary_code)
    {"Silu", TO_UNARY_SILU},
};

// Ops whose gradient is zero: the catalogue sends none back, so they have no backward.
bool no_gradient(int code) {
  return code == TO_UNARY_FLOOR || code == TO_UNARY_CEIL || code == TO_UNARY_ROUND || code == TO_UNARY_SIGN;
}

int unary_code(const UnaryOp& op, const Node& n) {
  if (op.code != TO_UNARY_GELU) return op.code;
  const std::string mode = n.attr_string("approximate", "none");
  if (mode == "tanh") return TO_UNARY_GELU_TANH;
  if (mode != "none") kernel_error(n, "Gelu approximate='" + mode + "' is not 'none' or 'tanh'");
  return TO_UNARY_GELU;
}

bool has_integer_form(int code) {
  return code == TO_UNARY_RELU || code == TO_UNARY_NEG || code == TO_UNARY_ABS || no_gradient(code);
}

void unary_forward(CudaBackend& be, const UnaryOp& op, const OpCall& c) {
  const DType t = c.in[0]->dtype();
  if (has_integer_form(op.code) && (t == DType::I64 || t == DType::I32)) {
    cuda_kernels::EwUnaryIntArgs args{op.code, dtype_code(t), c.in[0]->raw(), c.out[0]->raw(), c.out[0]->numel()};
    return be.launch("ew_unary_int", args, c.node.op_type);
  }
  const int x_dtype = require_float(c.node, *c.in[0], "the input");
  const int y_dtype = require_float(c.node, *c.out[0], "the output");
  float a = 0, b = 0;
  if (op.attrs) op.attrs(c.node, &a, &b);
  be.check(be.driver().unary(be.device(), unary_code(op, c.node), c.in[0]->raw(), x_dtype, c.out[0]->raw(), y_dtype,
                             c.out[0]->numel(), a, b),
           c.node.op_type);
}

void unary_backward(CudaBackend& be, const UnaryOp& op, const GradCall& c) {
  const int dy_dtype = require_float(c.node, *c.dout[0], "the output gradient");
  const int code = unary_code(op, c.node);
  float a = 0, b = 0;
  if (op.attrs) op.attrs(c.node, &a, &b);
  const Array* s = code == TO_UNARY_NEG ? c.dout[0] : cuda_kernels::unary_reads_output(code) ? c.out[0] : c.in[0];
  TO_CHECK(s != nullptr);
  const int s_dtype = require_float(c.node, *s, "the saved tensor");
  be.check(be.driver().unary_backward(be.device(), code, s->raw(), s_dtype, c.dout[0]->raw(), dy_dtype, c.din[0]->data<float>(),
                                      c.din[0]->numel(), a, b),
           c.node.op_type);
}

struct BinaryOp {
  const char* type;
  int code;     // TO_BINARY_*, for float32 and bfloat16
  int ew_code;  // cuda_kernels::EW_*, for the other dtypes
};
const BinaryOp kBinary[] = {{"Add", TO_BINARY_ADD, cuda_kernels::EW_ADD},
                            {"Sub", TO_BINARY_SUB, cuda_kernels::EW_SUB},
                            {"Mul", TO_BINARY_MUL, cuda_kernels::EW_MUL},
                            {"Div", TO_BINARY_DIV, cuda_kernels::EW_DIV},
                            {"Pow", TO_BINARY_POW, cuda_kernels::EW_POW}};

bool float_like(DType t) { return t == DType::F32 || t == DType::BF16; }

// Pow's exponent as the CPU converts it, to the base's dtype (a transient when it differs); a
// float base (float32, or bfloat16 as stored) takes a float32 or bfloat16 exponent as it is.
Array exponent_for(CudaBackend& be, const Node& node, DType base, const Array& exponent, const StepContext& ctx) {
  if (exponent.dtype() == base || (float_like(base) && float_like(exponent.dtype()))) return exponent;
  Array e(float_like(base) ? DType::F32 : base, exponent.shape(), *ctx.allocator, MemoryKind::Transients);
  cast_array(be, node, exponent, e);
  return e;
}

void binary_forward(CudaBackend& be, const BinaryOp& op, const OpCall& c) {
  if (c.in.size() != 2) kernel_error(c.node, "takes exactly two inputs");
  const Array& a = *c.in[0];
  Array b = *c.in[1];
  if (op.code == TO_BINARY_POW) b = exponent_for(be, c.node, a.dtype(), b, c.ctx);
  // float32 and bfloat16 operands are one float type: bfloat16 is a float32 tensor as stored.
  if (!float_like(a.dtype()) || !float_like(b.dtype())) {
    if (a.dtype() != b.dtype()) kernel_error(c.node, "the two inputs have different dtypes");
    return typed_binary(be, c.node, c.ctx, op.ew_code, a, &b, 0, *c.out[0]);
  }
  TensoroptBinary args{};
  args.op = op.code;
  args.a = a.raw();
  args.b = b.raw();
  args.out = c.out[0]->raw();
  args.a_dtype = dtype_code(a.dtype());
  args.b_dtype = dtype_code(b.dtype());
  args.out_dtype = require_float(c.node, *c.out[0], "the output");
  args.shape = broadcast_of(c.node, c.out[0]->shape(), a.shape(), b.shape());
  be.check(be.driver().binary(be.device(), &args), c.node.op_type);
}

}  // namespace

void binary_backward_float(CudaBackend& be, int code, const GradCall& c) {
  const Shape& out = c.dout[0]->shape();
  Array exponent;
  TensoroptBinary args{};
  args.op = code;
  if (c.in[0]) {
    args.a = c.in[0]->raw();
    args.a_dtype = require_float(c.node, *c.in[0], "the first input");
  }
  if (c.in.size() > 1 && c.in[1]) {
    exponent = code == TO_BINARY_POW ? exponent_for(be, c.node, c.in[0] ? c.in[0]->dtype() : DType::F32, *c.in[1], c.ctx) : *c.in[1];
    args.b = exponent.raw();
    args.b_dtype = require_float(c.node, exponent, "the second input");
  }
  args.dout = c.dout[0]->raw();
  args.dout_dtype = require_float(c.node, *c.dout[0], "the output gradient");
  args.shape = broadcast_of(c.node, out, c.in_shapes[0], c.in_shapes[1]);
  GradientTerms terms(c, out);
  args.da_full = terms.target(0);
  args.db_full = terms.target(1);
  be.check(be.driver().binary_backward(be.device(), &args), c.node.op_type);
  terms.finish(be);
}

void register_elementwise(CudaBackend& be, KernelTable& table) {
  for (const UnaryOp& op : kUnary) {
    OpKernel k{[&be, &op](const OpCall& c) { unary_forward(be, op, c); }, nullptr};
    if (!no_gradient(op.code)) k.backward = [&be, &op](const GradCall& c) { unary_backward(be, op, c); };
    k.takes_bf16 = true;
    table[op.type] = std::move(k);
  }
  for (const BinaryOp& op : kBinary) {
    OpKernel k{[&be, &op](const OpCall& c) { binary_forward(be, op, c); },
               [&be, &op](const GradCall& c) { binary_backward_float(be, op.code, c); }};
    k.takes_bf16 = true;
    table[op.type] = std::move(k);
  }
  register_elementwise_arith(be, table);
  register_elementwise_logic(be, table);
  register_elementwise_misc(be, table);
}

}  // namespace tensoropt::runtime::cuda
