#include "launcher/runtime/array.h"

#include <cstdint>

#include "graph/error.h"

namespace tensoropt::runtime {

Array::Array(DType dtype, Shape shape, Allocator& allocator, MemoryKind kind)
    : block_(std::make_shared<Block>(allocator.allocate(tensoropt::numel(shape) * dtype_size(dtype), kind))),
      dtype_(dtype),
      shape_(std::move(shape)),
      numel_(tensoropt::numel(shape_)) {
  TO_CHECK(dtype_size(dtype) > 0);
}

namespace {
template <typename T>
bool matches(DType t);
template <> bool matches<float>(DType t) { return t == DType::F32; }
template <> bool matches<double>(DType t) { return t == DType::F64; }
template <> bool matches<int64_t>(DType t) { return t == DType::I64; }
template <> bool matches<int32_t>(DType t) { return t == DType::I32; }
template <> bool matches<uint8_t>(DType t) { return t == DType::Bool || t == DType::U8; }
template <> bool matches<uint16_t>(DType t) { return t == DType::BF16 || t == DType::F16 || t == DType::U16; }
}  // namespace

template <typename T>
T* Array::data() const {
  TO_CHECK(matches<T>(dtype_));
  return static_cast<T*>(raw());
}
template float* Array::data<float>() const;
template double* Array::data<double>() const;
template int64_t* Array::data<int64_t>() const;
template int32_t* Array::data<int32_t>() const;
template uint8_t* Array::data<uint8_t>() const;
template uint16_t* Array::data<uint16_t>() const;

Array Array::view(Shape shape) const {
  TO_CHECK(tensoropt::numel(shape) == numel_);
  Array v = *this;
  v.shape_ = std::move(shape);
  return v;
}

Array Array::view_at(int64_t offset, Shape shape) const {
  const int64_t n = tensoropt::numel(shape);
  TO_CHECK(offset >= 0 && n >= 0 && offset + n <= numel_);
  Array v = *this;
  v.shape_ = std::move(shape);
  v.numel_ = n;
  v.offset_ += offset * dtype_size(dtype_);
  return v;
}

DType runtime_dtype(const Tensor& x) {
  if (dtype_is_float(x.dtype)) return DType::F32;
  if (x.dtype == DType::Bool) return DType::Bool;
  return DType::I64;
}

std::string Array::str() const { return std::string(dtype_name(dtype_)) + shape_str(shape_); }

}  // namespace tensoropt::runtime
