// CPU kernels of graph/ops/shape.cc (see kernels.h). Import folds every node of this family whose
// inputs are known and whose output has at most kMaxFoldElements (graph/import_steps.h) elements;
// Shape, Size and Constant always fold, so only a ConstantOfShape or a Range with a larger output
// reaches the runtime (their inputs are constants: the catalogue's inference needs them). Neither
// takes a gradient.
//
// Shapes legend: N = output elements.
#include <string>
#include <type_traits>

#include "launcher/runtime/cpu/kernels.h"
#include "launcher/runtime/cpu/movement_copy.h"
#include "launcher/runtime/cpu/movement_kernels.h"
#include "launcher/runtime/cpu/util.h"

namespace tensoropt::runtime::cpu {
namespace {

// ---- ConstantOfShape(shape; value): out[N] = value (a one-element tensor attribute, float32 0 by
// default), of value's dtype.
void constant_of_shape_forward(const OpCall& c) {
  Array& y = *c.out[0];
  double real = 0;
  int64_t integer = 0;
  if (const Attribute* a = c.node.attr("value"); a && a->tensor) {
    real = a->tensor->real(0);
    integer = a->tensor->integer(0);
  }
  uint64_t bits = 0;
  if (!element_bits(y.dtype(), real, integer, bits)) {
    kernel_error(c.node, "cannot fill " + std::string(dtype_name(y.dtype())));
  }
  fill_elements(y.raw(), y.numel(), &bits, dtype_size(y.dtype()), c.ctx.threads);
}

// ---- Range(start, limit, delta): out[k] = start + k * delta for k < N = max(ceil((limit - start)
// / delta), 0) (N is the output's inferred size), in the inputs' type: float32 and float64
// computed in double and rounded once, int32 and int64 exactly.
template <typename T>
void range_fill(const OpCall& c) {
  const T start = c.in[0]->data<T>()[0], delta = c.in[2]->data<T>()[0];
  T* y = c.out[0]->data<T>();
  parallel_for(c.out[0]->numel(), 1 << 14, c.ctx.threads, [&](int64_t lo, int64_t hi) {
    for (int64_t k = lo; k < hi; ++k) {
      if constexpr (std::is_floating_point_v<T>) {
        y[k] = static_cast<T>(static_cast<double>(start) + static_cast<double>(k) * static_cast<double>(delta));
      } else {
        y[k] = static_cast<T>(start + static_cast<T>(k) * delta);
      }
    }
  });
}

void range_forward(const OpCall& c) {
  switch (c.out[0]->dtype()) {
    case DType::F32: range_fill<float>(c); break;
    case DType::F64: range_fill<double>(c); break;
    case DType::I64: range_fill<int64_t>(c); break;
    case DType::I32: range_fill<int32_t>(c); break;
    default: kernel_error(c.node, "Range of " + std::string(dtype_name(c.out[0]->dtype())) + " is not supported");
  }
}

}  // namespace

void register_shape(KernelTable& table) {
  table["ConstantOfShape"] = {constant_of_shape_forward, {}};
  table["Range"] = {range_forward, {}};
}

}  // namespace tensoropt::runtime::cpu
