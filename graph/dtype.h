// Element types of tensors, as the ONNX TensorProto.DataType enum names them.
// Thread-safe: pure functions over a closed enum.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

namespace tensoropt {

enum class DType : uint8_t {
  Undefined, F32, F16, BF16, F64, I8, I16, I32, I64, U8, U16, U32, U64, Bool, String,
};

// Bytes of one element; 0 for Undefined and String.
int64_t dtype_size(DType t);
// Short name: "float32", "int64", "bool", ...
std::string_view dtype_name(DType t);
// From the ONNX TensorProto.DataType value; nullopt for types we do not model (complex, fp8).
std::optional<DType> dtype_from_onnx(int onnx_type);
// Inverse of dtype_from_onnx; 0 (UNDEFINED) for Undefined.
int dtype_to_onnx(DType t);
bool dtype_is_float(DType t);
// The value of a float16 (IEEE binary16) or bfloat16 bit pattern.
double half_to_double(uint16_t bits, bool bf16);
// float32 <-> bfloat16 bit patterns: to the nearest, ties to even; infinities and NaN keep their
// class (a NaN stays a NaN).
inline uint16_t float_to_bf16(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  if ((bits & 0x7f800000u) == 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | ((bits & 0xffffu) ? 0x40u : 0u));
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}
inline float bf16_to_float(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float v;
  std::memcpy(&v, &bits, 4);
  return v;
}
// Integer or bool: the types whose constant values are held exactly as int64.
bool dtype_is_integral(DType t);

}  // namespace tensoropt
