// The choice between block_gemm's builds (linear_block_gemm.h).
#include "launcher/runtime/cpu/linear_block_gemm.h"

namespace tensoropt::runtime::cpu {
namespace {

bool use_avx512() {
#if defined(TENSOROPT_HAVE_AVX512_GEMM) && (defined(__x86_64__) || defined(__i386__))
  static const bool yes = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512dq") &&
                          __builtin_cpu_supports("avx512vl");
  return yes;
#else
  return false;
#endif
}

}  // namespace

#ifndef TENSOROPT_HAVE_AVX512_GEMM
namespace isa_avx512 {
// Not built (the compiler cannot target x86-64-v4): never chosen.
void block_gemm(const GemmDims& d, float alpha, const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                int64_t ldc) {
  isa_baseline::block_gemm(d, alpha, a, lda, b, ldb, beta, c, ldc);
}
}  // namespace isa_avx512
#endif

void block_gemm(const GemmDims& d, float alpha, const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                int64_t ldc) {
  if (use_avx512()) return isa_avx512::block_gemm(d, alpha, a, lda, b, ldb, beta, c, ldc);
  isa_baseline::block_gemm(d, alpha, a, lda, b, ldb, beta, c, ldc);
}

const char* block_gemm_isa() { return use_avx512() ? "avx512" : "baseline"; }

}  // namespace tensoropt::runtime::cpu
