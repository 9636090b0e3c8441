// CUDA kernels of graph/ops/elementwise.cc, host side: which driver kernel (device/unary.h,
// device/binary.h) runs each op, with what attributes and broadcast strides. float32 operands;
// any other dtype is refused naming the node (kernel_error), never run wrongly.
// Unary: the ops of device/unary.h, forward and backward (the backward reads x or y as the
// catalogue saves it). Binary: Add, Sub, Mul, Div, Pow, and Min and Max of two inputs; a gradient
// of a broadcast operand is its per-element term summed back to the operand's shape (sum_to).
#include <string>
#include <vector>

#include "launcher/runtime/cuda/backend.h"
#include "launcher/runtime/cuda/device/unary.h"
#include "launcher/runtime/cuda/shapes.h"

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

void unary_forward(CudaBackend& be, const UnaryOp& op, const OpCall& c) {
  require_f32(c.node, *c.in[0], "the input");
  float a = 0, b = 0;
  if (op.attrs) op.attrs(c.node, &a, &b);
  be.check(be.driver().unary(be.device(), unary_code(op, c.node), c.in[0]->data<float>(), c.out[0]->data<float>(),
                             c.out[0]->numel(), a, b),
           c.node.op_type);
}

void unary_backward(CudaBackend& be, const UnaryOp& op, const GradCall& c) {
  require_f32(c.node, *c.dout[0], "the output gradient");
  const int code = unary_code(op, c.node);
  float a = 0, b = 0;
  if (op.attrs) op.attrs(c.node, &a, &b);
  const Array* s = code == TO_UNARY_NEG ? c.dout[0] : cuda_kernels::unary_reads_output(code) ? c.out[0] : c.in[0];
  TO_CHECK(s != nullptr);
  be.check(be.driver().unary_backward(be.device(), code, s->data<float>(), c.dout[0]->data<float>(), c.din[0]->data<float>(),
                                      c.din[0]->numel(), a, b),
           c.node.op_type);
}

struct BinaryOp {
  const char* type;
  int code;
};
const BinaryOp kBinary[] = {{"Add", TO_BINARY_ADD}, {"Sub", TO_BINARY_SUB}, {"Mul", TO_BINARY_MUL}, {"Div", TO_BINARY_DIV},
                            {"Pow", TO_BINARY_POW}, {"Min", TO_BINARY_MIN}, {"Max", TO_BINARY_MAX}};

void binary_forward(CudaBackend& be, const BinaryOp& op, const OpCall& c) {
  if (c.in.size() != 2) kernel_error(c.node, "the CUDA kernel takes exactly two inputs");
  require_f32(c.node, *c.in[0], "the first input");
  require_f32(c.node, *c.in[1], "the second input");
  TensoroptBinary args{};
  args.op = op.code;
  args.a = c.in[0]->data<float>();
  args.b = c.in[1]->data<float>();
  args.out = c.out[0]->data<float>();
  args.shape = broadcast_of(c.node, c.out[0]->shape(), c.in[0]->shape(), c.in[1]->shape());
  be.check(be.driver().binary(be.device(), &args), c.node.op_type);
}

void binary_backward(CudaBackend& be, const BinaryOp& op, const GradCall& c) {
  require_f32(c.node, *c.dout[0], "the output gradient");
  const Shape& out = c.dout[0]->shape();
  TensoroptBinary args{};
  args.op = op.code;
  args.a = c.in[0] ? c.in[0]->data<float>() : nullptr;
  args.b = c.in.size() > 1 && c.in[1] ? c.in[1]->data<float>() : nullptr;
  args.dout = c.dout[0]->data<float>();
  args.shape = broadcast_of(c.node, out, c.in_shapes[0], c.in_shapes[1]);
  // A gradient of an operand broadcast along some axis is first written output-shaped.
  std::vector<Array> full(2);
  for (int k = 0; k < 2; ++k) {
    Array* d = c.din[static_cast<size_t>(k)];
    if (!d) continue;
    if (c.in_shapes[static_cast<size_t>(k)] == out) {
      (k ? args.db_full : args.da_full) = d->data<float>();
    } else {
      full[static_cast<size_t>(k)] = Array(DType::F32, out, *c.ctx.allocator, MemoryKind::Transients);
      (k ? args.db_full : args.da_full) = full[static_cast<size_t>(k)].data<float>();
    }
  }
  be.check(be.driver().binary_backward(be.device(), &args), c.node.op_type);
  for (int k = 0; k < 2; ++k) {
    if (full[static_cast<size_t>(k)].defined()) sum_onto(be, c.node, full[static_cast<size_t>(k)], *c.din[static_cast<size_t>(k)]);
  }
}

}  // namespace

void register_elementwise(CudaBackend& be, KernelTable& table) {
  for (const UnaryOp& op : kUnary) {
    OpKernel k{[&be, &op](const OpCall& c) { unary_forward(be, op, c); }, nullptr};
    if (!no_gradient(op.code)) k.backward = [&be, &op](const GradCall& c) { unary_backward(be, op, c); };
    table[op.type] = std::move(k);
  }
  for (const BinaryOp& op : kBinary) {
    table[op.type] = {[&be, &op](const OpCall& c) { binary_forward(be, op, c); },
                      [&be, &op](const GradCall& c) { binary_backward(be, op, c); }};
  }
}

}  // namespace tensoropt::runtime::cuda
