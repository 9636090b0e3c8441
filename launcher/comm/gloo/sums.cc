#include "launcher/comm/gloo/sums.h"

#include <cstring>

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
float bf16_to_float(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
uint16_t float_to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);  // NaN stays NaN
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}
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
  return "#" + std::to_string(static_cast<int>(t)) + " (" + std::to_string(comm_dtype_size(t)) + " bytes)";
}

}  // namespace tensoropt::comm::gloo_impl
