// Kernel cases for the backend comparisons (backend_compare.h) beyond the norm family's CPU
// cases (test_kernels_norm.cc): shapes past the CUDA kernels' chunk sizes (device/norm_*.h), so
// that the partial sums of reductions, batch statistics and LayerNorm's parameter columns
// combine several chunks, and rows longer than a warp's 32 lanes. They are compared between
// backends only (no finite differences: too large for that on the CPU).
#include <string>

#include "tests/launcher/runtime/kernel_check.h"

namespace tensoropt::test {
namespace {

using V = std::vector<int64_t>;

ModelBuilder unary(const std::string& op, const V& shape, const V& axes, int64_t keepdims) {
  ModelBuilder b;
  b.input("x", shape).node(op, {"x"}, {"y"});
  if (!axes.empty()) b.attr("axes", axes);
  return b.attr("keepdims", keepdims).output("y");
}

}  // namespace

std::vector<KernelCase> norm_large_cases() {
  std::vector<KernelCase> cases;
  auto add = [&](const std::string& op, const std::string& name, ModelBuilder b, std::pair<double, double> range = {-1, 1}) {
    cases.push_back({.op = op, .name = op + " " + name, .model = std::move(b), .range = range});
  };
  add("ReduceSum", "[2,9000] axes [-1]: three chunks along memory", unary("ReduceSum", {2, 9000}, {-1}, 0));
  add("ReduceLogSumExp", "[2,9000] axes [-1]: chunk maxima combined", unary("ReduceLogSumExp", {2, 9000}, {-1}, 1), {-4, 4});
  add("ReduceMax", "[3,5000] axes [1]: two chunks", unary("ReduceMax", {3, 5000}, {1}, 0));
  add("ReduceProd", "[2,5000] axes [1]: two chunks", unary("ReduceProd", {2, 5000}, {1}, 0), {0.995, 1.005});
  add("ReduceMean", "[600,3] axes [0]: strided groups, three chunks", unary("ReduceMean", {600, 3}, {0}, 1));
  add("ReduceMin", "[300,4,5] axes [0,2]: two reduced runs", unary("ReduceMin", {300, 4, 5}, {0, 2}, 0));
  add("ReduceL2", "[40,3,70] axes [0,2]: two reduced runs", unary("ReduceL2", {40, 3, 70}, {0, 2}, 1));
  {
    ModelBuilder b;
    b.input("x", {4, 3000}).node("Softmax", {"x"}, {"y"}).attr("axis", -1).output("y");
    add("Softmax", "[4,3000] last axis", b, {-5, 5});
  }
  {
    ModelBuilder b;
    b.input("x", {3, 100, 2}).node("LogSoftmax", {"x"}, {"y"}).attr("axis", 1).output("y");
    add("LogSoftmax", "[3,100,2] axis 1: strided rows", b, {-5, 5});
  }
  {
    ModelBuilder b;
    b.input("x", {130, 40}).input("s", {40}).input("b", {40}).node("LayerNormalization", {"x", "s", "b"}, {"y"}).output("y");
    add("LayerNormalization", "[130,40]: parameter columns over three chunks of rows", b);
  }
  {
    ModelBuilder b(15);
    b.input("x", {3, 2, 50, 50}).input("s", {2}).input("b", {2}).input("rm", {2}).input("rv", {2});
    b.node("BatchNormalization", {"x", "s", "b", "rm", "rv"}, {"y", "rm_out", "rv_out"}).attr("training_mode", 1);
    add("BatchNormalization", "training [3,2,50,50]: channel statistics over two chunks", b.output("y").output("rm_out").output("rv_out"),
        {0.5, 1.5});
  }
  {
    ModelBuilder b(18);
    b.input("x", {2, 4, 30, 30}).input("s", {4}).input("b", {4}).node("GroupNormalization", {"x", "s", "b"}, {"y"}).attr("num_groups", 2);
    add("GroupNormalization", "[2,4,30,30] 2 groups: rows of 1800", b.output("y"));
  }
  {
    ModelBuilder b;
    b.input("x", {3, 100}).ints("axis", {1}, {}).node("CumSum", {"x", "axis"}, {"y"}).attr("reverse", 1).attr("exclusive", 1).output("y");
    add("CumSum", "[3,100] reverse exclusive: rows of several warps", b);
  }
  {
    ModelBuilder b;
    b.input("x", {3, 200}).ints("k", {5}).node("TopK", {"x", "k"}, {"values", "indices"}).output("values").output("indices");
    add("TopK", "[3,200] k=5", b);
  }
  {
    ModelBuilder b;
    b.input("x", {5, 300}).node("ArgMin", {"x"}, {"y"}).attr("axis", 1).attr("keepdims", 0).output("y");
    cases.push_back({.op = "ArgMin", .name = "ArgMin [5,300] axis 1", .model = b, .gradient = false});
  }
  return cases;
}

}  // namespace tensoropt::test
