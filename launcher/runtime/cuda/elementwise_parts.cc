#include "launcher/runtime/cuda/elementwise_parts.h"

#include <cstdint>
#include <string>

namespace tensoropt::runtime::cuda {

static_assert(cuda_kernels::EW_DTYPE_F16 == static_cast<int>(DType::F16) && cuda_kernels::EW_DTYPE_I8 == static_cast<int>(DType::I8) &&
              cuda_kernels::EW_DTYPE_I16 == static_cast<int>(DType::I16) && cuda_kernels::EW_DTYPE_U16 == static_cast<int>(DType::U16) &&
              cuda_kernels::EW_DTYPE_U32 == static_cast<int>(DType::U32) && cuda_kernels::EW_DTYPE_U64 == static_cast<int>(DType::U64));

void typed_binary(CudaBackend& be, const Node& node, const StepContext& ctx, int op, const Array& a, const Array* b,
                  double b_scalar, Array& out, int fmod) {
  const DType t = a.dtype();
  const bool predicate = cuda_kernels::ew_is_predicate(op);
  const bool bytes = t == DType::Bool || t == DType::U8;
  if (!(t == DType::F32 || t == DType::F64 || t == DType::I64 || t == DType::I32 || (predicate && bytes)))
    kernel_error(node, "no CUDA kernel for " + std::string(dtype_name(t)) + " operands");
  TO_CHECK(!b || b->dtype() == t);
  TO_CHECK(out.dtype() == (predicate ? DType::Bool : t));
  cuda_kernels::EwBinaryArgs args{};
  args.op = op;
  args.dtype = dtype_code(t);
  args.fmod = fmod;
  args.a = a.raw();
  args.b = b ? b->raw() : nullptr;
  args.b_scalar = b_scalar;
  args.out = out.raw();
  args.shape = broadcast_of(node, out.shape(), a.shape(), b ? b->shape() : Shape{});
  const bool divides = (op == cuda_kernels::EW_DIV || op == cuda_kernels::EW_MOD) && (t == DType::I64 || t == DType::I32);
  Array flag;
  if (divides) {
    flag = Array(DType::I32, {1}, *ctx.allocator, MemoryKind::Transients);
    be.fill(flag, 0);
    args.zero_divisor = flag.data<int32_t>();
  }
  be.launch("ew_binary", args, node.op_type);
  if (divides) {
    int32_t zero = 0;
    be.read(flag, &zero, sizeof zero);
    if (zero) kernel_error(node, "integer division by zero");
  }
}

void cast_array(CudaBackend& be, const Node& node, const Array& src, Array& dst, int round) {
  TO_CHECK(src.numel() == dst.numel());
  for (const Array* a : {&src, static_cast<const Array*>(&dst)}) {
    if (!cuda_kernels::ew_castable(dtype_code(a->dtype())))
      kernel_error(node, "no CUDA conversion for " + std::string(dtype_name(a->dtype())));
  }
  cuda_kernels::EwCastArgs args{src.raw(), dst.raw(), dtype_code(src.dtype()), dtype_code(dst.dtype()), round, src.numel()};
  be.launch("ew_cast", args, node.op_type);
}

void copy_array(CudaBackend& be, const Array& src, Array& dst, const char* what) {
  TO_CHECK(src.bytes() == dst.bytes());
  if (src.bytes() == 0 || src.raw() == dst.raw()) return;
  be.check(be.driver().copy_rows(be.device(), dst.raw(), dst.bytes(), src.raw(), src.bytes(), src.bytes(), 1), what);
}

void copy_or_cast(CudaBackend& be, const Node& node, const Array& src, Array& dst) {
  if (src.dtype() == dst.dtype()) copy_array(be, src, dst, node.op_type.c_str());
  else cast_array(be, node, src, dst);
}

float* GradientTerms::target(size_t k) {
  Array* d = c_.din[k];
  if (!d) return nullptr;
  if (c_.in_shapes[k] == out_) return d->data<float>();
  full_[k] = Array(DType::F32, out_, *c_.ctx.allocator, MemoryKind::Transients);
  return full_[k].data<float>();
}

void GradientTerms::finish(CudaBackend& be) {
  for (size_t k = 0; k < full_.size(); ++k) {
    if (full_[k].defined()) sum_onto(be, c_.node, full_[k], *c_.din[k]);
  }
}

void sum_gradients(CudaBackend& be, const GradCall& c, float factor) {
  for (size_t k = 0; k < c.din.size(); ++k) {
    Array* d = c.din[k];
    if (!d) continue;
    require_float(c.node, *c.dout[0], "the output gradient");
    if (d->shape() == c.dout[0]->shape()) copy_or_cast(be, c.node, *c.dout[0], *d);
    else sum_onto(be, c.node, *c.dout[0], *d);
    if (factor != 1.0f) be.scale(*d, factor);
  }
}

}  // namespace tensoropt::runtime::cuda
