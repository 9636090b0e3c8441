#include "graph/dtype.h"

#include <cmath>
#include <cstring>

namespace tensoropt {

int64_t dtype_size(DType t) {
  switch (t) {
    case DType::F64: case DType::I64: case DType::U64: return 8;
    case DType::F32: case DType::I32: case DType::U32: return 4;
    case DType::F16: case DType::BF16: case DType::I16: case DType::U16: return 2;
    case DType::I8: case DType::U8: case DType::Bool: return 1;
    case DType::Undefined: case DType::String: return 0;
  }
  return 0;
}

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::Undefined: return "undefined";
    case DType::F32: return "float32";
    case DType::F16: return "float16";
    case DType::BF16: return "bfloat16";
    case DType::F64: return "float64";
    case DType::I8: return "int8";
    case DType::I16: return "int16";
    case DType::I32: return "int32";
    case DType::I64: return "int64";
    case DType::U8: return "uint8";
    case DType::U16: return "uint16";
    case DType::U32: return "uint32";
    case DType::U64: return "uint64";
    case DType::Bool: return "bool";
    case DType::String: return "string";
  }
  return "undefined";
}

// Values of onnx::TensorProto_DataType, spelled out so this file needs no protobuf header.
std::optional<DType> dtype_from_onnx(int onnx_type) {
  switch (onnx_type) {
    case 1: return DType::F32;
    case 2: return DType::U8;
    case 3: return DType::I8;
    case 4: return DType::U16;
    case 5: return DType::I16;
    case 6: return DType::I32;
    case 7: return DType::I64;
    case 8: return DType::String;
    case 9: return DType::Bool;
    case 10: return DType::F16;
    case 11: return DType::F64;
    case 12: return DType::U32;
    case 13: return DType::U64;
    case 16: return DType::BF16;
    default: return std::nullopt;
  }
}

int dtype_to_onnx(DType t) {
  for (int v = 1; v <= 16; ++v) {
    if (auto d = dtype_from_onnx(v); d && *d == t) return v;
  }
  return 0;
}

bool dtype_is_float(DType t) {
  return t == DType::F32 || t == DType::F16 || t == DType::BF16 || t == DType::F64;
}

bool dtype_is_integral(DType t) {
  switch (t) {
    case DType::I8: case DType::I16: case DType::I32: case DType::I64:
    case DType::U8: case DType::U16: case DType::U32: case DType::U64: case DType::Bool:
      return true;
    default:
      return false;
  }
}

double half_to_double(uint16_t h, bool bf16) {
  if (bf16) {
    uint32_t bits = static_cast<uint32_t>(h) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  int sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, frac = h & 0x3ff;
  double m = exp == 0 ? frac / 1024.0 * std::pow(2.0, -14) : (1 + frac / 1024.0) * std::pow(2.0, exp - 15);
  if (exp == 31) m = frac ? std::nan("") : HUGE_VAL;
  return sign ? -m : m;
}

}  // namespace tensoropt
