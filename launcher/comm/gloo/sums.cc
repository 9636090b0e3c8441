#include "launcher/comm/gloo/sums.h"

#include "graph/dtype.h"
#include "graph/error.h"

namespace tensoropt::comm::gloo_impl {

namespace {

template <typename T>
void add(void* c, const void* a, const void* b, size_t n) {
  T* out = static_cast<T*>(c);  // may be a (Gloo and we reduce in place)
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  for (size_t i = 0; i < n; ++i) out[i] = x[i] + y[i];
}

// bfloat16 sums: each pair added in float32 and rounded to nearest even (as NCCL sums bfloat16).
// graph/dtype.h's float_to_bf16 and this layer's former copy differ only on a signalling NaN
// whose low 16 bits are zero, which a float32 addition never returns (it quiets NaNs): the sums
// are the same bits for all 2^32 pairs of inputs.
void add_bf16(void* c, const void* a, const void* b, size_t n) {
  auto* out = static_cast<uint16_t*>(c);
  const auto* x = static_cast<const uint16_t*>(a);
  const auto* y = static_cast<const uint16_t*>(b);
  for (size_t i = 0; i < n; ++i) out[i] = float_to_bf16(bf16_to_float(x[i]) + bf16_to_float(y[i]));
}

}  // namespace

AddFn sum_fn(DType t, const char* what) {
  switch (t) {
    case DType::F32: return &add<float>;
    case DType::F64: return &add<double>;
    case DType::I32: return &add<int32_t>;
    case DType::I64: return &add<int64_t>;
    case DType::BF16: return &add_bf16;
    default: throw InternalError(std::string(what) + ": no sum for dtype " + dtype_label(t));
  }
}

int64_t copy_size(DType t, const char* what) {
  const int64_t s = comm_dtype_size(t);
  if (s == 0) throw InternalError(std::string(what) + ": dtype " + dtype_label(t) + " cannot be moved");
  return s;
}

std::string dtype_label(DType t) {
  // Appended piece by piece: GCC 12 at -O3 reports a false -Wrestrict on "literal" + std::string&&.
  std::string label = "#";
  label.append(std::to_string(static_cast<int>(t))).append(" (").append(std::to_string(comm_dtype_size(t))).append(" bytes)");
  return label;
}

}  // namespace tensoropt::comm::gloo_impl
