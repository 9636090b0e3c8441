// The choice between block_gemm's builds (linear_block_gemm.h).
#include "launcher/runtime/cpu/linear_block_gemm.h"

#include <cstdlib>
#include <string>

#include "graph/error.h"

namespace tensoropt::runtime::cpu {
namespace {

bool processor_has_avx512() {
#if defined(TENSOROPT_HAVE_AVX512_GEMM) && (defined(__x86_64__) || defined(__i386__))
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512cd") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
#else
  return false;
#endif
}

// The build to run: TENSOROPT_GEMM=baseline or =avx512 when set, else AVX-512 where it can run.
bool choose_avx512() {
  const char* env = std::getenv("TENSOROPT_GEMM");
  const std::string want = env ? env : "";
  if (want.empty()) return processor_has_avx512();
  if (want == "baseline") return false;
  if (want == "avx512") {
#ifdef TENSOROPT_HAVE_AVX512_GEMM
    const char* why = "this processor lacks AVX-512 F, BW, CD, DQ or VL";
#else
    const char* why = "this build has no AVX-512 GEMM (the compiler could not target x86-64-v4)";
#endif
    if (!processor_has_avx512()) throw InputError(std::string("TENSOROPT_GEMM=avx512: ") + why);
    return true;
  }
  throw InputError("TENSOROPT_GEMM=" + want + ": expected baseline or avx512 (or unset: AVX-512 where the processor has it)");
}

bool use_avx512() {
  static const bool yes = choose_avx512();
  return yes;
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
