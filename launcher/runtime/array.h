// Array: a dense, row-major n-d array on one device, the runtime's tensor. It owns (shares) a Block
// from the device's Allocator (allocator.h); copies of an Array are views of the same memory, and a
// reshaped view shares it too. Element types: float32 (every float tensor), int64 and int32
// (indices, token ids), bool (one byte, 0 or 1), float64 where a model asks for it. The data is
// only reachable from the device it lives on: a CPU kernel reads data<T>() directly, a CUDA kernel
// gets a device pointer; the executor moves bytes through Backend::write and Backend::read.
//
// Shapes legend used by kernels: B = batch, C = channels, T = sequence, N = elements.
// Not thread-safe for mutation; concurrent reads are fine.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "graph/dtype.h"
#include "graph/ir.h"
#include "launcher/runtime/allocator.h"

namespace tensoropt::runtime {

class Array {
 public:
  Array() = default;
  // Uninitialised memory for `shape` elements of `dtype`, counted as `kind`.
  Array(DType dtype, Shape shape, Allocator& allocator, MemoryKind kind);

  bool defined() const { return block_ != nullptr; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t dim(int axis) const { return shape_[static_cast<size_t>(axis)]; }
  int64_t numel() const { return numel_; }
  int64_t bytes() const { return numel_ * dtype_size(dtype_); }
  MemoryKind kind() const { return block_ ? block_->kind() : MemoryKind::Transients; }

  void* raw() const { return static_cast<char*>(block_ ? block_->data() : nullptr) + offset_; }
  // Typed pointer. REQUIRES (checked): T matches dtype() (float: F32, double: F64, int64_t: I64,
  // int32_t: I32, uint8_t: Bool or U8).
  template <typename T>
  T* data() const;

  // The same memory under another shape of equal element count (checked).
  Array view(Shape shape) const;
  // The `numel(shape)` elements from element `offset` on, under `shape` (checked to fit).
  Array view_at(int64_t offset, Shape shape) const;
  // "float32[2,3]"
  std::string str() const;

 private:
  std::shared_ptr<Block> block_;
  DType dtype_ = DType::Undefined;
  Shape shape_;
  int64_t numel_ = 0;
  int64_t offset_ = 0;  // bytes into the block
};

// The element type an Array of graph tensor `x` has on a device: float32 for every float type
// (the file's float16, bfloat16 or float64 are converted), bool for bool, int64 for integers.
DType runtime_dtype(const Tensor& x);

}  // namespace tensoropt::runtime
