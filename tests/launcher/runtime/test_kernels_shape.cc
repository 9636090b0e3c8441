// Kernel cases of launcher/runtime/cpu/shape.cc (the harness: kernel_check.h). Import folds these
// ops up to kMaxFoldElements (65,536) output elements, so every case makes a larger output for
// the node to reach the runtime. Neither op takes a gradient.
#include <doctest/doctest.h>

#include "tests/launcher/runtime/kernel_check.h"

namespace tensoropt::test {

std::vector<KernelCase> shape_cases() {
  std::vector<KernelCase> cases;
  {
    // The default value, float32 0 (the builder writes no tensor attributes).
    ModelBuilder b;
    b.ints("shape", {300, 301}).node("ConstantOfShape", {"shape"}, {"y"}).output("y");
    cases.push_back({.op = "ConstantOfShape", .name = "ConstantOfShape [300,301] of 0", .model = b,
                     .expect = {{"y", std::vector<double>(300 * 301, 0.0)}}, .gradient = false});
  }
  {
    ModelBuilder b;
    b.ints("start", {5}, {}).ints("limit", {140004}, {}).ints("delta", {2}, {});
    b.node("Range", {"start", "limit", "delta"}, {"y"}).output("y");
    std::vector<double> want;
    for (int64_t v = 5; v < 140004; v += 2) want.push_back(static_cast<double>(v));
    cases.push_back({.op = "Range", .name = "Range int64 5..140004 step 2", .model = b, .expect = {{"y", want}},
                     .gradient = false});
  }
  {
    ModelBuilder b;
    b.floats("start", {}, 40000.0f).floats("limit", {}, 5000.25f).floats("delta", {}, -0.5f);
    b.node("Range", {"start", "limit", "delta"}, {"y"}).output("y");
    std::vector<double> want;
    for (int k = 0; k < 70000; ++k) want.push_back(40000.0 - 0.5 * k);
    cases.push_back({.op = "Range", .name = "Range float32 descending", .model = b, .expect = {{"y", want}},
                     .gradient = false});
  }
  return cases;
}

TEST_CASE("kernels: shape forward") {
  for (const KernelCase& c : shape_cases()) check_kernel(c);
}

}  // namespace tensoropt::test
