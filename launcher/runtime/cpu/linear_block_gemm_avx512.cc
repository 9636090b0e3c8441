// The AVX-512 build of block_gemm (compiled with -march=x86-64-v4; see linear_block_gemm_isa.cc).
#define Eigen EigenAvx512
#define TENSOROPT_GEMM_ISA isa_avx512
#include "launcher/runtime/cpu/linear_block_gemm_isa.cc"
