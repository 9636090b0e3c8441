// Kernel cases of launcher/runtime/cpu/norm.cc (the harness: kernel_check.h).
#include <doctest/doctest.h>

#include "tests/runtime/kernel_check.h"

namespace tensoropt::test {

std::vector<KernelCase> norm_cases() {
  std::vector<KernelCase> cases;
  return cases;
}

TEST_CASE("kernels: norm forward and backward") {
  for (const KernelCase& c : norm_cases()) check_kernel(c);
}

}  // namespace tensoropt::test
