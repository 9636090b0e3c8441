// Kernel cases of launcher/runtime/cpu/layout.cc (the harness: kernel_check.h).
#include <doctest/doctest.h>

#include "tests/runtime/kernel_check.h"

namespace tensoropt::test {

std::vector<KernelCase> layout_cases() {
  std::vector<KernelCase> cases;
  return cases;
}

TEST_CASE("kernels: layout forward and backward") {
  for (const KernelCase& c : layout_cases()) check_kernel(c);
}

}  // namespace tensoropt::test
