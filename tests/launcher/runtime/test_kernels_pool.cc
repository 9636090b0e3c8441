// Kernel cases of launcher/runtime/cpu/pool.cc (the harness: kernel_check.h). Expected values come
// from torch (float64) on the inputs pattern() makes. Max pools check gradients on inputs whose
// values are distinct and far apart (distinct()), so that the finite differences never move an
// argmax.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tests/launcher/runtime/kernel_check.h"

namespace tensoropt::test {
namespace {

using Ints = std::vector<int64_t>;

// v_i = (((i·k + off) mod m) - m/2)·s, as in the Python that made the expected values.
std::vector<double> pattern(int64_t n, int64_t k, int64_t m, double s, int64_t off) {
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(static_cast<double>((i * k + off) % m - m / 2) * s);
  return v;
}

// n distinct values 0.1 apart, shuffled (7919 is prime, so i·7919 mod n is a permutation for
// n < 7919). REQUIRES n < 100: the harness's step, 1% of the largest magnitude (0.05·n), must stay
// under half the spacing.
std::vector<double> distinct(int64_t n) {
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(static_cast<double>(i * 7919 % n) * 0.1 - 0.05 * static_cast<double>(n));
  return v;
}

struct Attrs {
  Ints kernel, strides = {}, pads = {}, dilations = {};
  int64_t ceil_mode = 0;
  std::string auto_pad = {};
};

ModelBuilder pool_model(const std::string& op, const Ints& x, const Attrs& a, bool indices = false) {
  ModelBuilder m;
  m.input("x", x);
  m.node(op, {"x"}, indices ? std::vector<std::string>{"y", "idx"} : std::vector<std::string>{"y"});
  m.attr("kernel_shape", a.kernel);
  if (!a.strides.empty()) m.attr("strides", a.strides);
  if (!a.pads.empty()) m.attr("pads", a.pads);
  if (!a.dilations.empty()) m.attr("dilations", a.dilations);
  if (a.ceil_mode) m.attr("ceil_mode", a.ceil_mode);
  if (!a.auto_pad.empty()) m.attr_s("auto_pad", a.auto_pad);
  m.output("y");
  if (indices) m.output("idx");
  return m;
}

int64_t elems(const Ints& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

void maxpool_cases(std::vector<KernelCase>& cases) {
  cases.push_back({.op = "MaxPool", .name = "MaxPool 3x3 stride 2 pad 1 with Indices (torch)",
                   .model = pool_model("MaxPool", {1, 1, 4, 4}, {.kernel = {3, 3}, .strides = {2, 2}, .pads = {1, 1, 1, 1}}, true),
                   .values = {{"x", pattern(16, 5, 17, 0.25, 2)}},
                   .expect = {{"y", {0.5, 1.75, 2, 2}}, {"idx", {5, 6, 13, 13}}}});
  cases.push_back({.op = "MaxPool", .name = "MaxPool ceil_mode, ties, Indices over planes (torch)",
                   .model = pool_model("MaxPool", {1, 2, 5, 5}, {.kernel = {2, 2}, .strides = {2, 2}, .ceil_mode = 1}, true),
                   .values = {{"x", pattern(50, 5, 17, 0.25, 2)}},
                   .expect = {{"y", {1.75, 1, 1.25, 1.5, 2, 1, -0.75, 1.75, -1.25, 2, 1.5, 0.75, 1.75, 1.25, 0.5, 0.75, 2, 0.25}},
                              {"idx", {6, 2, 9, 16, 13, 19, 21, 23, 24, 30, 33, 29, 40, 43, 39, 46, 47, 49}}},
                   .gradient = false});
  {
    ModelBuilder m = pool_model("MaxPool", {1, 1, 3, 4}, {.kernel = {2, 2}}, true);
    m.attr("storage_order", 1);
    cases.push_back({.op = "MaxPool", .name = "MaxPool storage_order 1 (column-major Indices)", .model = m,
                     .values = {{"x", pattern(12, 5, 17, 0.25, 2)}},
                     .expect = {{"y", {0.5, 1.75, 1.75, 1.25, 1.75, 1.75}}, {"idx", {4, 7, 7, 5, 7, 7}}}});
  }
  struct Grad {
    std::string name;
    Ints x;
    Attrs a;
  };
  for (const Grad& g : {
           Grad{"MaxPool 3x3 stride 2 pad 1", {2, 2, 4, 5}, {.kernel = {3, 3}, .strides = {2, 2}, .pads = {1, 1, 1, 1}}},
           Grad{"MaxPool ceil_mode dilation 2", {1, 2, 6, 7}, {.kernel = {2, 2}, .strides = {2, 2}, .dilations = {2, 2}, .ceil_mode = 1}},
           Grad{"MaxPool asymmetric pads", {1, 3, 5, 5}, {.kernel = {2, 3}, .pads = {0, 1, 1, 0}}},
           Grad{"MaxPool SAME_UPPER", {1, 2, 5, 6}, {.kernel = {3, 2}, .strides = {2, 2}, .auto_pad = "SAME_UPPER"}},
           Grad{"MaxPool 1-D", {2, 3, 9}, {.kernel = {3}, .strides = {2}, .pads = {1, 1}}},
           Grad{"MaxPool 3-D", {1, 1, 4, 4, 4}, {.kernel = {2, 2, 2}, .strides = {2, 1, 2}, .pads = {0, 1, 0, 1, 0, 1}}},
       }) {
    cases.push_back({.op = "MaxPool", .name = g.name, .model = pool_model("MaxPool", g.x, g.a), .values = {{"x", distinct(elems(g.x))}}});
  }
}

void avgpool_cases(std::vector<KernelCase>& cases) {
  const Attrs resnet_like{.kernel = {3, 3}, .strides = {2, 2}, .pads = {1, 1, 1, 1}, .ceil_mode = 1};
  cases.push_back({.op = "AveragePool", .name = "AveragePool ceil_mode, padding excluded (torch)",
                   .model = pool_model("AveragePool", {1, 1, 5, 5}, resnet_like), .values = {{"x", pattern(25, 5, 17, 0.25, 2)}},
                   .expect = {{"y", {0.125, -0.125, -0.375, 0.2916666667, 0.2777777778, 0.5, -0.25, 0.2083333333, 0.3125}}}});
  {
    ModelBuilder m = pool_model("AveragePool", {1, 1, 5, 5}, resnet_like);
    m.attr("count_include_pad", 1);
    cases.push_back({.op = "AveragePool", .name = "AveragePool ceil_mode, count_include_pad (torch)", .model = m,
                     .values = {{"x", pattern(25, 5, 17, 0.25, 2)}},
                     .expect = {{"y", {0.05555555556, -0.08333333333, -0.1666666667, 0.1944444444, 0.2777777778, 0.3333333333,
                                       -0.1111111111, 0.1388888889, 0.1388888889}}}});
    cases.push_back({.op = "AveragePool", .name = "AveragePool count_include_pad, random", .model = m});
  }
  cases.push_back({.op = "AveragePool", .name = "AveragePool ceil_mode asymmetric pads dilation",
                   .model = pool_model("AveragePool", {2, 2, 6, 7},
                                       {.kernel = {3, 2}, .strides = {2, 3}, .pads = {1, 0, 0, 1}, .dilations = {1, 2}, .ceil_mode = 1})});
  cases.push_back({.op = "AveragePool", .name = "AveragePool SAME_LOWER 1-D",
                   .model = pool_model("AveragePool", {2, 3, 8}, {.kernel = {3}, .strides = {2}, .auto_pad = "SAME_LOWER"})});
  cases.push_back({.op = "AveragePool", .name = "AveragePool 3-D",
                   .model = pool_model("AveragePool", {1, 2, 4, 3, 4}, {.kernel = {2, 2, 3}, .pads = {1, 0, 1, 0, 1, 1}})});
}

void global_cases(std::vector<KernelCase>& cases) {
  const std::vector<double> x = pattern(24, 7, 11, 0.25, 0);
  for (const std::string op : {"GlobalAveragePool", "GlobalMaxPool"}) {
    ModelBuilder m;
    m.input("x", {2, 3, 2, 2}).node(op, {"x"}, {"y"}).output("y");
    cases.push_back({.op = op, .name = op + " (numpy)", .model = m, .values = {{"x", x}},
                     .expect = {{"y", op == "GlobalMaxPool" ? std::vector<double>{1.25, 1, 0.75, 1.25, 1, 0.75}
                                                            : std::vector<double>{0, 0.125, -0.4375, 0.375, -0.1875, -0.0625}}},
                     .gradient = op == "GlobalAveragePool"});
    ModelBuilder g;
    g.input("x", {2, 3, 3, 2, 2}).node(op, {"x"}, {"y"}).output("y");
    cases.push_back({.op = op, .name = op + " 3-D", .model = g, .values = {{"x", distinct(72)}}});
  }
}

}  // namespace

std::vector<KernelCase> pool_cases() {
  std::vector<KernelCase> cases;
  maxpool_cases(cases);
  avgpool_cases(cases);
  global_cases(cases);
  return cases;
}

TEST_CASE("kernels: pool forward and backward") {
  for (const KernelCase& c : pool_cases()) check_kernel(c);
}

}  // namespace tensoropt::test
