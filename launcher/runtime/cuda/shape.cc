// CUDA kernels of graph/ops/shape.cc, host side, as cpu/shape.cc: import folds Shape, Size and
// Constant always and this family's other nodes when their output is small, so only a
// ConstantOfShape or a Range with a large output reaches a backend. Neither takes a gradient.
//   ConstantOfShape(shape; value)  out[N] = value (a one-element tensor attribute, float32 0 by
//                                  default), its bits written by move_fill_bits.
//   Range(start, limit, delta)     out[k] = start + k * delta, N the inferred size; start and delta
//                                  read on the device (float32 and float64 in double, rounded once;
//                                  int32 and int64 exactly).
#include <string>

#include "launcher/runtime/cpu/movement_kernels.h"
#include "launcher/runtime/cuda/device/movement.h"
#include "launcher/runtime/cuda/movement.h"

namespace tensoropt::runtime::cuda {
namespace {

void constant_of_shape_forward(CudaBackend& be, const OpCall& c) {
  Array& y = *c.out[0];
  double real = 0;
  int64_t integer = 0;
  if (const Attribute* a = c.node.attr("value"); a && a->tensor) {
    real = a->tensor->real(0);
    integer = a->tensor->integer(0);
  }
  cuda_kernels::FillBitsArgs f{y.raw(), dtype_size(y.dtype()), y.numel(), 0};
  if (!cpu::element_bits(y.dtype(), real, integer, f.bits)) kernel_error(c.node, "cannot fill " + std::string(dtype_name(y.dtype())));
  if (f.n > 0) be.launch("move_fill_bits", f, c.node.op_type);
}

void range_forward(CudaBackend& be, const OpCall& c) {
  Array& y = *c.out[0];
  const DType t = y.dtype();
  if (t != DType::F32 && t != DType::F64 && t != DType::I64 && t != DType::I32) {
    kernel_error(c.node, "Range of " + std::string(dtype_name(t)) + " is not supported");
  }
  TO_CHECK(c.in[0]->dtype() == t && c.in[2]->dtype() == t);
  const cuda_kernels::RangeArgs a{c.in[0]->raw(), c.in[2]->raw(), y.raw(), static_cast<int>(t), y.numel()};
  if (a.n > 0) be.launch("move_range", a, c.node.op_type);
}

}  // namespace

void register_shape(CudaBackend& be, KernelTable& table) {
  table["ConstantOfShape"] = {[&be](const OpCall& c) { constant_of_shape_forward(be, c); }, {}};
  table["Range"] = {[&be](const OpCall& c) { range_forward(be, c); }, {}};
}

}  // namespace tensoropt::runtime::cuda
