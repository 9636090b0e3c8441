// One dense product on the calling thread, in two builds of the same code: one for the runtime's
// baseline instruction set (TENSOROPT_MARCH, AVX2), one for AVX-512 (x86-64-v4) where the compiler
// can build it. block_gemm picks the AVX-512 build when the processor has AVX-512 F, BW, CD, DQ and
// VL, else the baseline; the choice is made once, so every product of a process runs the same
// code (results are reproducible run to run on one machine; AVX-512 sums in another order, so its
// last bits differ from the baseline's).
//
// TENSOROPT_GEMM=baseline (or =avx512) in the environment forces a build; another value, or
// avx512 where it cannot run, is an InputError from the first call of block_gemm or
// block_gemm_isa (run calls the latter before its first step).
//
// block_gemm: C[m,n] = alpha·op(A)·op(B) + beta·C on strided row-major matrices (leading
// dimensions lda, ldb, ldc; op(A) [m,k], op(B) [k,n], A stored [k,m] with d.ta, B [n,k] with d.tb).
// k == 0 scales C by beta. Thread-safe (no shared state but the choice).
#pragma once

#include <cstdint>

#include "launcher/runtime/cpu/linear_gemm.h"

namespace tensoropt::runtime::cpu {

void block_gemm(const GemmDims& d, float alpha, const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                int64_t ldc);
// Which build block_gemm runs: "avx512" or "baseline".
const char* block_gemm_isa();

// The two builds (linear_block_gemm_isa.cc), each in its own namespace.
namespace isa_baseline {
void block_gemm(const GemmDims& d, float alpha, const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                int64_t ldc);
}
namespace isa_avx512 {
void block_gemm(const GemmDims& d, float alpha, const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                int64_t ldc);
}

}  // namespace tensoropt::runtime::cpu
