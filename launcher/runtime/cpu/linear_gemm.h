// Dense matrix products for the linear kernels (MatMul, Gemm, Conv, ConvTranspose, Einsum), on
// Eigen's GEMM over contiguous row-major float matrices.
//
// gemm: one product C[m,n] = alpha·op(A)·op(B) + beta·C, op(A) [m,k], op(B) [k,n]; A is stored
// [m,k] (or [k,m] with ta), B [k,n] (or [n,k] with tb). On `threads` threads, each computing a
// slab of C with Eigen on its own (Eigen's shared-panel threading waits on its peers and suffers
// badly on busy cores).
//
// batched_gemm: many products of the same dims, product p reading matrix a[p] of A, b[p] of B and
// writing matrix c[p] of C (indices in units of whole matrices). Products with the same c sum
// there, overwriting what C held (the gradient of a broadcast operand). Independent C matrices
// run in parallel when there are enough of them to keep every thread busy; otherwise one after
// another, each split by gemm.
#pragma once

#include <cstdint>
#include <vector>

namespace tensoropt::runtime::cpu {

struct GemmDims {
  int64_t m = 1, n = 1, k = 1;
  bool ta = false, tb = false;
};

void gemm(const GemmDims& d, float alpha, const float* a, const float* b, float beta, float* c, int threads);

struct GemmBatch {
  std::vector<int64_t> a, b, c;  // per product: matrix index into A, B, C
};

void batched_gemm(const GemmDims& d, const float* a, const float* b, float* c, const GemmBatch& batch, int threads);

}  // namespace tensoropt::runtime::cpu
