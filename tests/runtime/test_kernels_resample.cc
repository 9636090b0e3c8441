// Kernel cases of launcher/runtime/cpu/resample.cc (the harness: kernel_check.h).
#include <doctest/doctest.h>

#include "tests/runtime/kernel_check.h"

namespace tensoropt::test {

std::vector<KernelCase> resample_cases() {
  std::vector<KernelCase> cases;
  return cases;
}

TEST_CASE("kernels: resample forward and backward") {
  for (const KernelCase& c : resample_cases()) check_kernel(c);
}

}  // namespace tensoropt::test
