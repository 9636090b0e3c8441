#include "launcher/runtime/cuda/norm_parts.h"

#include <string>

namespace tensoropt::runtime::cuda {

cuda_kernels::AxisRows rows_of(const Shape& s, int begin, int end) {
  cuda_kernels::AxisRows r{1, 1, 1};
  for (int a = 0; a < static_cast<int>(s.size()); ++a) {
    const int64_t d = s[static_cast<size_t>(a)];
    if (a < begin) r.outer *= d;
    else if (a < end) r.n *= d;
    else r.inner *= d;
  }
  return r;
}

int node_axis(const Node& node, const char* key, int64_t fallback, int rank) {
  const int64_t a = node.attr_int(key, fallback);
  if (a < -rank || a >= rank)
    kernel_error(node, std::string(key) + " " + std::to_string(a) + " is out of range for rank " + std::to_string(rank));
  return static_cast<int>(a < 0 ? a + rank : a);
}

std::vector<int64_t> read_indices(CudaBackend& be, const Node& node, const Array& a) {
  std::vector<int64_t> out(static_cast<size_t>(a.numel()));
  if (a.dtype() == DType::I64) {
    be.read(a, out.data(), a.bytes());
  } else if (a.dtype() == DType::I32) {
    std::vector<int32_t> v(out.size());
    be.read(a, v.data(), a.bytes());
    for (size_t i = 0; i < v.size(); ++i) out[i] = v[i];
  } else {
    kernel_error(node, "an index input is " + a.str() + "; int64 or int32 expected");
  }
  return out;
}

namespace {

void require_float(const Node& node, const Array& a, const char* what) {
  if (a.dtype() != DType::F32 && a.dtype() != DType::BF16)
    kernel_error(node, std::string(what) + " is " + a.str() + "; the CUDA kernel takes float32 or bfloat16");
}

}  // namespace

cuda_kernels::FloatIn float_in(const Node& node, const Array* a, const char* what) {
  if (!a) return {nullptr, TO_DTYPE_F32};
  require_float(node, *a, what);
  return {a->raw(), static_cast<int>(a->dtype())};
}

cuda_kernels::FloatOut float_out(const Node& node, Array* a, const char* what) {
  if (!a) return {nullptr, TO_DTYPE_F32};
  require_float(node, *a, what);
  return {a->raw(), static_cast<int>(a->dtype())};
}

Array keep_input(CudaBackend& be, const OpCall& c, int i) {
  const Array& a = *c.in[static_cast<size_t>(i)];
  if (a.kind() == MemoryKind::Parameters || a.kind() == MemoryKind::Buffers) return a;
  Array copy(a.dtype(), a.shape(), *c.ctx.allocator, MemoryKind::Activations);
  if (a.bytes() > 0) be.check(be.driver().copy_rows(be.device(), copy.raw(), a.bytes(), a.raw(), a.bytes(), a.bytes(), 1), "keep_input");
  return copy;
}

}  // namespace tensoropt::runtime::cuda
