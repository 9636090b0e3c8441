// Mod, the variadic Sum, Mean, Min and Max, and PRelu on the CUDA backend (the CPU's
// cpu/elementwise_binary.cc): operands broadcast to y [N]; forward on ew_binary
// (device/elementwise_typed.h) in float32, float64, int64 and int32 (Mean: floats; PRelu:
// float32), backward in float32, each operand's gradient summed back onto its shape.
#include <string>

#include "launcher/runtime/cuda/elementwise_parts.h"

namespace tensoropt::runtime::cuda {
namespace {

using namespace cuda_kernels;  // EW_* codes

// ---- Mod(fmod = 0): integers take the divisor's sign; fmod = 1: the dividend's (floats need
// it). da = dy; the divisor's gradient needs both inputs, which the catalogue does not save.
void mod_forward(CudaBackend& be, const OpCall& c) {
  if (c.in.size() != 2) kernel_error(c.node, "takes exactly two inputs");
  if (c.in[0]->dtype() != c.in[1]->dtype()) kernel_error(c.node, "the two inputs have different dtypes");
  const bool fmod = c.node.attr_int("fmod", 0) != 0;
  if (!fmod && dtype_is_float(c.in[0]->dtype())) kernel_error(c.node, "Mod of floats needs fmod=1");
  typed_binary(be, c.node, c.ctx, EW_MOD, *c.in[0], c.in[1], 0, *c.out[0], fmod);
}
void mod_backward(CudaBackend& be, const GradCall& c) {
  if (c.din[1]) kernel_error(c.node, "the gradient of Mod's divisor needs both inputs, which the catalogue does not save");
  sum_gradients(be, c, 1.0f);
}

// ---- Sum, Mean, Min, Max of one or more inputs: y = op(...op(op(x0, x1), x2)..., xn), folded
// in place into y as the CPU does (Mean: then divided by n).
void fold_forward(CudaBackend& be, const OpCall& c, int op) {
  Array& y = *c.out[0];
  const DType t = y.dtype();
  if (t != DType::F32 && t != DType::F64 && t != DType::I64 && t != DType::I32)
    kernel_error(c.node, "no CUDA kernel for " + std::string(dtype_name(t)) + " operands");
  for (const Array* x : c.in) {
    if (x->dtype() != y.dtype()) kernel_error(c.node, "the inputs have different dtypes");
  }
  if (c.in.size() == 1) return copy_array(be, *c.in[0], y, "Sum of one");
  typed_binary(be, c.node, c.ctx, op, *c.in[0], c.in[1], 0, y);
  for (size_t k = 2; k < c.in.size(); ++k) typed_binary(be, c.node, c.ctx, op, y, c.in[k], 0, y);
}

void mean_forward(CudaBackend& be, const OpCall& c) {
  if (!dtype_is_float(c.out[0]->dtype())) kernel_error(c.node, "Mean takes float inputs");
  fold_forward(be, c, EW_ADD);
  typed_binary(be, c.node, c.ctx, EW_DIV, *c.out[0], nullptr, static_cast<double>(c.in.size()), *c.out[0]);
}

// Max and Min: at least two inputs; the gradient (binary.h: a tie's split in halves) for two, as
// the catalogue saves only the first two.
void extremum_forward(CudaBackend& be, const OpCall& c, int op) {
  if (c.in.size() < 2) kernel_error(c.node, "takes at least two inputs");
  fold_forward(be, c, op);
}
void extremum_backward(CudaBackend& be, const GradCall& c, int code) {
  if (c.in.size() != 2) kernel_error(c.node, "the gradient of Max and Min is implemented for two inputs");
  binary_backward_float(be, code, c);
}

// ---- PRelu(x, slope), slope broadcast to x: y = x > 0 ? x : slope·x;
// dx = x > 0 ? dy : slope·dy, dslope = x > 0 ? 0 : x·dy.
void prelu_forward(CudaBackend& be, const OpCall& c) {
  if (c.in.size() != 2) kernel_error(c.node, "takes exactly two inputs");
  if (c.in[0]->dtype() != c.in[1]->dtype()) kernel_error(c.node, "the two inputs have different dtypes");
  require_f32(c.node, *c.in[0], "the input");
  typed_binary(be, c.node, c.ctx, EW_PRELU, *c.in[0], c.in[1], 0, *c.out[0]);
}
void prelu_backward(CudaBackend& be, const GradCall& c) {
  if (!c.in[0]) {
    kernel_error(c.node, "PRelu's input gradient needs x, which the catalogue saves only when the slope takes a gradient too");
  }
  const Shape& out = c.dout[0]->shape();
  TensoroptBinary args{};
  args.a = c.in[0]->raw();
  args.a_dtype = require_float(c.node, *c.in[0], "the input");
  if (c.in[1]) {
    args.b = c.in[1]->raw();
    args.b_dtype = require_float(c.node, *c.in[1], "the slope");
  }
  args.dout = c.dout[0]->raw();
  args.dout_dtype = require_float(c.node, *c.dout[0], "the output gradient");
  args.shape = broadcast_of(c.node, out, c.in_shapes[0], c.in_shapes[1]);
  GradientTerms terms(c, out);
  args.da_full = terms.target(0);
  args.db_full = terms.target(1);
  be.launch("ew_prelu_backward", args, c.node.op_type);
  terms.finish(be);
}

}  // namespace

void register_elementwise_arith(CudaBackend& be, KernelTable& table) {
  table["Mod"] = {[&be](const OpCall& c) { mod_forward(be, c); }, [&be](const GradCall& c) { mod_backward(be, c); }};
  table["Sum"] = {[&be](const OpCall& c) { fold_forward(be, c, EW_ADD); }, [&be](const GradCall& c) { sum_gradients(be, c, 1.0f); }};
  table["Mean"] = {[&be](const OpCall& c) { mean_forward(be, c); },
                   [&be](const GradCall& c) { sum_gradients(be, c, 1.0f / static_cast<float>(c.din.size())); }};
  table["Max"] = {[&be](const OpCall& c) { extremum_forward(be, c, EW_MAX); },
                  [&be](const GradCall& c) { extremum_backward(be, c, TO_BINARY_MAX); }};
  table["Min"] = {[&be](const OpCall& c) { extremum_forward(be, c, EW_MIN); },
                  [&be](const GradCall& c) { extremum_backward(be, c, TO_BINARY_MIN); }};
  table["PRelu"] = {[&be](const OpCall& c) { prelu_forward(be, c); }, [&be](const GradCall& c) { prelu_backward(be, c); }};
}

}  // namespace tensoropt::runtime::cuda
