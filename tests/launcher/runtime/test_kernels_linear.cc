// Kernel cases of launcher/runtime/cpu/linear.cc, linear_conv.cc and linear_einsum.cc (the
// harness: kernel_check.h). Expected values come from numpy and torch (float64) on the inputs
// pattern() makes; the other cases check gradients on random inputs.
#include <doctest/doctest.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "graph/import.h"
#include "launcher/runtime/cpu/backend.h"
#include "launcher/runtime/executor.h"
#include "tests/launcher/runtime/kernel_check.h"

namespace tensoropt::test {
namespace {

using Ints = std::vector<int64_t>;

// Exact binary fractions: v_i = (((i·k + off) mod m) - m/2)·s (the same in the Python that made
// the expected values).
std::vector<double> pattern(int64_t n, int64_t k = 7, int64_t m = 11, double s = 0.25, int64_t off = 0) {
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(static_cast<double>((i * k + off) % m - m / 2) * s);
  return v;
}
std::vector<double> pattern_b(int64_t n) { return pattern(n, 5, 13, 0.125, 3); }
std::vector<double> pattern_c(int64_t n) { return pattern(n, 3, 7, 0.5, 1); }

KernelCase two_input(const std::string& op, const std::string& name, const Ints& a, const Ints& b) {
  ModelBuilder m;
  m.input("a", a).input("b", b).node(op, {"a", "b"}, {"y"}).output("y");
  return {.op = op, .name = name, .model = m};
}

void matmul_cases(std::vector<KernelCase>& cases) {
  {
    ModelBuilder b;
    b.input("a", {2, 3}).input("b", {3, 2}).node("MatMul", {"a", "b"}, {"y"}).output("y");
    cases.push_back({.op = "MatMul", .name = "MatMul [2,3]x[3,2] by hand", .model = b,
                     .values = {{"a", {1, 2, 3, 4, 5, 6}}, {"b", {1, 0, 0, 1, 1, 1}}},
                     .expect = {{"y", {4, 5, 10, 11}}}});
  }
  {
    KernelCase c = two_input("MatMul", "MatMul broadcast [2,1,2,3]x[3,3,2] (numpy)", {2, 1, 2, 3}, {3, 3, 2});
    c.values = {{"a", pattern(12)}, {"b", pattern_b(18)}};
    c.expect = {{"y", {-0.15625, -0.125, -1.03125, 0.65625, 0.03125, -0.75, 0.5625, 1.03125, -0.59375, -0.15625, 0.9375, -1.03125,
                       -0.875, 0.75, -0.71875, 0.84375, 0.75, 0.75, 0.9375, 0.46875, 0.75, -0.875, 0.5625, -0.71875}}};
    cases.push_back(c);
    cases.push_back(two_input("MatMul", "MatMul broadcast both ways, random", {2, 1, 2, 3}, {3, 3, 2}));
  }
  {
    KernelCase c = two_input("MatMul", "MatMul 1-D A [3]x[2,3,2] (numpy)", {3}, {2, 3, 2});
    c.values = {{"a", pattern(3)}, {"b", pattern_b(12)}};
    c.expect = {{"y", {-0.15625, -0.125, 0.03125, -0.75}}};
    cases.push_back(c);
  }
  cases.push_back(two_input("MatMul", "MatMul folded batch [2,3,4]x[4,5]", {2, 3, 4}, {4, 5}));
  cases.push_back(two_input("MatMul", "MatMul unbatched A [3,4]x[2,4,5]", {3, 4}, {2, 4, 5}));
  cases.push_back(two_input("MatMul", "MatMul attention [2,3,5,4]x[2,3,4,5] (batch in parallel)", {2, 3, 5, 4}, {2, 3, 4, 5}));
  cases.push_back(two_input("MatMul", "MatMul B broadcast [1,3,4]x[2,4,5]", {1, 3, 4}, {2, 4, 5}));
  cases.push_back(two_input("MatMul", "MatMul 1-D both [4]x[4]", {4}, {4}));
  cases.push_back(two_input("MatMul", "MatMul 1-D B [2,3,4]x[4]", {2, 3, 4}, {4}));
  cases.push_back(two_input("MatMul", "MatMul 1-D A [4]x[2,4,3]", {4}, {2, 4, 3}));
  {
    ModelBuilder b;
    b.input("x", {2, 3, 4}).floats("w", {4, 6}).node("MatMul", {"x", "w"}, {"y"}).output("y");
    cases.push_back({.op = "MatMul", .name = "MatMul x·W with W a parameter", .model = b, .values = {{"w", pattern_b(24)}}});
  }
}

void gemm_cases(std::vector<KernelCase>& cases) {
  {
    ModelBuilder b;
    b.input("a", {3, 2}).input("b", {4, 3}).input("c", {4}).node("Gemm", {"a", "b", "c"}, {"y"});
    b.attr("transA", 1).attr("transB", 1).attr_f("alpha", 0.5f).attr_f("beta", 2.0f).output("y");
    cases.push_back({.op = "Gemm", .name = "Gemm transA transB alpha beta C [n] (numpy)", .model = b,
                     .values = {{"a", pattern(6)}, {"b", pattern_b(12)}, {"c", pattern_c(4)}},
                     .expect = {{"y", {-1.921875, 0.890625, -3.296875, -0.078125, -1.65625, 1.46875, -2.40625, -0.296875}}}});
    cases.push_back({.op = "Gemm", .name = "Gemm transA transB alpha beta C [n], random", .model = b});
  }
  struct Variant {
    int ta, tb;
    Ints c;
  };
  for (Variant v : {Variant{0, 0, {3, 1}}, Variant{1, 0, {}}, Variant{0, 1, {3, 4}}, Variant{1, 1, {1}}}) {
    ModelBuilder b;
    Ints a = v.ta ? Ints{5, 3} : Ints{3, 5}, bs = v.tb ? Ints{4, 5} : Ints{5, 4};
    b.input("a", a).input("b", bs).input("c", v.c).node("Gemm", {"a", "b", "c"}, {"y"});
    b.attr("transA", v.ta).attr("transB", v.tb).attr_f("alpha", 1.5f).attr_f("beta", -0.5f).output("y");
    cases.push_back({.op = "Gemm", .name = "Gemm transA " + std::to_string(v.ta) + " transB " + std::to_string(v.tb) +
                                           " C rank " + std::to_string(v.c.size()), .model = b});
  }
  {
    ModelBuilder b;
    b.input("x", {2, 8}).floats("w", {3, 8}).floats("bias", {3}).node("Gemm", {"x", "w", "bias"}, {"y"}).attr("transB", 1).output("y");
    cases.push_back({.op = "Gemm", .name = "Gemm classifier head x·Wᵀ + b, parameters", .model = b,
                     .values = {{"w", pattern_b(24)}, {"bias", pattern_c(3)}}});
  }
  {
    ModelBuilder b;
    b.input("a", {3, 4}).input("b", {4, 2}).node("Gemm", {"a", "b"}, {"y"}).output("y");
    cases.push_back({.op = "Gemm", .name = "Gemm without C", .model = b});
  }
}

// A Conv or ConvTranspose node over inputs x, w (and b when `bias`) with the given attributes.
KernelCase conv_case(const std::string& op, const std::string& name, const Ints& x, const Ints& w, bool bias,
                     const std::vector<std::pair<std::string, Ints>>& attrs) {
  ModelBuilder m;
  std::vector<std::string> in{"x", "w"};
  m.input("x", x).input("w", w);
  int64_t group = 1;
  for (const auto& [k, v] : attrs) group = k == "group" ? v[0] : group;
  if (bias) {
    m.input("b", {op == "Conv" ? w[0] : w[1] * group});
    in.push_back("b");
  }
  m.node(op, in, {"y"});
  for (const auto& [k, v] : attrs) {
    if (k == "group") m.attr(k, v[0]);
    else m.attr(k, v);
  }
  m.output("y");
  return {.op = op, .name = name, .model = m};
}

// The case's node with auto_pad set to `mode`.
KernelCase with_auto_pad(KernelCase c, const std::string& mode) {
  c.model.attr_s("auto_pad", mode);
  c.name += " " + mode;
  return c;
}

void conv_cases(std::vector<KernelCase>& cases) {
  {
    KernelCase c = conv_case("Conv", "Conv 2-D stride 2 pad 1 bias (torch)", {1, 2, 5, 5}, {3, 2, 3, 3}, true,
                             {{"strides", {2, 2}}, {"pads", {1, 1, 1, 1}}});
    c.values = {{"x", pattern(50)}, {"w", pattern_b(54)}, {"b", pattern_c(3)}};
    c.expect = {{"y", {-2.59375, -2.03125, 0.90625, -0.4375, 2.15625, -1.78125, -0.1875, -2.875, -0.4375,
                       -1.1875, 0.5625, 0.1875, 2.96875, 0.59375, -0.375, 0.21875, -1.34375, 1.4375,
                       -3.28125, -1.5625, -2, -0.375, -1.625, -1.25, -1.65625, -2.09375, -2.21875}}};
    cases.push_back(c);
  }
  {
    KernelCase c = conv_case("Conv", "Conv groups 2 dilation 2 asymmetric pads (torch)", {1, 4, 6, 6}, {4, 2, 2, 2}, false,
                             {{"group", {2}}, {"dilations", {2, 2}}, {"pads", {1, 0, 0, 1}}});
    c.values = {{"x", pattern(144)}, {"w", pattern_b(32)}};
    c.expect = {{"y", {-1.46875, 0.25, 0.25, 0.59375, 0.125, 1.59375, 0, -1.59375, 0.59375, 0.34375, 0.625, 0.0625, 0.53125,
                       -0.71875, 0.9375, 0, -1.59375, 0.59375, 0.03125, -0.875, 0.0625, 0.53125, -0.71875, 0.4375, 0.75,
                       0.5, -0.4375, 0.6875, -1.28125, 0.03125, 0.1875, 0.25, -0.03125, -0.3125, 0.15625, -0.125, 0.625,
                       -1.71875, -0.96875, 0.84375, 0.25, -0.03125, -0.3125, 0.4375, -0.875, 0.625, -1.71875, -0.96875,
                       1.5, 0.84375, -0.625, 0, 0.28125, -0.46875, 0, -0.0625, 0.375, -1.9375, -0.8125, 0.75, 0.5,
                       -0.09375, 0, 0.4375, -0.875, 0.375, -1.9375, -0.8125, 1.34375, 0.9375, -0.09375, 0, 0.4375,
                       -0.15625, 0.34375, -0.25, -0.125, 0.34375, -0.21875, -0.21875, -1.21875, 0.53125, -0.125,
                       -1.46875, 1.46875, 0.34375, 1.0625, -1.3125, 0.4375, 0.75, 0.53125, -0.125, -1.46875, 2, -1,
                       1.0625, -1.3125, 0.4375, 1.15625, -0.6875}}};
    cases.push_back(c);
  }
  {
    KernelCase c = conv_case("Conv", "Conv depthwise multiplier 2 (torch)", {1, 2, 4, 4}, {4, 1, 3, 3}, false,
                             {{"group", {2}}, {"pads", {1, 1, 1, 1}}});
    c.values = {{"x", pattern(32)}, {"w", pattern_b(36)}};
    c.expect = {{"y", {-0.5, -0.125, -0.28125, 0.8125, -1.125, 0.5625, -0.4375, -0.59375, 0.25, -1.03125, 1.75, -0.625,
                       -0.3125, -0.1875, 1.15625, -0.25, 0.1875, -0.6875, 1.25, -1.53125, 1, 0.4375, -1.5, 0, 0.09375,
                       -0.09375, -0.3125, -0.28125, 0.3125, -0.03125, -0.28125, 1.375, -0.34375, 0.875, -0.59375,
                       -0.0625, 0.3125, 1.6875, -1.53125, -0.09375, -0.4375, -0.53125, -0.3125, 0.8125, 1.25, 0.96875,
                       -2, 0.3125, 0.21875, -0.71875, 0.6875, -0.5625, 0.625, -1.1875, 1.53125, 0.25, -0.375, 0.0625,
                       1.75, -1.125, -0.28125, -0.71875, 0.8125, -0.25}}};
    cases.push_back(c);
  }
  cases.push_back(conv_case("Conv", "Conv 2-D stride 2 pads dilation bias, batch 2", {2, 3, 7, 6}, {4, 3, 3, 2}, true,
                            {{"strides", {2, 1}}, {"pads", {1, 0, 2, 1}}, {"dilations", {1, 2}}}));
  cases.push_back(conv_case("Conv", "Conv groups 3", {2, 6, 5, 5}, {6, 2, 3, 3}, true, {{"group", {3}}, {"pads", {1, 1, 1, 1}}}));
  cases.push_back(conv_case("Conv", "Conv depthwise stride 2 dilation 2 bias", {2, 3, 7, 7}, {6, 1, 3, 3}, true,
                            {{"group", {3}}, {"strides", {2, 2}}, {"dilations", {2, 2}}, {"pads", {2, 1, 0, 2}}}));
  cases.push_back(conv_case("Conv", "Conv 1x1 (no im2col)", {2, 4, 3, 5}, {3, 4, 1, 1}, true, {}));
  cases.push_back(conv_case("Conv", "Conv 1x1 stride 2", {2, 4, 5, 5}, {3, 4, 1, 1}, false, {{"strides", {2, 2}}}));
  cases.push_back(with_auto_pad(conv_case("Conv", "Conv stride 2", {1, 2, 6, 5}, {2, 2, 4, 3}, false, {{"strides", {2, 2}}}), "SAME_UPPER"));
  cases.push_back(with_auto_pad(conv_case("Conv", "Conv bias", {1, 2, 5, 5}, {2, 2, 2, 4}, true, {}), "SAME_LOWER"));
  cases.push_back(with_auto_pad(conv_case("Conv", "Conv stride 2", {1, 2, 6, 6}, {2, 2, 3, 3}, false, {{"strides", {2, 2}}}), "VALID"));
  cases.push_back(conv_case("Conv", "Conv 1-D stride 2 pads", {2, 3, 9}, {4, 3, 3}, true, {{"strides", {2}}, {"pads", {1, 2}}}));
  cases.push_back(conv_case("Conv", "Conv 3-D pads dilation", {1, 2, 4, 5, 4}, {3, 2, 2, 3, 2}, true,
                            {{"pads", {1, 0, 1, 0, 1, 1}}, {"dilations", {2, 1, 1}}}));
  {
    ModelBuilder b;
    b.input("x", {2, 3, 6, 6}).floats("w", {4, 3, 3, 3}).floats("b", {4}).node("Conv", {"x", "w", "b"}, {"y"});
    b.attr("kernel_shape", Ints{3, 3}).attr("strides", Ints{2, 2}).attr("pads", Ints{1, 1, 1, 1}).output("y");
    cases.push_back({.op = "Conv", .name = "Conv with W and B parameters", .model = b,
                     .values = {{"w", pattern_b(108)}, {"b", pattern_c(4)}}});
  }
}

void conv_transpose_cases(std::vector<KernelCase>& cases) {
  const std::vector<double> convt = {
      -2, -0.46875, -0.625, -1.84375, -0.625, -0.90625, -2.1875, -1.75, -0.125, -1.75, -2.1875, -0.9375, -0.625, -1.84375,
      -0.625, -0.46875, -2, -0.46875, -0.125, -2.4375, -0.125, 0.3125, -2.875, 0.28125, -0.625, -1.84375, -0.625, -0.46875,
      -2, -0.375, -0.3125, -1.71875, -0.8125, -0.65625, -2, -0.375, 1.15625, 0.03125, 0.25, 0.96875, 0.375, 1.3125, 0.25,
      -0.125, 0.15625, 0.03125, 0.40625, 1.65625, 0.15625, 0.78125, 0.28125, 0, 1.09375, -0.625, -0.03125, 1.375, 0.21875,
      -0.1875, 1.84375, 0.125, 0.1875, 0.84375, 0.3125, 0.0625, 1.125, -0.5, 0.5, 0.96875, 0.125, 1.5, 1.125, -0.5,
      -2.4375, -0.9375, -1.15625, -2.15625, -0.90625, -1.1875, -2.03125, -0.375, -1.4375, -1.6875, -0.5, -2.5, -1.34375,
      -2.53125, -1.09375, -1, -2.5625, -1.03125, -0.59375, -1.5625, -1.71875, -0.125, -1.8125, -1.90625, -1.28125,
      -2.40625, -1.03125, -0.875, -2.5, -0.875, -0.96875, -2.28125, -1.21875, -1.0625, -2.5, -0.875};
  const std::map<std::string, std::vector<double>> values = {{"x", pattern(18)}, {"w", pattern_b(54)}, {"b", pattern_c(3)}};
  {
    KernelCase c = conv_case("ConvTranspose", "ConvTranspose stride 2 pad 1 output_padding 1 bias (torch)", {1, 2, 3, 3},
                             {2, 3, 3, 3}, true, {{"strides", {2, 2}}, {"pads", {1, 1, 1, 1}}, {"output_padding", {1, 1}}});
    c.values = values;
    c.expect = {{"y", convt}};
    cases.push_back(c);
    cases.push_back(conv_case("ConvTranspose", "ConvTranspose stride 2 pad 1 output_padding 1 bias, random", {2, 2, 3, 3},
                              {2, 3, 3, 3}, true, {{"strides", {2, 2}}, {"pads", {1, 1, 1, 1}}, {"output_padding", {1, 1}}}));
  }
  {
    // Total padding 1: NOTSET puts it at the start, as torch's padding 1, output_padding 1.
    KernelCase c = conv_case("ConvTranspose", "ConvTranspose output_shape, pads derived (torch)", {1, 2, 3, 3}, {2, 3, 3, 3}, true,
                             {{"strides", {2, 2}}, {"output_shape", {6, 6}}});
    c.values = values;
    c.expect = {{"y", convt}};
    cases.push_back(c);
  }
  cases.push_back(with_auto_pad(conv_case("ConvTranspose", "ConvTranspose output_shape", {1, 2, 3, 3}, {2, 3, 3, 3},
                                          true, {{"strides", {2, 2}}, {"output_shape", {6, 6}}}), "SAME_UPPER"));
  {
    KernelCase c = conv_case("ConvTranspose", "ConvTranspose groups 2 dilation 2 (torch)", {1, 4, 3, 3}, {4, 1, 2, 2}, false,
                             {{"group", {2}}, {"dilations", {2, 2}}});
    c.values = {{"x", pattern(36)}, {"w", pattern_b(16)}};
    c.expect = {{"y", {0.84375, -0.3125, -1.125, 0.25, 0.5, -0.21875, -0.34375, 0.96875, 0.3125, -0.8125, 0.78125, -0.78125,
                       1.9375, 0.125, -1.625, -0.875, -0.25, 0.9375, -0.40625, 1.03125, -0.71875, -0.09375, 0.9375,
                       -0.5625, 0.875, -0.46875, 0.875, 0.09375, -0.75, 0.28125, -0.5625, 0.78125, 0, -0.75, 0.28125,
                       -0.84375, 0.875, 0, -0.46875, 0.28125, -0.09375, 0.96875, 0.375, -0.5625, 0.1875, 0, -0.65625,
                       0.65625, -0.375, 0.375}}};
    cases.push_back(c);
  }
  cases.push_back(conv_case("ConvTranspose", "ConvTranspose groups 2 stride 3 asymmetric pads", {2, 4, 3, 2}, {4, 2, 3, 2}, false,
                            {{"group", {2}}, {"strides", {3, 2}}, {"pads", {1, 0, 0, 1}}}));
  cases.push_back(conv_case("ConvTranspose", "ConvTranspose 1x1 (no col2im)", {2, 3, 4, 3}, {3, 2, 1, 1}, false, {}));
  cases.push_back(conv_case("ConvTranspose", "ConvTranspose 1-D stride 2", {2, 3, 5}, {3, 2, 4}, false, {{"strides", {2}}, {"pads", {1, 1}}}));
  cases.push_back(conv_case("ConvTranspose", "ConvTranspose 3-D", {1, 2, 2, 3, 2}, {2, 2, 2, 2, 3}, false,
                            {{"strides", {2, 1, 2}}, {"pads", {0, 1, 1, 0, 0, 1}}}));
  // output_padding past the stride (PyTorch allows it below the dilation): Y's last position is
  // read by no input position.
  cases.push_back(conv_case("ConvTranspose", "ConvTranspose dilation 2 output_padding 1 stride 1 pads", {1, 2, 3, 3}, {2, 3, 2, 2},
                            true, {{"dilations", {2, 2}}, {"output_padding", {1, 1}}, {"pads", {1, 1, 1, 1}}}));
}

KernelCase einsum_case(const std::string& eq, const std::vector<Ints>& shapes) {
  ModelBuilder m;
  std::vector<std::string> in;
  for (size_t i = 0; i < shapes.size(); ++i) {
    in.push_back(std::string(1, static_cast<char>('a' + i)));
    m.input(in.back(), shapes[i]);
  }
  m.node("Einsum", in, {"y"}).attr_s("equation", eq).output("y");
  return {.op = "Einsum", .name = "Einsum " + eq, .model = m};
}

void einsum_cases(std::vector<KernelCase>& cases) {
  {
    KernelCase c = einsum_case("bij,bjk->bik", {{2, 2, 3}, {2, 3, 2}});
    c.values = {{"a", pattern(12)}, {"b", pattern_b(12)}};
    c.expect = {{"y", {-0.15625, -0.125, -1.03125, 0.65625, 0.75, 0.75, 0.9375, 0.46875}}};
    cases.push_back(c);
  }
  {
    KernelCase c = einsum_case("ii->i", {{3, 3}});
    c.values = {{"a", pattern(9)}};
    c.expect = {{"y", {-1.25, 0.25, -1}}};
    cases.push_back(c);
  }
  {
    KernelCase c = einsum_case("...ij,...jk->...ik", {{2, 1, 2, 3}, {3, 3, 2}});
    c.values = {{"a", pattern(12)}, {"b", pattern_b(18)}};
    c.expect = {{"y", {-0.15625, -0.125, -1.03125, 0.65625, 0.03125, -0.75, 0.5625, 1.03125, -0.59375, -0.15625, 0.9375, -1.03125,
                       -0.875, 0.75, -0.71875, 0.84375, 0.75, 0.75, 0.9375, 0.46875, 0.75, -0.875, 0.5625, -0.71875}}};
    cases.push_back(c);
    cases.push_back(einsum_case("...ij,...jk->...ik", {{2, 1, 2, 3}, {3, 3, 2}}));
  }
  {
    // Three operands: forward only (the catalogue keeps no operand for their backward).
    KernelCase c = einsum_case("ij,i,jk->k", {{2, 3}, {2}, {3, 2}});
    c.values = {{"a", pattern(6)}, {"b", pattern_b(2)}, {"c", pattern_c(6)}};
    c.expect = {{"y", {-0.59375, 0.390625}}};
    c.gradient = false;
    cases.push_back(c);
  }
  cases.push_back(einsum_case("bhqd,bhkd->bhqk", {{2, 3, 4, 5}, {2, 3, 6, 5}}));
  cases.push_back(einsum_case("bhqk,bhkd->bhqd", {{2, 3, 4, 6}, {2, 3, 6, 5}}));
  cases.push_back(einsum_case("ij,jk", {{3, 4}, {4, 5}}));
  cases.push_back(einsum_case("ba,bc->ac", {{4, 3}, {4, 5}}));
  cases.push_back(einsum_case("ij,kj->ik", {{3, 4}, {5, 4}}));
  cases.push_back(einsum_case("ij,ij->i", {{3, 4}, {3, 4}}));
  cases.push_back(einsum_case("i,j->ij", {{3}, {4}}));
  cases.push_back(einsum_case("iij,jk->ik", {{3, 3, 4}, {4, 2}}));
  cases.push_back(einsum_case("abc,cd->db", {{2, 3, 4}, {4, 5}}));
  cases.push_back(einsum_case("ij->", {{3, 4}}));
  cases.push_back(einsum_case("bij->bji", {{2, 3, 4}}));
  cases.push_back(einsum_case("i...->...", {{3, 2, 4}}));
}

}  // namespace

std::vector<KernelCase> linear_cases() {
  std::vector<KernelCase> cases;
  matmul_cases(cases);
  gemm_cases(cases);
  conv_cases(cases);
  conv_transpose_cases(cases);
  einsum_cases(cases);
  return cases;
}

TEST_CASE("kernels: linear forward and backward") {
  for (const KernelCase& c : linear_cases()) check_kernel(c);
}

// In training the data operand of a first layer takes no gradient: backward then gets the data
// operand alone (the weight is not kept) and must give the weight the same gradient as when both
// take one (the harness, which differentiates every input, never leaves one out).
TEST_CASE("kernels: linear weight gradient without the data gradient") {
  struct Model {
    std::string name;
    ModelBuilder b;
  };
  std::vector<Model> models(5);
  models[0].name = "MatMul";
  models[0].b.input("x", {2, 3, 4}).floats("w", {4, 5}).node("MatMul", {"x", "w"}, {"y"}).output("y");
  models[1].name = "Gemm";
  models[1].b.input("x", {3, 4}).floats("w", {5, 4}).node("Gemm", {"x", "w"}, {"y"}).attr("transB", 1).output("y");
  models[2].name = "Conv";
  models[2].b.input("x", {2, 4, 5, 5}).floats("w", {4, 2, 3, 3}).node("Conv", {"x", "w"}, {"y"}).attr("group", 2);
  models[2].b.attr("strides", Ints{2, 2}).output("y");
  models[3].name = "ConvTranspose";
  models[3].b.input("x", {2, 4, 3, 3}).floats("w", {4, 2, 3, 3}).node("ConvTranspose", {"x", "w"}, {"y"}).attr("group", 2);
  models[3].b.attr("strides", Ints{2, 2}).output("y");
  models[4].name = "Einsum";
  models[4].b.input("x", {2, 3, 4}).floats("w", {5, 4}).node("Einsum", {"x", "w"}, {"y"}).attr_s("equation", "bij,kj->bki").output("y");
  for (const Model& m : models) {
    CAPTURE(m.name);
    Graph g = import_onnx_bytes(m.b.bytes(), m.name, {});
    std::vector<std::vector<float>> grads;
    for (bool input_gradients : {false, true}) {
      runtime::cpu::CpuBackend backend(2);
      auto array = [&](const Tensor& t, int64_t k) {
        runtime::Array a(DType::F32, t.shape, backend.allocator(), runtime::MemoryKind::Inputs);
        std::vector<double> v = pattern(a.numel(), k, 13, 0.125, 1);
        for (int64_t i = 0; i < a.numel(); ++i) a.data<float>()[i] = static_cast<float>(v[static_cast<size_t>(i)]);
        return a;
      };
      const int w = g.find("w"), y = g.find("y");
      REQUIRE(g.tensors[static_cast<size_t>(w)].kind == TensorKind::Parameter);
      std::map<int, runtime::Array> state{{w, array(g.tensors[static_cast<size_t>(w)], 5)}};
      runtime::Executor ex(g, backend, state, {.input_gradients = input_gradients, .recompute = {}, .bf16 = false});
      runtime::Array dy = array(g.tensors[static_cast<size_t>(y)], 7);
      runtime::StepContext ctx{&backend.allocator(), true, 7, 1, 2};
      ex.backward_from({array(g.tensors[static_cast<size_t>(g.find("x"))], 3)}, {&dy}, ctx);
      const runtime::Array& dw = ex.gradient(w);
      grads.emplace_back(dw.data<float>(), dw.data<float>() + dw.numel());
    }
    REQUIRE(grads[0].size() == grads[1].size());
    for (size_t i = 0; i < grads[0].size(); ++i) CHECK(grads[0][i] == doctest::Approx(grads[1][i]).epsilon(1e-6));
  }
}

}  // namespace tensoropt::test
