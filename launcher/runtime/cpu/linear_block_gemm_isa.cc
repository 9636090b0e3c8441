// block_gemm (linear_block_gemm.h) for one instruction set: this file is compiled as it stands for
// the baseline, and included by linear_block_gemm_avx512.cc for AVX-512. That build renames Eigen's
// namespace first, so the two builds' Eigen templates are distinct symbols: the linker cannot
// merge an AVX-512 instantiation into the baseline's (which would run AVX-512 code on machines
// without it).
// gemm (linear_gemm.h) does the threading, by slabs: a product here is one thread's, whatever
// the other Eigen settings (setNbThreads is per namespace, so the AVX-512 build would otherwise
// run OpenMP threads of its own, and fork()ed workers can hang in them).
#define EIGEN_DONT_PARALLELIZE
#include <Eigen/Core>

#include "launcher/runtime/cpu/linear_block_gemm.h"

#ifndef TENSOROPT_GEMM_ISA
#define TENSOROPT_GEMM_ISA isa_baseline
#endif

namespace tensoropt::runtime::cpu::TENSOROPT_GEMM_ISA {
namespace {

using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Stride = Eigen::OuterStride<>;
using ConstBlock = Eigen::Map<const Matrix, 0, Stride>;
using Block = Eigen::Map<Matrix, 0, Stride>;

template <typename OpA, typename OpB>
void product(Block& c, float alpha, const OpA& a, const OpB& b, float beta) {
  if (beta == 0.0f) {
    c.noalias() = (alpha * a) * b;
    return;
  }
  if (beta != 1.0f) c *= beta;
  c.noalias() += (alpha * a) * b;
}

}  // namespace

// On the calling thread (Eigen does not thread a product inside a parallel region).
void block_gemm(const GemmDims& d, float alpha, const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                int64_t ldc) {
  Block mc(c, d.m, d.n, Stride(ldc));
  if (d.k == 0) {
    if (beta == 0.0f) mc.setZero();
    else mc *= beta;
    return;
  }
  ConstBlock ma(a, d.ta ? d.k : d.m, d.ta ? d.m : d.k, Stride(lda));
  ConstBlock mb(b, d.tb ? d.n : d.k, d.tb ? d.k : d.n, Stride(ldb));
  if (d.ta && d.tb) product(mc, alpha, ma.transpose(), mb.transpose(), beta);
  else if (d.ta) product(mc, alpha, ma.transpose(), mb, beta);
  else if (d.tb) product(mc, alpha, ma, mb.transpose(), beta);
  else product(mc, alpha, ma, mb, beta);
}

}  // namespace tensoropt::runtime::cpu::TENSOROPT_GEMM_ISA
