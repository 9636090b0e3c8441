// Building blocks shared by the CPU kernels: threads, broadcasting index maps, reductions of a
// broadcast gradient back to its operand's shape, and Eigen views of Arrays.
//
// Threads: parallel_for splits [0, n) into contiguous chunks over at most StepContext::threads
// OpenMP threads (one chunk when n is small), so kernels never oversubscribe the cores a worker
// was given. Eigen's own products use the same count (set by CpuBackend per step).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include <Eigen/Core>

#include "launcher/runtime/array.h"
#include "launcher/runtime/kernel.h"

namespace tensoropt::runtime::cpu {

// Calls fn(begin, end) on disjoint chunks covering [0, n); chunks of at least `grain` elements.
void parallel_for(int64_t n, int64_t grain, int threads, const std::function<void(int64_t, int64_t)>& fn);

// Row-major strides of a shape.
std::vector<int64_t> strides_of(const Shape& s);

// For an operand of shape `in` broadcast (numpy rules, aligned right) to `out`: the strides to use
// per output axis (0 along broadcast axes). offset(k) for output element k is sum(idx * stride).
std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out);

// Offset into an operand, for output linear index k, given the operand's broadcast strides.
int64_t broadcast_offset(int64_t k, const Shape& out, const std::vector<int64_t>& bstrides);

// grad_in[shape in] = sum of grad_out[shape out] over the axes `in` was broadcast along
// (overwrites grad_in). REQUIRES: `in` broadcasts to `out`.
void sum_to_shape(const float* grad_out, const Shape& out, float* grad_in, const Shape& in, int threads);

// Eigen views: a row-major matrix of `rows` x `cols` over an Array's float data.
using MatrixRM = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MapRM = Eigen::Map<MatrixRM>;
using ConstMapRM = Eigen::Map<const MatrixRM>;
inline MapRM matrix(const Array& a, int64_t rows, int64_t cols) { return MapRM(a.data<float>(), rows, cols); }
inline ConstMapRM cmatrix(const Array& a, int64_t rows, int64_t cols) { return ConstMapRM(a.data<float>(), rows, cols); }
using VectorMap = Eigen::Map<Eigen::VectorXf>;
using ConstVectorMap = Eigen::Map<const Eigen::VectorXf>;
inline VectorMap vec(const Array& a) { return VectorMap(a.data<float>(), a.numel()); }
inline ConstVectorMap cvec(const Array& a) { return ConstVectorMap(a.data<float>(), a.numel()); }

// Refuses (kernel_error naming the node) an operand that is not float32: "<what> is int64[2,3];
// the CPU kernel takes float32".
void require_f32(const Node& node, const Array& a, const char* what);

// Index tensors (Gather indices, labels) may be int64 or int32: element i as int64.
int64_t index_at(const Array& a, int64_t i);

}  // namespace tensoropt::runtime::cpu
