#include "launcher/runtime/cuda/shapes.h"

#include <string>

namespace tensoropt::runtime::cuda {
namespace {

// Strides of `in` broadcast to `out` (aligned right), written into stride[0..out.size()).
void strides_into(const Shape& in, const Shape& out, int64_t* stride) {
  const size_t skip = out.size() - in.size();
  int64_t s = 1;
  for (size_t d = out.size(); d-- > 0;) {
    if (d < skip) {
      stride[d] = 0;
      continue;
    }
    const int64_t size = in[d - skip];
    stride[d] = size == 1 && out[d] != 1 ? 0 : s;
    s *= size;
  }
}

}  // namespace

void require_f32(const Node& node, const Array& a, const char* what) {
  if (a.dtype() != DType::F32) kernel_error(node, std::string(what) + " is " + a.str() + "; the CUDA kernel takes float32");
}

int require_float(const Node& node, const Array& a, const char* what) {
  if (a.dtype() != DType::F32 && a.dtype() != DType::BF16)
    kernel_error(node, std::string(what) + " is " + a.str() + "; the CUDA kernel takes float32 or bfloat16");
  return static_cast<int>(a.dtype());
}

TensoroptBroadcast broadcast_of(const Node& node, const Shape& out, const Shape& a, const Shape& b) {
  if (out.size() > TO_MAX_RANK) kernel_error(node, "the CUDA kernels take at most " + std::to_string(TO_MAX_RANK) + " axes");
  TO_CHECK(a.size() <= out.size() && b.size() <= out.size());
  TensoroptBroadcast s{};
  s.rank = static_cast<int>(out.size());
  for (size_t d = 0; d < out.size(); ++d) s.shape[d] = out[d];
  strides_into(a, out, s.a_stride);
  strides_into(b, out, s.b_stride);
  return s;
}

void sum_onto(CudaBackend& be, const Node& node, const Array& src, Array& dst) {
  TensoroptSumTo args{};
  args.src = src.raw();
  args.src_dtype = require_float(node, src, "a gradient summed");
  args.dst = dst.data<float>();
  args.dst_count = dst.numel();
  args.shape = broadcast_of(node, src.shape(), dst.shape(), src.shape());
  be.check(be.driver().sum_to(be.device(), &args), node.op_type + " (gradient sum)");
}

}  // namespace tensoropt::runtime::cuda
