// Kernel cases of launcher/runtime/cpu/pool.cc (the harness: kernel_check.h).
#include <doctest/doctest.h>

#include "tests/runtime/kernel_check.h"

namespace tensoropt::test {

std::vector<KernelCase> pool_cases() {
  std::vector<KernelCase> cases;
  return cases;
}

TEST_CASE("kernels: pool forward and backward") {
  for (const KernelCase& c : pool_cases()) check_kernel(c);
}

}  // namespace tensoropt::test
