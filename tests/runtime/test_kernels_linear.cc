// Kernel cases of launcher/runtime/cpu/linear.cc (the harness: kernel_check.h).
#include <doctest/doctest.h>

#include "tests/runtime/kernel_check.h"

namespace tensoropt::test {

std::vector<KernelCase> linear_cases() {
  std::vector<KernelCase> cases;
  return cases;
}

TEST_CASE("kernels: linear forward and backward") {
  for (const KernelCase& c : linear_cases()) check_kernel(c);
}

}  // namespace tensoropt::test
