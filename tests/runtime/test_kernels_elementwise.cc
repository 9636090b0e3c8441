// Kernel cases of launcher/runtime/cpu/elementwise.cc (the harness: kernel_check.h).
#include <doctest/doctest.h>

#include "tests/runtime/kernel_check.h"

namespace tensoropt::test {

std::vector<KernelCase> elementwise_cases() {
  std::vector<KernelCase> cases;
  {
    ModelBuilder b;
    b.input("a", {2, 3}).input("b", {3}).node("Add", {"a", "b"}, {"y"}).output("y");
    cases.push_back({.op = "Add", .name = "Add broadcast [2,3] + [3]", .model = b,
                     .values = {{"a", {1, 2, 3, 4, 5, 6}}, {"b", {10, 20, 30}}},
                     .expect = {{"y", {11, 22, 33, 14, 25, 36}}}});
    cases.push_back({.op = "Add", .name = "Add broadcast, random", .model = b});
  }
  {
    ModelBuilder b;
    b.input("x", {4, 5}).node("Relu", {"x"}, {"y"}).output("y");
    cases.push_back({.op = "Relu", .name = "Relu [4,5]", .model = b});
  }
  return cases;
}

TEST_CASE("kernels: elementwise forward and backward") {
  for (const KernelCase& c : elementwise_cases()) check_kernel(c);
}

}  // namespace tensoropt::test
