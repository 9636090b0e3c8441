// Kernel cases of launcher/runtime/cpu/resample.cc (the harness: kernel_check.h). Resize's expected
// values come from the ONNX reference (onnx/backend/test/case/node/resize.py, interpolate_nd with
// nearest_coeffs, linear_coeffs and cubic_coeffs) on inputs 1, 2, 3, ...; DepthToSpace and
// SpaceToDepth from numpy's reshape-transpose-reshape of the ONNX spec.
#include <doctest/doctest.h>

#include <numeric>
#include <string>

#include "tests/launcher/runtime/kernel_check.h"

namespace tensoropt::test {
namespace {

std::vector<double> iota(size_t n) {
  std::vector<double> v(n);
  std::iota(v.begin(), v.end(), 1.0);
  return v;
}

// Adds a constant float32 [4] tensor `name` = (1, 1, s, t): single-element initializers that
// import folds through Concat (the builder's float initializers hold one fill value each).
ModelBuilder& scales(ModelBuilder& b, const std::string& name, float s, float t) {
  b.floats(name + "_1", {1}, 1.0f).floats(name + "_s", {1}, s).floats(name + "_t", {1}, t);
  return b.node("Concat", {name + "_1", name + "_1", name + "_s", name + "_t"}, {name}).attr("axis", int64_t{0});
}

void nearest(std::vector<KernelCase>& cases) {
  {
    ModelBuilder b;
    b.input("x", {1, 1, 2, 2});
    scales(b, "sc", 2.0f, 3.0f).node("Resize", {"x", "", "sc"}, {"y"}).attr_s("mode", "nearest").output("y");
    cases.push_back({.op = "Resize", .name = "Resize nearest, scales (1,1,2,3)", .model = b, .values = {{"x", iota(4)}},
                     .expect = {{"y", {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4}}}});
  }
  {
    ModelBuilder b;
    b.input("x", {1, 1, 2, 4});
    scales(b, "sc", 0.6f, 0.6f).node("Resize", {"x", "", "sc"}, {"y"}).attr_s("mode", "nearest").output("y");
    cases.push_back({.op = "Resize", .name = "Resize nearest, downsample by 0.6", .model = b, .values = {{"x", iota(8)}},
                     .expect = {{"y", {1, 3}}}});
  }
  {
    ModelBuilder b;
    b.input("x", {1, 1, 4, 4}).ints("sizes", {1, 1, 7, 8}).node("Resize", {"x", "", "", "sizes"}, {"y"});
    b.attr_s("mode", "nearest").attr_s("coordinate_transformation_mode", "asymmetric").attr_s("nearest_mode", "ceil").output("y");
    cases.push_back({.op = "Resize", .name = "Resize nearest ceil, asymmetric, sizes", .model = b, .values = {{"x", iota(16)}},
                     .expect = {{"y", {1, 2, 2, 3, 3, 4, 4, 4, 5, 6, 6, 7, 7, 8, 8, 8, 9, 10, 10, 11, 11, 12, 12, 12, 9, 10, 10, 11,
                                       11, 12, 12, 12, 13, 14, 14, 15, 15, 16, 16, 16, 13, 14, 14, 15, 15, 16, 16, 16, 13, 14,
                                       14, 15, 15, 16, 16, 16}}}});
  }
  {
    ModelBuilder b;
    b.input("x", {1, 1, 4, 4}).ints("sizes", {1, 1, 7, 8}).node("Resize", {"x", "", "", "sizes"}, {"y"});
    b.attr_s("mode", "nearest").attr_s("coordinate_transformation_mode", "align_corners").attr_s("nearest_mode", "round_prefer_ceil");
    b.output("y");
    cases.push_back({.op = "Resize", .name = "Resize nearest round_prefer_ceil, align_corners", .model = b,
                     .values = {{"x", iota(16)}},
                     .expect = {{"y", {1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11,
                                       12, 12, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15, 16, 16, 13, 13, 14, 14, 15,
                                       15, 16, 16}}}});
  }
  {
    ModelBuilder b;
    b.input("x", {1, 1, 4, 4}).ints("sizes", {1, 1, 3, 2}).node("Resize", {"x", "", "", "sizes"}, {"y"});
    b.attr_s("mode", "nearest").attr_s("nearest_mode", "floor").output("y");
    cases.push_back({.op = "Resize", .name = "Resize nearest floor, half_pixel, downsample", .model = b,
                     .values = {{"x", iota(16)}}, .expect = {{"y", {1, 3, 5, 7, 9, 11}}}});
  }
  {
    // Several outputs read one input (upsampling H, W) and batch-channel rows split over threads.
    ModelBuilder b;
    b.input("x", {2, 3, 3, 4}).ints("sizes", {2, 3, 7, 5}).node("Resize", {"x", "", "", "sizes"}, {"y"});
    b.attr_s("mode", "nearest").attr_s("coordinate_transformation_mode", "tf_half_pixel_for_nn").output("y");
    cases.push_back({.op = "Resize", .name = "Resize nearest tf_half_pixel_for_nn, gradient", .model = b});
  }
  {
    ModelBuilder b(9);
    b.input("x", {1, 1, 2, 2});
    scales(b, "sc", 2.0f, 3.0f).node("Upsample", {"x", "sc"}, {"y"}).attr_s("mode", "nearest").output("y");
    cases.push_back({.op = "Upsample", .name = "Upsample nearest (opset 9)", .model = b, .values = {{"x", iota(4)}},
                     .expect = {{"y", {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4}}}});
  }
}

void interpolated(std::vector<KernelCase>& cases) {
  {
    ModelBuilder b;
    b.input("x", {1, 1, 2, 2});
    scales(b, "sc", 2.0f, 2.0f).node("Resize", {"x", "", "sc"}, {"y"}).attr_s("mode", "linear").output("y");
    cases.push_back({.op = "Resize", .name = "Resize linear, half_pixel, scales 2", .model = b, .values = {{"x", iota(4)}},
                     .expect = {{"y", {1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3, 3.25, 3.75, 4}}}});
  }
  {
    ModelBuilder b;
    b.input("x", {1, 1, 4, 4}).ints("sizes", {1, 1, 3, 1}).node("Resize", {"x", "", "", "sizes"}, {"y"});
    b.attr_s("mode", "linear").attr_s("coordinate_transformation_mode", "pytorch_half_pixel").output("y");
    cases.push_back({.op = "Resize", .name = "Resize linear, pytorch_half_pixel, sizes (1,1,3,1)", .model = b,
                     .values = {{"x", iota(16)}}, .expect = {{"y", {1.66666667, 7, 12.3333333}}}});
  }
  {
    ModelBuilder b;
    b.input("x", {1, 1, 2, 2});
    scales(b, "sc", 2.0f, 2.0f).node("Resize", {"x", "", "sc"}, {"y"}).attr_s("mode", "linear");
    b.attr_s("coordinate_transformation_mode", "align_corners").output("y");
    cases.push_back({.op = "Resize", .name = "Resize linear, align_corners", .model = b, .values = {{"x", iota(4)}},
                     .expect = {{"y", {1, 1.33333333, 1.66666667, 2, 1.66666667, 2, 2.33333333, 2.66666667, 2.33333333,
                                       2.66666667, 3, 3.33333333, 3, 3.33333333, 3.66666667, 4}}}});
  }
  {
    ModelBuilder b;
    b.input("x", {1, 1, 4, 4});
    scales(b, "sc", 0.8f, 0.8f).node("Resize", {"x", "", "sc"}, {"y"}).attr_s("mode", "cubic");
    b.attr_f("cubic_coeff_a", -0.5f).attr("exclude_outside", int64_t{1}).output("y");
    cases.push_back({.op = "Resize", .name = "Resize cubic a -0.5, exclude_outside, scales 0.8", .model = b,
                     .values = {{"x", iota(16)}},
                     .expect = {{"y", {1.36812672, 2.66950134, 4.01333663, 6.57362523, 7.87499986, 9.21883515, 11.9489664,
                                       13.250341, 14.5941763}}}});
  }
  {
    ModelBuilder b;
    b.input("x", {1, 1, 4, 4});
    scales(b, "sc", 2.0f, 2.0f).node("Resize", {"x", "", "sc"}, {"y"}).attr_s("mode", "cubic").output("y");
    cases.push_back({.op = "Resize", .name = "Resize cubic, scales 2", .model = b, .values = {{"x", iota(16)}},
                     .expect = {{"y", {0.47265625, 0.76953125, 1.24609375, 1.875, 2.28125, 2.91015625, 3.38671875, 3.68359375,
                                       1.66015625, 1.95703125, 2.43359375, 3.0625, 3.46875, 4.09765625, 4.57421875, 4.87109375,
                                       3.56640625, 3.86328125, 4.33984375, 4.96875, 5.375, 6.00390625, 6.48046875, 6.77734375,
                                       6.08203125, 6.37890625, 6.85546875, 7.484375, 7.890625, 8.51953125, 8.99609375, 9.29296875,
                                       7.70703125, 8.00390625, 8.48046875, 9.109375, 9.515625, 10.1445312, 10.6210938, 10.9179688,
                                       10.2226562, 10.5195312, 10.9960938, 11.625, 12.03125, 12.6601562, 13.1367188, 13.4335938,
                                       12.1289062, 12.4257812, 12.9023438, 13.53125, 13.9375, 14.5664062, 15.0429688, 15.3398438,
                                       13.3164062, 13.6132812, 14.0898438, 14.71875, 15.125, 15.7539062, 16.2304688, 16.5273438}}}});
  }
  {
    // Three axes resized, one of them the outermost: passes over [pre, in, post] of every kind.
    ModelBuilder b;
    b.input("x", {2, 3, 4, 5}).ints("sizes", {3, 3, 7, 2}).node("Resize", {"x", "", "", "sizes"}, {"y"});
    b.attr_s("mode", "linear").output("y");
    cases.push_back({.op = "Resize", .name = "Resize linear on three axes, gradient", .model = b});
  }
  {
    ModelBuilder b;
    b.input("x", {1, 2, 5, 6}).ints("sizes", {1, 2, 8, 3}).node("Resize", {"x", "", "", "sizes"}, {"y"});
    b.attr_s("mode", "cubic").attr_s("coordinate_transformation_mode", "asymmetric").output("y");
    cases.push_back({.op = "Resize", .name = "Resize cubic asymmetric, gradient", .model = b});
  }
  {
    // The outermost axis resized: the gradient pass splits the long inner rows over the threads.
    ModelBuilder b;
    b.input("x", {2, 300}).ints("sizes", {5, 300}).node("Resize", {"x", "", "", "sizes"}, {"y"});
    b.attr_s("mode", "linear").attr_s("coordinate_transformation_mode", "align_corners").output("y");
    cases.push_back({.op = "Resize", .name = "Resize linear of the outer axis, gradient", .model = b});
  }
  {
    ModelBuilder b(9);
    b.input("x", {1, 1, 2, 2});
    scales(b, "sc", 2.0f, 2.0f).node("Upsample", {"x", "sc"}, {"y"}).attr_s("mode", "linear").output("y");
    cases.push_back({.op = "Upsample", .name = "Upsample linear (asymmetric, opset 9)", .model = b, .values = {{"x", iota(4)}},
                     .expect = {{"y", {1, 1.5, 2, 2, 2, 2.5, 3, 3, 3, 3.5, 4, 4, 3, 3.5, 4, 4}}}});
  }
}

void depth_space(std::vector<KernelCase>& cases) {
  {
    ModelBuilder b;
    b.input("x", {1, 8, 2, 3}).node("DepthToSpace", {"x"}, {"y"}).attr("blocksize", int64_t{2}).output("y");
    cases.push_back({.op = "DepthToSpace", .name = "DepthToSpace DCR", .model = b, .values = {{"x", iota(48)}},
                     .expect = {{"y", {1, 13, 2, 14, 3, 15, 25, 37, 26, 38, 27, 39, 4, 16, 5, 17, 6, 18, 28, 40, 29, 41, 30, 42,
                                       7, 19, 8, 20, 9, 21, 31, 43, 32, 44, 33, 45, 10, 22, 11, 23, 12, 24, 34, 46, 35, 47, 36, 48}}}});
  }
  {
    ModelBuilder b;
    b.input("x", {1, 8, 2, 3}).node("DepthToSpace", {"x"}, {"y"}).attr("blocksize", int64_t{2}).attr_s("mode", "CRD").output("y");
    cases.push_back({.op = "DepthToSpace", .name = "DepthToSpace CRD", .model = b, .values = {{"x", iota(48)}},
                     .expect = {{"y", {1, 7, 2, 8, 3, 9, 13, 19, 14, 20, 15, 21, 4, 10, 5, 11, 6, 12, 16, 22, 17, 23, 18, 24,
                                       25, 31, 26, 32, 27, 33, 37, 43, 38, 44, 39, 45, 28, 34, 29, 35, 30, 36, 40, 46, 41, 47, 42, 48}}}});
  }
  {
    ModelBuilder b;
    b.input("x", {1, 2, 4, 6}).node("SpaceToDepth", {"x"}, {"y"}).attr("blocksize", int64_t{2}).output("y");
    cases.push_back({.op = "SpaceToDepth", .name = "SpaceToDepth", .model = b, .values = {{"x", iota(48)}},
                     .expect = {{"y", {1, 3, 5, 13, 15, 17, 25, 27, 29, 37, 39, 41, 2, 4, 6, 14, 16, 18, 26, 28, 30, 38, 40, 42,
                                       7, 9, 11, 19, 21, 23, 31, 33, 35, 43, 45, 47, 8, 10, 12, 20, 22, 24, 32, 34, 36, 44, 46, 48}}}});
  }
  {
    ModelBuilder b;
    b.input("x", {2, 3, 6, 9}).node("SpaceToDepth", {"x"}, {"y"}).attr("blocksize", int64_t{3}).output("y");
    cases.push_back({.op = "SpaceToDepth", .name = "SpaceToDepth blocksize 3, gradient", .model = b});
  }
}

}  // namespace

std::vector<KernelCase> resample_cases() {
  std::vector<KernelCase> cases;
  nearest(cases);
  interpolated(cases);
  depth_space(cases);
  return cases;
}

TEST_CASE("kernels: resample forward and backward") {
  for (const KernelCase& c : resample_cases()) check_kernel(c);
}

}  // namespace tensoropt::test
