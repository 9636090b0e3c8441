// Kernel cases of launcher/runtime/cpu/shape.cc (the harness: kernel_check.h).
#include <doctest/doctest.h>

#include "tests/runtime/kernel_check.h"

namespace tensoropt::test {

std::vector<KernelCase> shape_cases() {
  std::vector<KernelCase> cases;
  return cases;
}

TEST_CASE("kernels: shape forward and backward") {
  for (const KernelCase& c : shape_cases()) check_kernel(c);
}

}  // namespace tensoropt::test
