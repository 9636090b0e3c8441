// Kernel cases of launcher/runtime/cpu/elementwise*.cc (the harness: kernel_check.h). Expected
// values come from PyTorch (float32) or numpy; Dropout's from a Python copy of its hash. Each
// unary op is checked at six fixed points (forward and gradient) and on a random [3,4,5] input;
// binary ops broadcast both ways; a few cases are large enough to run on two threads.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "graph/error.h"
#include "graph/import.h"
#include "launcher/runtime/cpu/backend.h"
#include "launcher/runtime/executor.h"
#include "tests/launcher/runtime/kernel_check.h"

namespace tensoropt::test {
namespace {

using Attrs = std::function<void(ModelBuilder&)>;
using Values = std::vector<double>;

constexpr int kInt64 = 7, kInt32 = 6, kBool = 9, kFloat16 = 10, kFloat64 = 11;

// The fixed points: X for most ops, P positive, U inside (-1, 1), H across HardSwish's knees.
const Values kX = {-1.7, -0.6, 0.2, 0.45, 1.1, 2.3};
const Values kP = {0.3, 0.7, 1.2, 1.9, 2.5, 4.0};
const Values kU = {-0.9, -0.45, -0.1, 0.2, 0.55, 0.85};
const Values kH = {-4.5, -2.0, -0.5, 0.7, 2.2, 3.6};

ModelBuilder unary_model(const std::string& op, const Shape& shape, const Attrs& attrs) {
  ModelBuilder b;
  b.input("x", shape).node(op, {"x"}, {"y"});
  if (attrs) attrs(b);
  b.output("y");
  return b;
}

// op(x) at six points of [2,3] against `want`, with its gradient there; then on a random
// [3,4,5] input in `range` (gradient only), a range that keeps clear of jumps (ThresholdedRelu,
// Shrink) and of most kinks (HardSigmoid's).
void add_unary(std::vector<KernelCase>& cases, const std::string& op, const Values& x, const Values& want,
               std::pair<double, double> range = {-1.0, 1.0}, const Attrs& attrs = nullptr, const std::string& tag = "") {
  std::string name = op + tag;
  cases.push_back({.op = op, .name = name + " at fixed points", .model = unary_model(op, {2, 3}, attrs),
                   .values = {{"x", x}}, .expect = {{"y", want}}});
  cases.push_back({.op = op, .name = name + " random [3,4,5]", .model = unary_model(op, {3, 4, 5}, attrs), .range = range});
}

void unary_cases(std::vector<KernelCase>& cases) {
  add_unary(cases, "Relu", kX, {0, 0, 0.2, 0.45, 1.1, 2.3});
  add_unary(cases, "LeakyRelu", kX, {-0.17, -0.06, 0.2, 0.45, 1.1, 2.3}, {-1, 1}, [](ModelBuilder& b) { b.attr_f("alpha", 0.1f); });
  add_unary(cases, "Sigmoid", kX, {0.154465258, 0.354343712, 0.549833953, 0.610639274, 0.750260115, 0.908877075}, {-4, 4});
  add_unary(cases, "Tanh", kX, {-0.935409069, -0.537049592, 0.197375327, 0.421898991, 0.800499022, 0.9800964}, {-3, 3});
  add_unary(cases, "Erf", kX, {-0.983790457, -0.603856087, 0.222702593, 0.475481719, 0.880205095, 0.998856843}, {-2, 2});
  add_unary(cases, "Exp", kX, {0.182683513, 0.548811615, 1.22140276, 1.56831217, 3.00416613, 9.97418213});
  add_unary(cases, "Log", kP, {-1.20397282, -0.356674969, 0.182321593, 0.641853869, 0.91629076, 1.38629436}, {0.2, 3});
  add_unary(cases, "Sqrt", kP, {0.547722578, 0.836660028, 1.09544516, 1.37840486, 1.58113885, 2.0}, {0.2, 3});
  add_unary(cases, "Reciprocal", kP, {3.33333325, 1.42857146, 0.833333313, 0.526315808, 0.4, 0.25}, {0.5, 3});
  add_unary(cases, "Neg", kX, {1.7, 0.6, -0.2, -0.45, -1.1, -2.3});
  add_unary(cases, "Abs", kX, {1.7, 0.6, 0.2, 0.45, 1.1, 2.3});
  // Zero-gradient ops: nothing flows back, and the points sit away from their jumps.
  add_unary(cases, "Floor", kX, {-2, -1, 0, 0, 1, 2}, {0.1, 0.9});
  add_unary(cases, "Ceil", kX, {-1, 0, 1, 1, 2, 3}, {0.1, 0.9});
  add_unary(cases, "Sign", kX, {-1, -1, 1, 1, 1, 1}, {0.1, 0.9});
  add_unary(cases, "Round", {-2.4, -1.6, -0.3, 0.4, 1.45, 2.3}, {-2, -2, 0, 0, 1, 2}, {0.1, 0.4});
  cases.push_back({.op = "Round", .name = "Round halves to even", .model = unary_model("Round", {2, 3}, nullptr),
                   .values = {{"x", {-2.5, -1.5, -0.5, 0.5, 1.5, 2.5}}}, .expect = {{"y", {-2, -2, 0, 0, 2, 2}}},
                   .gradient = false});
  add_unary(cases, "Softplus", kX, {0.167786017, 0.43748793, 0.798138857, 0.943248928, 1.3873353, 2.39554548}, {-5, 5});
  add_unary(cases, "Elu", kX, {-0.408658236, -0.225594193, 0.2, 0.45, 1.1, 2.3}, {-2, 2},
            [](ModelBuilder& b) { b.attr_f("alpha", 0.5f); });
  add_unary(cases, "Selu", kX, {-1.4369235, -0.793233991, 0.210140213, 0.472815454, 1.15577114, 2.41661239}, {-2, 2});
  add_unary(cases, "HardSigmoid", kH, {0, 0, 0.275, 0.575, 0.95, 1}, {-1.5, 2.3},
            [](ModelBuilder& b) { b.attr_f("alpha", 0.25f).attr_f("beta", 0.4f); });
  add_unary(cases, "HardSwish", kH, {0, -0.333333343, -0.208333328, 0.431666642, 1.90666664, 3.59999967}, {-5, 5});
  add_unary(cases, "Sin", kX, {-0.991664767, -0.564642489, 0.198669329, 0.434965521, 0.891207397, 0.745705247}, {-3, 3});
  add_unary(cases, "Cos", kX, {-0.128844544, 0.825335622, 0.980066597, 0.90044713, 0.453596115, -0.666275978}, {-3, 3});
  add_unary(cases, "Softsign", kX, {-0.629629612, -0.375, 0.166666657, 0.310344815, 0.523809552, 0.696969688}, {-3, 3});
  add_unary(cases, "Celu", kX, {-1.14517021, -0.518363595, 0.2, 0.45, 1.1, 2.3}, {-3, 3},
            [](ModelBuilder& b) { b.attr_f("alpha", 2.0f); });
  add_unary(cases, "ThresholdedRelu", kX, {0, 0, 0, 0.45, 1.1, 2.3}, {0.35, 2}, [](ModelBuilder& b) { b.attr_f("alpha", 0.3f); });
  add_unary(cases, "Mish", kX, {-0.282589376, -0.246936038, 0.132598981, 0.33152014, 0.970841587, 2.26211882}, {-3, 3});
  add_unary(cases, "Shrink", kX, {-1.5, -0.4, 0, 0.25, 0.9, 2.1}, {0.45, 2},
            [](ModelBuilder& b) { b.attr_f("bias", 0.2f).attr_f("lambd", 0.4f); });
  add_unary(cases, "Tan", kU, {-1.26015818, -0.483055055, -0.100334674, 0.202710032, 0.613105237, 1.13833272});
  add_unary(cases, "Atan", kX, {-1.03907228, -0.540419519, 0.197395563, 0.422853917, 0.832981288, 1.16066897}, {-3, 3});
  add_unary(cases, "Asin", kU, {-1.11976945, -0.466765314, -0.100167423, 0.201357931, 0.582364261, 1.01598537}, {-0.8, 0.8});
  add_unary(cases, "Acos", kU, {2.69056582, 2.03756166, 1.67096376, 1.36943841, 0.988432109, 0.554811001}, {-0.8, 0.8});
  add_unary(cases, "Sinh", kX, {-2.64563203, -0.636653662, 0.201336011, 0.465341985, 1.33564758, 4.93696165}, {-2, 2});
  add_unary(cases, "Cosh", kX, {2.8283155, 1.18546522, 1.02006674, 1.10297012, 1.66851854, 5.03722048}, {-2, 2});
  add_unary(cases, "Gelu", kX, {-0.0757612512, -0.164551824, 0.115851954, 0.303140163, 0.950767279, 2.2753346}, {-3, 3});
  add_unary(cases, "Gelu", kH, {-5.09619713e-06, -0.0454022884, -0.154285997, 0.530570149, 2.16967845, 3.5995872}, {-3, 3},
            [](ModelBuilder& b) { b.attr_s("approximate", "tanh"); }, " tanh");
  add_unary(cases, "Silu", kX, {-0.262590945, -0.212606221, 0.1099668, 0.274787664, 0.82528615, 2.09041715}, {-4, 4});
  // Large enough for two threads and for the chunk boundaries.
  cases.push_back({.op = "Gelu", .name = "Gelu random [70,300]", .model = unary_model("Gelu", {70, 300}, nullptr), .range = {-3, 3}});
  cases.push_back({.op = "Tanh", .name = "Tanh random [70,300]", .model = unary_model("Tanh", {70, 300}, nullptr), .range = {-3, 3}});

  // Integer forms (the ops whose catalogue entry folds integers).
  auto integer = [&](const std::string& op, int type, const Values& x, const Values& want) {
    ModelBuilder b;
    b.input("x", {5}, type).node(op, {"x"}, {"y"}).output("y");
    cases.push_back({.op = op, .name = op + " integers", .model = b, .values = {{"x", x}}, .expect = {{"y", want}}, .gradient = false});
  };
  integer("Neg", kInt64, {-3, 0, 4, 7, -9}, {3, 0, -4, -7, 9});
  integer("Abs", kInt32, {-3, 0, 4, 7, -9}, {3, 0, 4, 7, 9});
  integer("Relu", kInt64, {-3, 0, 4, 7, -9}, {0, 0, 4, 7, 0});
  integer("Sign", kInt32, {-3, 0, 4, 7, -9}, {-1, 0, 1, 1, -1});
  integer("Floor", kInt64, {-3, 0, 4, 7, -9}, {-3, 0, 4, 7, -9});
  integer("Ceil", kInt32, {-3, 0, 4, 7, -9}, {-3, 0, 4, 7, -9});

  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  auto classify = [&](const std::string& op, const Attrs& attrs, const Values& want, const std::string& name) {
    cases.push_back({.op = op, .name = name, .model = unary_model(op, {5}, attrs),
                     .values = {{"x", {1.5, nan, inf, -inf, 0}}}, .expect = {{"y", want}}, .gradient = false});
  };
  classify("IsNaN", nullptr, {0, 1, 0, 0, 0}, "IsNaN");
  classify("IsInf", nullptr, {0, 0, 1, 1, 0}, "IsInf");
  classify("IsInf", [](ModelBuilder& b) { b.attr("detect_negative", int64_t{0}); }, {0, 0, 1, 0, 0}, "IsInf positive only");
  classify("IsInf", [](ModelBuilder& b) { b.attr("detect_positive", int64_t{0}); }, {0, 0, 0, 1, 0}, "IsInf negative only");
}

ModelBuilder binary_model(const std::string& op, const Shape& a, const Shape& b, int type = 1) {
  ModelBuilder m;
  m.input("a", a, type).input("b", b, type).node(op, {"a", "b"}, {"y"}).output("y");
  return m;
}

void binary_cases(std::vector<KernelCase>& cases) {
  const Values a6 = {1, 2, 3, 4, 5, 6};
  // Add, Sub, Mul, Div: expected values on [2,3] against a smaller operand, then random
  // gradients broadcasting both ways ([4,1,5] against [3,1]), a scalar, and a large case.
  cases.push_back({.op = "Add", .name = "Add broadcast [2,3] + [3]", .model = binary_model("Add", {2, 3}, {3}),
                   .values = {{"a", a6}, {"b", {10, 20, 30}}}, .expect = {{"y", {11, 22, 33, 14, 25, 36}}}});
  cases.push_back({.op = "Add", .name = "Add int64 [2,2] + [2]", .model = binary_model("Add", {2, 2}, {2}, kInt64),
                   .values = {{"a", {1, -2, 3, 4}}, {"b", {10, 20}}}, .expect = {{"y", {11, 18, 13, 24}}}, .gradient = false});
  cases.push_back({.op = "Sub", .name = "Sub broadcast [2,3] - [2,1]", .model = binary_model("Sub", {2, 3}, {2, 1}),
                   .values = {{"a", a6}, {"b", {1, 2}}}, .expect = {{"y", {0, 1, 2, 2, 3, 4}}}});
  cases.push_back({.op = "Sub", .name = "Sub int32 [3] - [1]", .model = binary_model("Sub", {3}, {1}, kInt32),
                   .values = {{"a", {5, -3, 0}}, {"b", {2}}}, .expect = {{"y", {3, -5, -2}}}, .gradient = false});
  cases.push_back({.op = "Mul", .name = "Mul broadcast [2,3] * [3]", .model = binary_model("Mul", {2, 3}, {3}),
                   .values = {{"a", a6}, {"b", {0.5, -1, 2}}}, .expect = {{"y", {0.5, -2, 6, 2, -5, 12}}}});
  cases.push_back({.op = "Div", .name = "Div broadcast [2,3] / [2,1]", .model = binary_model("Div", {2, 3}, {2, 1}),
                   .values = {{"a", a6}, {"b", {2, 4}}}, .expect = {{"y", {0.5, 1, 1.5, 1, 1.25, 1.5}}}});
  cases.push_back({.op = "Div", .name = "Div int64 truncates", .model = binary_model("Div", {4}, {4}, kInt64),
                   .values = {{"a", {7, -7, 7, -7}}, {"b", {2, 2, -2, -2}}}, .expect = {{"y", {3, -3, -3, 3}}}, .gradient = false});
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
    std::string s = op;
    cases.push_back({.op = s, .name = s + " random [4,1,5] and [3,1]", .model = binary_model(s, {4, 1, 5}, {3, 1}),
                     .ranges = {{"b", {0.5, 2}}}});
    cases.push_back({.op = s, .name = s + " random [3,1] and [2,3,4]", .model = binary_model(s, {3, 1}, {2, 3, 4}),
                     .ranges = {{"b", {0.5, 2}}}});
    cases.push_back({.op = s, .name = s + " random [2,3] and scalar", .model = binary_model(s, {2, 3}, {}),
                     .ranges = {{"b", {0.5, 2}}}});
  }
  // Two threads: rows split across chunks ([B,T,C] + [C]), and rows that share operand elements
  // ([B,C,H,W] * [C,1,1], summed per thread).
  cases.push_back({.op = "Add", .name = "Add random [8,20,130] + [130]", .model = binary_model("Add", {8, 20, 130}, {130})});
  cases.push_back({.op = "Mul", .name = "Mul random [6,3,40,40] * [3,1,1]", .model = binary_model("Mul", {6, 3, 40, 40}, {3, 1, 1})});
  cases.push_back({.op = "Sub", .name = "Sub random [40,500] - [40,1]", .model = binary_model("Sub", {40, 500}, {40, 1})});

  // Pow: both gradients; a scalar exponent 2 (the fast path); an int64 exponent; int64 bases.
  cases.push_back({.op = "Pow", .name = "Pow broadcast [2,3] ^ [3]", .model = binary_model("Pow", {2, 3}, {3}),
                   .values = {{"a", {0.5, 1, 1.5, 2, 2.5, 3}}, {"b", {2, 0.5, -1}}},
                   .expect = {{"y", {0.25, 1, 0.666666687, 4, 1.58113885, 0.333333343}}}});
  cases.push_back({.op = "Pow", .name = "Pow random [3,4] ^ [4]", .model = binary_model("Pow", {3, 4}, {4}),
                   .ranges = {{"a", {0.5, 2}}, {"b", {-1.5, 1.5}}}});
  {
    ModelBuilder b;
    b.input("a", {2, 3}).node("Constant", {}, {"two"}).attr_f("value_float", 2.0f).node("Pow", {"a", "two"}, {"y"}).output("y");
    cases.push_back({.op = "Pow", .name = "Pow square", .model = b, .values = {{"a", kX}},
                     .expect = {{"y", {2.8900001, 0.360000014, 0.0400000028, 0.202499986, 1.21000004, 5.28999996}}}});
  }
  {
    ModelBuilder b;
    b.input("a", {2, 3}).node("Constant", {}, {"three"}).attr_f("value_float", 3.0f).node("Pow", {"a", "three"}, {"y"}).output("y");
    cases.push_back({.op = "Pow", .name = "Pow cube", .model = b, .values = {{"a", kX}},
                     .expect = {{"y", {-4.91300011, -0.216000021, 0.00800000038, 0.0911249891, 1.33100009, 12.1669998}}}});
  }
  {
    ModelBuilder b;
    b.input("a", {3}).input("e", {}, kInt64).node("Pow", {"a", "e"}, {"y"}).output("y");
    cases.push_back({.op = "Pow", .name = "Pow float ^ int64", .model = b, .values = {{"a", {1.5, 2, -3}}, {"e", {3}}},
                     .expect = {{"y", {3.375, 8, -27}}}});
  }
  cases.push_back({.op = "Pow", .name = "Pow int64", .model = binary_model("Pow", {3}, {3}, kInt64),
                   .values = {{"a", {2, 3, -2}}, {"b", {3, 2, 3}}}, .expect = {{"y", {8, 9, -8}}}, .gradient = false});

  // Mod: integers with the divisor's sign (fmod=0) or the dividend's (fmod=1); floats fmod=1
  // against a constant divisor (so only the dividend takes a gradient).
  cases.push_back({.op = "Mod", .name = "Mod int64", .model = binary_model("Mod", {4}, {4}, kInt64),
                   .values = {{"a", {5, -5, 5, -5}}, {"b", {3, 3, -3, -3}}}, .expect = {{"y", {2, 1, -1, -2}}}, .gradient = false});
  {
    ModelBuilder b = binary_model("Mod", {4}, {4}, kInt32);
    b.attr("fmod", int64_t{1});
    cases.push_back({.op = "Mod", .name = "Mod int32 fmod", .model = b, .values = {{"a", {5, -5, 5, -5}}, {"b", {3, 3, -3, -3}}},
                     .expect = {{"y", {2, -2, 2, -2}}}, .gradient = false});
  }
  {
    ModelBuilder b;
    b.input("a", {2, 3}).node("Constant", {}, {"d"}).attr_f("value_float", 2.5f);
    b.node("Mod", {"a", "d"}, {"y"}).attr("fmod", int64_t{1}).output("y");
    cases.push_back({.op = "Mod", .name = "Mod float fmod", .model = b, .values = {{"a", {5.5, -5.5, 3.2, -3.2, 7.1, -7.1}}},
                     .expect = {{"y", {0.5, -0.5, 0.700000048, -0.700000048, 2.0999999, -2.0999999}}}});
  }

  // Max, Min: a tie and broadcasting (forward); gradients on random inputs broadcast both
  // ways; variadic forms; int32.
  cases.push_back({.op = "Max", .name = "Max broadcast with a tie", .model = binary_model("Max", {2, 3}, {3}),
                   .values = {{"a", {1, 5, -2, 4, 0, 3}}, {"b", {2, 5, -3}}}, .expect = {{"y", {2, 5, -2, 4, 5, 3}}}, .gradient = false});
  cases.push_back({.op = "Min", .name = "Min broadcast with a tie", .model = binary_model("Min", {2, 3}, {3}),
                   .values = {{"a", {1, 5, -2, 4, 0, 3}}, {"b", {2, 5, -3}}}, .expect = {{"y", {1, 5, -3, 2, 0, -3}}}, .gradient = false});
  // No two values closer than the finite differences' step: a tie has no derivative.
  Values spread;
  for (int i = 0; i < 24; ++i) spread.push_back(-1.15 + 0.1 * ((i * 7) % 24));
  for (const char* op : {"Max", "Min"}) {
    std::string s = op;
    cases.push_back({.op = s, .name = s + " random [3,1] and [1,4]", .model = binary_model(s, {3, 1}, {1, 4})});
    cases.push_back({.op = s, .name = s + " [2,3,4] and [4]", .model = binary_model(s, {2, 3, 4}, {4}),
                     .values = {{"a", spread}, {"b", {-0.8, 0.9, -0.2, 0.4}}}});
    ModelBuilder b;
    b.input("a", {3}).input("b", {3}).input("c", {3}).node(s, {"a", "b", "c"}, {"y"}).output("y");
    cases.push_back({.op = s, .name = s + " of three", .model = b, .values = {{"a", {1, 2, 3}}, {"b", {3, 1, 2}}, {"c", {2, 3, 1}}},
                     .expect = {{"y", s == "Max" ? Values{3, 3, 3} : Values{1, 1, 1}}}, .gradient = false});
  }
  cases.push_back({.op = "Max", .name = "Max int32", .model = binary_model("Max", {2}, {2}, kInt32),
                   .values = {{"a", {1, -5}}, {"b", {0, 0}}}, .expect = {{"y", {1, 0}}}, .gradient = false});

  // Sum, Mean: three operands of different shapes, and one.
  for (const char* op : {"Sum", "Mean"}) {
    std::string s = op;
    ModelBuilder b;
    b.input("a", {2, 3}).input("b", {3}).input("c", {2, 1}).node(s, {"a", "b", "c"}, {"y"}).output("y");
    Values want = s == "Sum" ? Values{2.5, 2, 6, 6.5, 6, 10} : Values{0.833333313, 0.666666687, 2, 2.16666675, 2, 3.33333325};
    cases.push_back({.op = s, .name = s + " of three, broadcast", .model = b,
                     .values = {{"a", a6}, {"b", {0.5, -1, 2}}, {"c", {1, 2}}}, .expect = {{"y", want}}});
    cases.push_back({.op = s, .name = s + " of three, random", .model = b});
    ModelBuilder one;
    one.input("a", {2, 3}).node(s, {"a"}, {"y"}).output("y");
    cases.push_back({.op = s, .name = s + " of one", .model = one, .values = {{"a", a6}}, .expect = {{"y", a6}}});
  }

  // PRelu: the slope a weight broadcast against x.
  {
    ModelBuilder b;
    b.input("x", {2, 3}).floats("slope", {3}).node("PRelu", {"x", "slope"}, {"y"}).output("y");
    cases.push_back({.op = "PRelu", .name = "PRelu [2,3] slope [3]", .model = b,
                     .values = {{"x", kX}, {"slope", {0.1, 0.2, 0.3}}}, .expect = {{"y", {-0.17, -0.12, 0.2, 0.45, 1.1, 2.3}}}});
    ModelBuilder c;
    c.input("x", {2, 3, 4, 4}).floats("slope", {3, 1, 1}).node("PRelu", {"x", "slope"}, {"y"}).output("y");
    cases.push_back({.op = "PRelu", .name = "PRelu random [2,3,4,4] slope [3,1,1]", .model = c});
  }
}

void logic_cases(std::vector<KernelCase>& cases) {
  const Values a6 = {1, 2, 3, 4, 5, 6}, b3 = {2, 2, 7};
  auto compare = [&](const std::string& op, const Values& want) {
    cases.push_back({.op = op, .name = op + " float [2,3] and [3]", .model = binary_model(op, {2, 3}, {3}),
                     .values = {{"a", a6}, {"b", b3}}, .expect = {{"y", want}}, .gradient = false});
    cases.push_back({.op = op, .name = op + " int64 [2,3] and [3]", .model = binary_model(op, {2, 3}, {3}, kInt64),
                     .values = {{"a", a6}, {"b", b3}}, .expect = {{"y", want}}, .gradient = false});
  };
  compare("Equal", {0, 1, 0, 0, 0, 0});
  compare("Less", {1, 0, 1, 0, 0, 1});
  compare("LessOrEqual", {1, 1, 1, 0, 0, 1});
  compare("Greater", {0, 0, 0, 1, 1, 0});
  compare("GreaterOrEqual", {0, 1, 0, 1, 1, 0});
  cases.push_back({.op = "Equal", .name = "Equal bool", .model = binary_model("Equal", {4}, {4}, kBool),
                   .values = {{"a", {0, 0, 1, 1}}, {"b", {0, 1, 0, 1}}}, .expect = {{"y", {1, 0, 0, 1}}}, .gradient = false});

  auto logic = [&](const std::string& op, const Values& want, const Values& want_broadcast) {
    cases.push_back({.op = op, .name = op, .model = binary_model(op, {4}, {4}, kBool),
                     .values = {{"a", {0, 0, 1, 1}}, {"b", {0, 1, 0, 1}}}, .expect = {{"y", want}}, .gradient = false});
    cases.push_back({.op = op, .name = op + " broadcast [2,2] and [2]", .model = binary_model(op, {2, 2}, {2}, kBool),
                     .values = {{"a", {0, 1, 1, 0}}, {"b", {1, 0}}}, .expect = {{"y", want_broadcast}}, .gradient = false});
  };
  logic("And", {0, 0, 0, 1}, {0, 0, 1, 0});
  logic("Or", {0, 1, 1, 1}, {1, 1, 1, 0});
  logic("Xor", {0, 1, 1, 0}, {1, 1, 0, 0});
  {
    ModelBuilder b;
    b.input("x", {4}, kBool).node("Not", {"x"}, {"y"}).output("y");
    cases.push_back({.op = "Not", .name = "Not", .model = b, .values = {{"x", {0, 1, 1, 0}}}, .expect = {{"y", {1, 0, 0, 1}}}, .gradient = false});
  }

  auto where = [](const Shape& c, const Shape& x, const Shape& y, int type = 1) {
    ModelBuilder b;
    b.input("c", c, kBool).input("x", x, type).input("y", y, type).node("Where", {"c", "x", "y"}, {"out"}).output("out");
    return b;
  };
  cases.push_back({.op = "Where", .name = "Where [2,1] ? [2,3] : [3]", .model = where({2, 1}, {2, 3}, {3}),
                   .values = {{"c", {1, 0}}, {"x", a6}, {"y", {-1, -2, -3}}}, .expect = {{"out", {1, 2, 3, -1, -2, -3}}}});
  cases.push_back({.op = "Where", .name = "Where int64", .model = where({3}, {3}, {1}, kInt64),
                   .values = {{"c", {1, 0, 1}}, {"x", {7, 8, 9}}, {"y", {-1}}}, .expect = {{"out", {7, -1, 9}}}, .gradient = false});
  {
    // A causal mask over attention scores, on two threads.
    Values mask;
    for (int i = 0; i < 16; ++i) {
      for (int j = 0; j < 16; ++j) mask.push_back(j <= i);
    }
    cases.push_back({.op = "Where", .name = "Where causal mask [1,1,16,16] over [9,8,16,16]", .model = where({1, 1, 16, 16}, {9, 8, 16, 16}, {}),
                     .values = {{"c", mask}}});
  }
}

void misc_cases(std::vector<KernelCase>& cases) {
  // Clip: bounds as inputs (opset 11+), one bound omitted, attributes (opset 6), int64.
  {
    ModelBuilder b;
    b.input("x", {2, 3}).floats("lo", {}, -0.5f).floats("hi", {}, 1.5f).node("Clip", {"x", "lo", "hi"}, {"y"}).output("y");
    cases.push_back({.op = "Clip", .name = "Clip [-0.5, 1.5]", .model = b, .values = {{"x", kX}},
                     .expect = {{"y", {-0.5, -0.5, 0.2, 0.45, 1.1, 1.5}}}});
    cases.push_back({.op = "Clip", .name = "Clip random", .model = b, .range = {-2, 2}});
    ModelBuilder hi;
    hi.input("x", {2, 3}).floats("hi", {}, 1.0f).node("Clip", {"x", "", "hi"}, {"y"}).output("y");
    cases.push_back({.op = "Clip", .name = "Clip max only", .model = hi, .values = {{"x", kX}},
                     .expect = {{"y", {-1.7, -0.6, 0.2, 0.45, 1.0, 1.0}}}});
    ModelBuilder old(6);
    old.input("x", {2, 3}).node("Clip", {"x"}, {"y"}).attr_f("min", -1.0f).attr_f("max", 0.3f).output("y");
    cases.push_back({.op = "Clip", .name = "Clip opset 6 attributes", .model = old, .values = {{"x", kX}},
                     .expect = {{"y", {-1.0, -0.6, 0.2, 0.3, 0.3, 0.3}}}});
    ModelBuilder ints;
    ints.input("x", {4}, kInt64).ints("lo", {0}, {}).ints("hi", {3}, {}).node("Clip", {"x", "lo", "hi"}, {"y"}).output("y");
    cases.push_back({.op = "Clip", .name = "Clip int64", .model = ints, .values = {{"x", {-5, 0, 2, 5}}},
                     .expect = {{"y", {0, 0, 2, 3}}}, .gradient = false});
  }
  // Dropout: active (opset 13, training_mode true): the mask from the hash of (seed 7, step 1,
  // node 0, i), as a Python copy computes it; inactive forms are the identity.
  {
    const Values x8 = {-1.7, -0.6, 0.2, 0.45, 1.1, 2.3, 0.8, -0.3};
    ModelBuilder b;
    b.input("x", {2, 4}).floats("ratio", {}, 0.5f).flag("train", true);
    b.node("Dropout", {"x", "ratio", "train"}, {"y", "mask"}).output("y").output("mask");
    cases.push_back({.op = "Dropout", .name = "Dropout ratio 0.5, training", .model = b, .values = {{"x", x8}},
                     .expect = {{"y", {0, -1.2, 0.4, 0, 0, 0, 1.6, 0}}, {"mask", {0, 1, 1, 0, 0, 0, 1, 0}}}});
    ModelBuilder q;
    q.input("x", {2, 4}).floats("ratio", {}, 0.25f).flag("train", true).node("Dropout", {"x", "ratio", "train"}, {"y"}).output("y");
    cases.push_back({.op = "Dropout", .name = "Dropout ratio 0.25, training", .model = q, .values = {{"x", x8}},
                     .expect = {{"y", {0, -0.800000072, 0.266666681, 0.600000024, 0, 0, 1.06666672, 0}}}});
    ModelBuilder off;
    off.input("x", {2, 4}).floats("ratio", {}, 0.5f).flag("train", false);
    off.node("Dropout", {"x", "ratio", "train"}, {"y", "mask"}).output("y").output("mask");
    cases.push_back({.op = "Dropout", .name = "Dropout training_mode false", .model = off, .values = {{"x", x8}},
                     .expect = {{"y", x8}, {"mask", {1, 1, 1, 1, 1, 1, 1, 1}}}});
    ModelBuilder plain;
    plain.input("x", {2, 4}).node("Dropout", {"x"}, {"y"}).output("y");
    cases.push_back({.op = "Dropout", .name = "Dropout without training_mode", .model = plain, .values = {{"x", x8}},
                     .expect = {{"y", x8}}});
    ModelBuilder big;
    big.input("x", {70, 300}).floats("ratio", {}, 0.3f).flag("train", true).node("Dropout", {"x", "ratio", "train"}, {"y"}).output("y");
    cases.push_back({.op = "Dropout", .name = "Dropout random [70,300]", .model = big});
  }
  // Cast: truncation toward zero, bool, float16 round trip, int64 to float, and float64 with its
  // gradient.
  auto cast = [](const Shape& s, int from, int to) {
    ModelBuilder b;
    b.input("x", s, from).node("Cast", {"x"}, {"y"}).attr("to", int64_t{to}).output("y");
    return b;
  };
  cases.push_back({.op = "Cast", .name = "Cast float to int64", .model = cast({2, 3}, 1, kInt64), .values = {{"x", kX}},
                   .expect = {{"y", {-1, 0, 0, 0, 1, 2}}}, .gradient = false});
  cases.push_back({.op = "Cast", .name = "Cast float to bool", .model = cast({4}, 1, kBool), .values = {{"x", {0, -0.5, 2, 0}}},
                   .expect = {{"y", {0, 1, 1, 0}}}, .gradient = false});
  cases.push_back({.op = "Cast", .name = "Cast int64 to float", .model = cast({3}, kInt64, 1), .values = {{"x", {3, -2, 0}}},
                   .expect = {{"y", {3, -2, 0}}}, .gradient = false});
  cases.push_back({.op = "Cast", .name = "Cast bool to int32", .model = cast({3}, kBool, kInt32), .values = {{"x", {1, 0, 1}}},
                   .expect = {{"y", {1, 0, 1}}}, .gradient = false});
  cases.push_back({.op = "Cast", .name = "Cast float to float64", .model = cast({2, 3}, 1, kFloat64), .values = {{"x", kX}},
                   .expect = {{"y", {-1.70000005, -0.600000024, 0.200000003, 0.449999988, 1.10000002, 2.29999995}}}});
  {
    ModelBuilder b;
    b.input("x", {2}).node("Cast", {"x"}, {"h"}).attr("to", int64_t{kFloat16}).node("Cast", {"h"}, {"y"}).attr("to", int64_t{1}).output("y");
    cases.push_back({.op = "Cast", .name = "Cast through float16", .model = b, .values = {{"x", {1.0 / 3, -2.7}}},
                     .expect = {{"y", {0.333251953125, -2.69921875}}}, .gradient = false});
  }
  cases.push_back({.op = "Identity", .name = "Identity", .model = unary_model("Identity", {2, 3}, nullptr),
                   .values = {{"x", kX}}, .expect = {{"y", kX}}});
}

}  // namespace

std::vector<KernelCase> elementwise_cases() {
  std::vector<KernelCase> cases;
  unary_cases(cases);
  binary_cases(cases);
  logic_cases(cases);
  misc_cases(cases);
  return cases;
}

TEST_CASE("kernels: elementwise forward and backward") {
  for (const KernelCase& c : elementwise_cases()) check_kernel(c);
}

namespace {

// The model's forward on `backend` at training step `step`: float32 and int64 inputs from `values`,
// initializers and constants from the model.
std::vector<runtime::Array> run_forward(const ModelBuilder& m, const std::map<std::string, Values>& values, int64_t step,
                                        runtime::cpu::CpuBackend& backend) {
  Graph g = import_onnx_bytes(m.bytes(), "test", {});
  std::map<int, runtime::Array> state;
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    const Tensor& x = g.tensors[t];
    if (x.producer >= 0 || !x.value || x.kind == TensorKind::Input) continue;
    runtime::Array a(x.dtype, x.shape, backend.allocator(), runtime::MemoryKind::Parameters);
    for (int64_t i = 0; i < a.numel(); ++i) {
      if (x.dtype == DType::F32) a.data<float>()[i] = static_cast<float>(x.value->real(i));
      else if (x.dtype == DType::Bool) a.data<uint8_t>()[i] = static_cast<uint8_t>(x.value->integer(i));
      else a.data<int64_t>()[i] = x.value->integer(i);
    }
    state[static_cast<int>(t)] = a;
  }
  std::vector<runtime::Array> inputs;
  for (int t : g.inputs) {
    const Tensor& x = g.tensors[static_cast<size_t>(t)];
    runtime::Array a(x.dtype, x.shape, backend.allocator(), runtime::MemoryKind::Inputs);
    const Values& v = values.at(x.name);
    for (int64_t i = 0; i < a.numel(); ++i) {
      if (x.dtype == DType::F32) a.data<float>()[i] = static_cast<float>(v[static_cast<size_t>(i)]);
      else a.data<int64_t>()[i] = static_cast<int64_t>(v[static_cast<size_t>(i)]);
    }
    inputs.push_back(a);
  }
  runtime::Executor ex(g, backend, state);
  runtime::StepContext ctx{&backend.allocator(), true, 7, step, 2};
  return ex.forward(inputs, ctx);
}

}  // namespace

TEST_CASE("kernels: Dropout drops its ratio, the same mask within a step, another the next step") {
  const int64_t n = 200 * 300;
  ModelBuilder m;
  m.input("x", {200, 300}).floats("ratio", {}, 0.3f).flag("train", true).node("Dropout", {"x", "ratio", "train"}, {"y"}).output("y");
  runtime::cpu::CpuBackend backend(2);
  const std::map<std::string, Values> ones = {{"x", Values(static_cast<size_t>(n), 1.0)}};
  runtime::Array a = run_forward(m, ones, 1, backend)[0];
  runtime::Array again = run_forward(m, ones, 1, backend)[0];
  runtime::Array next = run_forward(m, ones, 2, backend)[0];
  int64_t dropped = 0, same = 0, differ = 0;
  for (int64_t i = 0; i < n; ++i) {
    float v = a.data<float>()[i];
    CHECK((v == 0.0f || std::abs(v - 1.0f / 0.7f) < 1e-6f));
    dropped += v == 0.0f;
    same += v == again.data<float>()[i];
    differ += v != next.data<float>()[i];
  }
  CHECK(std::abs(static_cast<double>(dropped) / static_cast<double>(n) - 0.3) < 0.01);  // 5 sigma
  CHECK(same == n);
  CHECK(static_cast<double>(differ) / static_cast<double>(n) > 0.3);  // 2·0.3·0.7 expected
}

TEST_CASE("kernels: elementwise kernels refuse what they do not implement") {
  runtime::cpu::CpuBackend backend(1);
  {
    ModelBuilder m;
    m.input("x", {3}).node("Gelu", {"x"}, {"y"}).attr_s("approximate", "erf").output("y");
    CHECK_THROWS_WITH_AS(run_forward(m, {{"x", {1, 2, 3}}}, 1, backend), doctest::Contains("approximate='erf'"), InputError);
  }
  {
    ModelBuilder m;
    m.input("x", {3}).node("Constant", {}, {"d"}).attr_f("value_float", 2.0f).node("Mod", {"x", "d"}, {"y"}).output("y");
    CHECK_THROWS_WITH_AS(run_forward(m, {{"x", {1, 2, 3}}}, 1, backend), doctest::Contains("fmod=1"), InputError);
  }
  {
    ModelBuilder m;
    m.input("x", {3}, kInt64).input("d", {3}, kInt64).node("Div", {"x", "d"}, {"y"}).output("y");
    CHECK_THROWS_WITH_AS(run_forward(m, {{"x", {1, 2, 3}}, {"d", {1, 0, 1}}}, 1, backend), doctest::Contains("division by zero"),
                         InputError);
  }
  {
    ModelBuilder m;
    m.input("x", {3}).floats("ratio", {}, 1.5f).flag("train", true).node("Dropout", {"x", "ratio", "train"}, {"y"}).output("y");
    CHECK_THROWS_WITH_AS(run_forward(m, {{"x", {1, 2, 3}}}, 1, backend), doctest::Contains("outside [0, 1]"), InputError);
  }
}

}  // namespace tensoropt::test

#include "launcher/runtime/cpu/denormals.h"
#include "launcher/runtime/cpu/util.h"

namespace tensoropt::test {

TEST_CASE("cpu kernels: subnormal results and inputs are flushed to zero on every kernel thread") {
  REQUIRE(std::string(runtime::cpu::denormal_mode()) == "flush");  // the default (the suite leaves it unset)
  // The smallest normal fp32 halved is subnormal; so is a product of two small normals.
  volatile float small = 1e-30f, smaller = 1e-10f, subnormal_bits = std::numeric_limits<float>::denorm_min();
  std::vector<float> product(4, -1), passed(4, -1);
  runtime::cpu::parallel_for(4, 1, 4, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      product[static_cast<size_t>(i)] = small * smaller;                // FTZ: the result
      passed[static_cast<size_t>(i)] = subnormal_bits * 1.0f + 0.0f;    // DAZ: the input
    }
  });
  for (int i = 0; i < 4; ++i) {
    CHECK(product[static_cast<size_t>(i)] == 0.0f);
    CHECK(passed[static_cast<size_t>(i)] == 0.0f);
  }
}

}  // namespace tensoropt::test
