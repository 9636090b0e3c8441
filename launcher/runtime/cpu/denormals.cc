// The CPU kernels' handling of subnormal floats (denormals.h).
#include "launcher/runtime/cpu/denormals.h"

#include <cstdlib>
#include <string>

#if defined(__SSE__) || defined(__x86_64__)
#include <xmmintrin.h>
#endif

#include "graph/error.h"

namespace tensoropt::runtime::cpu {
namespace {

bool choose_flush() {
  const char* env = std::getenv("TENSOROPT_DENORMALS");
  const std::string want = env ? env : "";
  if (want.empty() || want == "flush") return true;
  if (want == "keep") return false;
  throw InputError("TENSOROPT_DENORMALS=" + want + ": expected flush or keep (or unset: flush)");
}

bool flush() {
  static const bool yes = choose_flush();
  return yes;
}

}  // namespace

const char* denormal_mode() { return flush() ? "flush" : "keep"; }

void flush_denormals_here() {
  thread_local bool done = false;
  if (done) return;
  const bool on = flush();  // may throw on a bad TENSOROPT_DENORMALS: the thread stays unset
#if defined(__SSE__) || defined(__x86_64__)
  constexpr unsigned kFtzDaz = 0x8040;  // FTZ (bit 15) and DAZ (bit 6)
  _mm_setcsr(on ? (_mm_getcsr() | kFtzDaz) : (_mm_getcsr() & ~kFtzDaz));
#else
  (void)on;
#endif
  done = true;
}

}  // namespace tensoropt::runtime::cpu
