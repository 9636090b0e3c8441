// Kernel cases of launcher/runtime/cpu/norm*.cc (the harness: kernel_check.h). Expected values
// come from PyTorch 1.13 in float64 (torch.softmax, F.layer_norm, F.group_norm, F.instance_norm,
// F.batch_norm, amax, logsumexp, topk, cumsum, ...) on the inputs written here.
#include <doctest/doctest.h>

#include <map>

#include "graph/error.h"
#include "graph/import.h"
#include "launcher/runtime/cpu/backend.h"
#include "launcher/runtime/executor.h"
#include "tests/launcher/runtime/kernel_check.h"

namespace tensoropt::test {
namespace {

using V = std::vector<int64_t>;
using D = std::vector<double>;

// [2,3,4]: 24 distinct multiples of 0.25 in [-3, 2.75], one zero (element 12).
const D kX234 = {-3, -1.25, 0.5, 2.25, -2, -0.25, 1.5, -2.75, -1, 0.75, 2.5, -1.75,
                 0, 1.75, -2.5, -0.75, 1, 2.75, -1.5, 0.25, 2, -2.25, -0.5, 1.25};

D shifted(const D& v, double by) {
  D out;
  for (double x : v) out.push_back(x + by);
  return out;
}

// x [shape] -> op -> y, with attributes set by `attrs` on the node.
template <class Attrs>
ModelBuilder unary(const std::string& op, const V& shape, Attrs attrs, int64_t opset = 17) {
  ModelBuilder b(opset);
  b.input("x", shape).node(op, {"x"}, {"y"});
  attrs(b);
  b.output("y");
  return b;
}
const auto none = [](ModelBuilder&) {};

void axis_cases(std::vector<KernelCase>& cases) {
  const D x23 = {1, 2, 3, -1, 0, 4};
  cases.push_back({.op = "Softmax", .name = "Softmax [2,3], default axis", .model = unary("Softmax", {2, 3}, none),
                   .values = {{"x", x23}},
                   .expect = {{"y", {0.0900305732, 0.244728471, 0.665240956, 0.00657326319, 0.0178679819, 0.975558755}}}});
  cases.push_back({.op = "Softmax", .name = "Softmax opset 11 [2,3] (coerced 2-D = last axis)", .model = unary("Softmax", {2, 3}, none, 11),
                   .values = {{"x", x23}},
                   .expect = {{"y", {0.0900305732, 0.244728471, 0.665240956, 0.00657326319, 0.0178679819, 0.975558755}}}});
  cases.push_back({.op = "Softmax", .name = "Softmax [3,7] last axis", .model = unary("Softmax", {3, 7}, [](ModelBuilder& b) { b.attr("axis", -1); }),
                   .range = {-3, 3}});
  cases.push_back({.op = "Softmax", .name = "Softmax [2,3,4] axis 1 (strided rows)",
                   .model = unary("Softmax", {2, 3, 4}, [](ModelBuilder& b) { b.attr("axis", 1); })});
  cases.push_back({.op = "LogSoftmax", .name = "LogSoftmax [2,3] axis 0", .model = unary("LogSoftmax", {2, 3}, [](ModelBuilder& b) { b.attr("axis", 0); }),
                   .values = {{"x", x23}},
                   .expect = {{"y", {-0.126928011, -0.126928011, -1.31326169, -2.12692801, -2.12692801, -0.313261688}}}});
  cases.push_back({.op = "LogSoftmax", .name = "LogSoftmax [2,3,4] axis -1",
                   .model = unary("LogSoftmax", {2, 3, 4}, [](ModelBuilder& b) { b.attr("axis", -1); }), .range = {-3, 3}});
  cases.push_back({.op = "LogSoftmax", .name = "LogSoftmax [2,3,4] axis -3",
                   .model = unary("LogSoftmax", {2, 3, 4}, [](ModelBuilder& b) { b.attr("axis", -3); })});
  cases.push_back({.op = "LpNormalization", .name = "LpNormalization p=2 [2,3]", .model = unary("LpNormalization", {2, 3}, none),
                   .values = {{"x", x23}}, .expect = {{"y", {0.267261242, 0.534522484, 0.801783726, -0.242535625, 0, 0.9701425}}}});
  cases.push_back({.op = "LpNormalization", .name = "LpNormalization p=1 axis 0 [2,3]",
                   .model = unary("LpNormalization", {2, 3}, [](ModelBuilder& b) { b.attr("p", 1).attr("axis", 0); }),
                   .values = {{"x", x23}}, .expect = {{"y", {0.5, 1, 0.428571429, -0.5, 0, 0.571428571}}}});
  cases.push_back({.op = "LpNormalization", .name = "LpNormalization p=2 axis 1 [2,3,4]",
                   .model = unary("LpNormalization", {2, 3, 4}, [](ModelBuilder& b) { b.attr("axis", 1); })});
  cases.push_back({.op = "LpNormalization", .name = "LpNormalization p=1 axis -1 [2,3,4], signs mixed",
                   .model = unary("LpNormalization", {2, 3, 4}, [](ModelBuilder& b) { b.attr("p", 1); }),
                   .values = {{"x", shifted(kX234, 0.1)}}});
}

void layer_cases(std::vector<KernelCase>& cases) {
  {
    ModelBuilder b;
    b.input("x", {2, 4}).input("s", {4}).input("b", {4}).node("LayerNormalization", {"x", "s", "b"}, {"y"}).output("y");
    cases.push_back({.op = "LayerNormalization", .name = "LayerNorm [2,4]", .model = b,
                     .values = {{"x", {1, 2, 3, 6, -2, 0, 2, 4}}, {"s", {1, 0.5, -1, 2}}, {"b", {0, 1, 0, -1}}},
                     .expect = {{"y", {-1.06904344, 0.73273914, 0, 2.20713032, -1.34163944, 0.776393426, -0.447213148, 1.68327889}}}});
  }
  {
    ModelBuilder b;
    b.input("x", {2, 3, 4}).input("s", {4}).input("b", {4}).node("LayerNormalization", {"x", "s", "b"}, {"y"});
    b.attr_f("epsilon", 1e-3f).output("y");
    cases.push_back({.op = "LayerNormalization", .name = "LayerNorm [2,3,4] last axis, epsilon 1e-3", .model = b});
  }
  {
    ModelBuilder b;
    b.input("x", {2, 3, 4}).input("s", {3, 4}).input("b", {3, 4}).node("LayerNormalization", {"x", "s", "b"}, {"y", "mean", "inv"});
    b.attr("axis", 1).output("y").output("mean").output("inv");
    cases.push_back({.op = "LayerNormalization", .name = "LayerNorm axis 1 with Mean and InvStdDev outputs", .model = b,
                     .values = {{"x", {1, 2, 3, 6, -2, 0, 2, 4, 1, 1, 1, 1, 0, 0, 0, 0, 1, 2, 3, 6, -2, 0, 2, 4}}},
                     .expect = {{"mean", {1.66666667, 1.33333333}}, {"inv", {0.518320359, 0.477333827}}}});
    cases.push_back({.op = "LayerNormalization", .name = "LayerNorm axis 1, gradients through Mean and InvStdDev", .model = b});
  }
  {
    ModelBuilder b;
    b.input("x", {3, 4}).input("s", {4}).node("LayerNormalization", {"x", "s"}, {"y", "mean", "inv"}).output("mean").output("inv");
    cases.push_back({.op = "LayerNormalization", .name = "LayerNorm, only Mean and InvStdDev read (no dY)", .model = b});
  }
  {
    ModelBuilder b;
    b.input("x", {2, 3, 4}).input("s", {4}).node("LayerNormalization", {"x", "s"}, {"y"}).attr("axis", -2).output("y");
    cases.push_back({.op = "LayerNormalization", .name = "LayerNorm axis -2, scale [4] broadcast inside the row, no bias", .model = b});
  }
  {
    ModelBuilder b;
    b.input("x", {3, 5}).input("s0", {5}).input("b", {5}).node("Add", {"s0", "s0"}, {"s"});
    b.node("LayerNormalization", {"x", "s", "b"}, {"y"}).output("y");
    cases.push_back({.op = "LayerNormalization", .name = "LayerNorm with a computed scale (kept as a copy)", .model = b});
  }
}

void group_cases(std::vector<KernelCase>& cases) {
  auto model = [](const std::string& op, const V& x, int64_t params, int64_t groups, float eps) {
    ModelBuilder b(18);
    b.input("x", x).input("s", {params}).input("b", {params}).node(op, {"x", "s", "b"}, {"y"});
    if (groups > 0) b.attr("num_groups", groups);
    if (eps > 0) b.attr_f("epsilon", eps);
    return b.output("y");
  };
  D x24;
  for (int i = 0; i < 24; ++i) x24.push_back(static_cast<double>((i * 7) % 11 - 5));
  cases.push_back({.op = "GroupNormalization", .name = "GroupNorm [2,4,3] 2 groups", .model = model("GroupNormalization", {2, 4, 3}, 4, 2, 0),
                   .values = {{"x", x24}, {"s", {1, -0.5, 2, 0.25}}, {"b", {0.1, 0.2, -0.3, 0.4}}},
                   .expect = {{"y", {-1.29305145, 0.796525723, -0.397518373, -0.596029398, 0.000992650625, 0.598014699,
                                     2.42393842, 0.00265982476, -2.41861877, 0.664827347, 0.362167522, 0.0595076971,
                                     0.386298998, -0.987936193, 1.41697539, 0.2286299, 0.915747495, -0.286708297,
                                     0.272597996, -2.47587239, 2.33395078, 0.38568505, 0.0421262523, 0.643354148}}}});
  cases.push_back({.op = "GroupNormalization", .name = "GroupNorm [2,6,2,2] 3 groups, epsilon 1e-3",
                   .model = model("GroupNormalization", {2, 6, 2, 2}, 6, 3, 1e-3f)});
  cases.push_back({.op = "GroupNormalization", .name = "GroupNorm opset-18 form: scale and bias per group [2]",
                   .model = model("GroupNormalization", {2, 4, 3}, 2, 2, 0)});
  cases.push_back({.op = "InstanceNormalization", .name = "InstanceNorm [2,3,4]", .model = model("InstanceNormalization", {2, 3, 4}, 3, 0, 0),
                   .values = {{"x", x24}, {"s", {1, 2, -1}}, {"b", {0, 0.5, 1}}},
                   .expect = {{"y", {-1.31306388, 0.52522555, -0.52522555, 1.31306388, 0.89999968, -2.29999776,
                                     3.29999776, 0.10000032, 1.72289702, -0.526115937, 0.759034326, 2.04418459,
                                     0.19999984, -1.39999888, 1.39999888, -0.19999984, -0.945794046, 3.55223187,
                                     0.981931349, -1.58836918, -0.0441845886, 1.24096567, 2.52611594, 0.277102977}}}});
  cases.push_back({.op = "InstanceNormalization", .name = "InstanceNorm [2,2,2,3]", .model = model("InstanceNormalization", {2, 2, 2, 3}, 2, 0, 0)});
}

void batch_cases(std::vector<KernelCase>& cases) {
  // outputs: names of the node's outputs; graph outputs: the first `shown` of them.
  auto model = [](const V& x, int64_t opset, int64_t training_mode, const std::vector<std::string>& outputs, size_t shown) {
    ModelBuilder b(opset);
    int64_t ch = x[1];
    b.input("x", x).input("s", {ch}).input("b", {ch}).input("rm", {ch}).input("rv", {ch});
    b.node("BatchNormalization", {"x", "s", "b", "rm", "rv"}, outputs).attr_f("momentum", 0.8f);
    if (training_mode >= 0) b.attr("training_mode", training_mode);
    for (size_t k = 0; k < shown; ++k) b.output(outputs[k]);
    return b;
  };
  D xb;
  for (int i = 0; i < 24; ++i) xb.push_back(static_cast<double>((i * 5) % 13 - 6) / 2);
  const std::map<std::string, D> given = {{"x", xb}, {"s", {1, 2, 0.5}}, {"b", {0, -1, 1}}, {"rm", {0.5, -0.5, 1}}, {"rv", {1, 2, 0.5}}};
  const D train_y = {-1.32550656, -0.0631193598, 1.47248642, -2.92304499, 0.946394461, 1.66113498, -0.315596799, 0.946790398,
                     -3.47248642, -0.725279287, 1.51818688, 0.374602044, 0.694312958, -1.32550656, -1.27472071, 1.47248642,
                     0.231653939, 0.946394461, 1.70422272, -0.315596799, 0.923044993, -3.47248642, 0.803446357, 1.51818688};
  cases.push_back({.op = "BatchNormalization", .name = "BatchNorm training [4,3,2]: batch statistics, PyTorch's running update",
                   .model = model({4, 3, 2}, 15, 1, {"y", "rm_out", "rv_out"}, 3), .values = given,
                   .expect = {{"y", train_y}, {"rm_out", {0.325, -0.45, 0.9375}}, {"rv_out", {1.69642857, 2.35714286, 1.09910714}}},
                   .gradient = false});
  cases.push_back({.op = "BatchNormalization", .name = "BatchNorm opset 12, five outputs (saved mean and biased variance)",
                   .model = model({4, 3, 2}, 12, -1, {"y", "rm_out", "rv_out", "saved_mean", "saved_var"}, 5), .values = given,
                   .expect = {{"y", train_y}, {"rm_out", {0.325, -0.45, 0.9375}}, {"rv_out", {1.69642857, 2.35714286, 1.09910714}},
                              {"saved_mean", {-0.375, -0.25, 0.6875}}, {"saved_var", {3.921875, 3.3125, 3.05859375}}},
                   .gradient = false});
  cases.push_back({.op = "BatchNormalization", .name = "BatchNorm inference [4,3,2]: running statistics",
                   .model = model({4, 3, 2}, 15, -1, {"y"}, 1), .values = given,
                   .expect = {{"y", {-3.4999825, -0.999995, 2.53552507, -3.12131504, 0.646450145, 2.41419942, -1.4999925, 0.999995,
                                     -3.82842005, -0.292894987, 2.06064957, -0.767749276, 0.4999975, -3.4999825, -1, 2.53552507,
                                     -1.12129913, 0.646450145, 2.4999875, -1.4999925, 1.82842005, -3.82842005, 0.29290029, 2.06064957}}}});
  const std::map<std::string, std::pair<double, double>> var_range = {{"rv", {0.5, 1.5}}};
  cases.push_back({.op = "BatchNormalization", .name = "BatchNorm training [3,2,2,2], gradients",
                   .model = model({3, 2, 2, 2}, 15, 1, {"y", "rm_out", "rv_out"}, 1), .ranges = var_range});
  cases.push_back({.op = "BatchNormalization", .name = "BatchNorm training [5,3] (no spatial axes)",
                   .model = model({5, 3}, 15, 1, {"y", "rm_out", "rv_out"}, 1), .ranges = var_range});
  cases.push_back({.op = "BatchNormalization", .name = "BatchNorm inference [3,2,4], gradients",
                   .model = model({3, 2, 4}, 15, -1, {"y"}, 1), .ranges = var_range});
}

void reduce_cases(std::vector<KernelCase>& cases) {
  // ReduceX(x [2,3,4]) with axes as an attribute (axes_input false) or as a constant input.
  auto model = [](const std::string& op, const V& axes, int64_t keepdims, bool axes_input = false, int64_t opset = 17) {
    ModelBuilder b(opset);
    b.input("x", {2, 3, 4});
    if (axes_input) b.ints("axes", axes).node(op, {"x", "axes"}, {"y"});
    else b.node(op, {"x"}, {"y"});
    if (!axes_input && !axes.empty()) b.attr("axes", axes);
    return b.attr("keepdims", keepdims).output("y");
  };
  auto expect = [&](const std::string& op, const std::string& what, ModelBuilder b, D want) {
    cases.push_back({.op = op, .name = op + " " + what, .model = b, .values = {{"x", kX234}}, .expect = {{"y", want}}});
  };
  expect("ReduceSum", "axes input [1], keepdims 0", model("ReduceSum", {1}, 0, true, 13), {-6, -0.75, 4.5, -2.25, 3, 2.25, -4.5, 0.75});
  expect("ReduceMean", "axes [0,2], keepdims 1", model("ReduceMean", {0, 2}, 1), {-0.375, -0.125, 0.125});
  expect("ReduceProd", "axes [-1] (a zero in one row)", model("ReduceProd", {-1}, 0), {4.21875, -2.0625, 3.28125, 0, -1.03125, 2.8125});
  expect("ReduceMax", "axes [1]", model("ReduceMax", {1}, 0), {-1, 0.75, 2.5, 2.25, 2, 2.75, -0.5, 1.25});
  expect("ReduceMin", "all axes", model("ReduceMin", {}, 0), {-3});
  expect("ReduceL1", "axes [2]", model("ReduceL1", {2}, 0), {7, 6.5, 6, 5, 5.5, 6});
  expect("ReduceL2", "axes [0]", model("ReduceL2", {0}, 0),
         {3, 2.15058132, 2.54950976, 2.37170825, 2.23606798, 2.76134025, 2.12132034, 2.76134025, 2.23606798, 2.37170825, 2.54950976, 2.15058132});
  expect("ReduceSumSquare", "axes [1,2]", model("ReduceSumSquare", {1, 2}, 0), {40.625, 31.625});
  expect("ReduceLogSumExp", "axes [-1]", model("ReduceLogSumExp", {-1}, 0), {2.43997457, 1.69740355, 2.69740355, 1.98911388, 2.98911388, 2.45025731});
  {
    ModelBuilder b = unary("ReduceMax", {2, 3}, [](ModelBuilder& m) { m.attr("axes", V{1}).attr("keepdims", 0); });
    cases.push_back({.op = "ReduceMax", .name = "ReduceMax with ties", .model = b, .values = {{"x", {1, 3, 3, 2, 2, 2}}},
                     .expect = {{"y", {3, 2}}}, .gradient = false});
  }
  {
    ModelBuilder b(13);
    b.input("x", {2, 3, 4}).ints("axes", {}).node("ReduceSum", {"x", "axes"}, {"y"}).attr("noop_with_empty_axes", 1).output("y");
    cases.push_back({.op = "ReduceSum", .name = "ReduceSum noop_with_empty_axes, empty axes input", .model = b,
                     .values = {{"x", kX234}}, .expect = {{"y", kX234}}});
  }
  auto grad = [&](const std::string& op, const std::string& what, ModelBuilder b, D x = {}) {
    KernelCase c{.op = op, .name = op + " " + what + ", gradients", .model = b};
    if (!x.empty()) c.values = {{"x", x}};
    cases.push_back(c);
  };
  grad("ReduceSum", "axes input [0,2] (not one run), keepdims 1", model("ReduceSum", {0, 2}, 1, true, 13));
  grad("ReduceSum", "all axes", model("ReduceSum", {}, 0));
  grad("ReduceMean", "axes [-2] (strided groups), keepdims 0", model("ReduceMean", {-2}, 0));
  grad("ReduceMean", "axes input [2,0], opset 18", model("ReduceMean", {2, 0}, 0, true, 18));
  grad("ReduceProd", "axes [1], a zero in one group", model("ReduceProd", {1}, 1), kX234);
  grad("ReduceMax", "axes [0,2]", model("ReduceMax", {0, 2}, 0), kX234);
  grad("ReduceMin", "axes [-1], keepdims 1", model("ReduceMin", {-1}, 1), kX234);
  grad("ReduceMin", "all axes", model("ReduceMin", {}, 1), kX234);
  grad("ReduceL1", "axes [1]", model("ReduceL1", {1}, 0), shifted(kX234, 0.1));
  grad("ReduceL2", "axes input [-1], opset 18", model("ReduceL2", {-1}, 1, true, 18));
  grad("ReduceSumSquare", "axes [0], keepdims 1", model("ReduceSumSquare", {0}, 1));
  grad("ReduceLogSumExp", "axes input [1,2], opset 18", model("ReduceLogSumExp", {1, 2}, 0, true, 18));
  {
    ModelBuilder b = unary("ReduceProd", {2, 3}, [](ModelBuilder& m) { m.attr("axes", V{1}); });
    cases.push_back({.op = "ReduceProd", .name = "ReduceProd, two zeros in a group", .model = b, .values = {{"x", {0, 0, 1, 0.5, -2, 3}}}});
  }
}

void select_cases(std::vector<KernelCase>& cases) {
  const D ties = {1, 3, 3, 2, 2, 2};
  auto arg = [](const std::string& op, const V& shape, int64_t axis, int64_t keepdims, int64_t last) {
    return unary(op, shape, [=](ModelBuilder& b) { b.attr("axis", axis).attr("keepdims", keepdims).attr("select_last_index", last); });
  };
  cases.push_back({.op = "ArgMax", .name = "ArgMax axis 1, keepdims", .model = arg("ArgMax", {2, 3, 4}, 1, 1, 0),
                   .values = {{"x", kX234}}, .expect = {{"y", {2, 2, 2, 0, 2, 1, 2, 2}}}, .gradient = false});
  cases.push_back({.op = "ArgMax", .name = "ArgMax ties: first", .model = arg("ArgMax", {2, 3}, 1, 0, 0), .values = {{"x", ties}},
                   .expect = {{"y", {1, 0}}}, .gradient = false});
  cases.push_back({.op = "ArgMax", .name = "ArgMax ties: select_last_index", .model = arg("ArgMax", {2, 3}, -1, 0, 1),
                   .values = {{"x", ties}}, .expect = {{"y", {2, 2}}}, .gradient = false});
  cases.push_back({.op = "ArgMin", .name = "ArgMin axis 2", .model = arg("ArgMin", {2, 3, 4}, 2, 0, 0), .values = {{"x", kX234}},
                   .expect = {{"y", {0, 3, 3, 2, 2, 1}}}, .gradient = false});
  cases.push_back({.op = "ArgMin", .name = "ArgMin axis 0, ties", .model = arg("ArgMin", {2, 3}, 0, 1, 0), .values = {{"x", ties}},
                   .expect = {{"y", {0, 1, 1}}}, .gradient = false});

  auto topk = [](const V& shape, int64_t k, int64_t axis, int64_t largest) {
    ModelBuilder b;
    b.input("x", shape).ints("k", {k}).node("TopK", {"x", "k"}, {"values", "indices"}).attr("axis", axis).attr("largest", largest);
    return b.output("values").output("indices");
  };
  const D xt = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3};
  cases.push_back({.op = "TopK", .name = "TopK k=3 of [2,5]", .model = topk({2, 5}, 3, -1, 1), .values = {{"x", xt}},
                   .expect = {{"values", {5, 4, 3, 9, 6, 5}}, {"indices", {4, 2, 0, 0, 2, 3}}}});
  cases.push_back({.op = "TopK", .name = "TopK smallest, axis 0", .model = topk({2, 5}, 1, 0, 0), .values = {{"x", xt}},
                   .expect = {{"values", {3, 1, 4, 1, 3}}, {"indices", {0, 0, 0, 0, 1}}}});
  cases.push_back({.op = "TopK", .name = "TopK equal values in index order", .model = topk({1, 4}, 2, 1, 1), .values = {{"x", {2, 1, 2, 2}}},
                   .expect = {{"values", {2, 2}}, {"indices", {0, 2}}}, .gradient = false});
  cases.push_back({.op = "TopK", .name = "TopK k=2 along axis 1 of [2,3,4]", .model = topk({2, 3, 4}, 2, 1, 1), .values = {{"x", kX234}}});

  auto cumsum = [](const V& shape, int64_t axis, int64_t exclusive, int64_t reverse, int elem_type = 1) {
    ModelBuilder b;
    b.input("x", shape, elem_type).ints("axis", {axis}, {}).node("CumSum", {"x", "axis"}, {"y"});
    return b.attr("exclusive", exclusive).attr("reverse", reverse).output("y");
  };
  const D xc = {1, 2, 3, 4, 5, 6};
  cases.push_back({.op = "CumSum", .name = "CumSum axis 1", .model = cumsum({2, 3}, 1, 0, 0), .values = {{"x", xc}},
                   .expect = {{"y", {1, 3, 6, 4, 9, 15}}}});
  cases.push_back({.op = "CumSum", .name = "CumSum axis 0, exclusive, reverse", .model = cumsum({2, 3}, 0, 1, 1), .values = {{"x", xc}},
                   .expect = {{"y", {4, 5, 6, 0, 0, 0}}}});
  cases.push_back({.op = "CumSum", .name = "CumSum int64", .model = cumsum({2, 3}, -1, 0, 0, 7), .values = {{"x", xc}},
                   .expect = {{"y", {1, 3, 6, 4, 9, 15}}}, .gradient = false});
  cases.push_back({.op = "CumSum", .name = "CumSum [2,3,4] axis -1, exclusive", .model = cumsum({2, 3, 4}, -1, 1, 0)});
  cases.push_back({.op = "CumSum", .name = "CumSum [2,3,4] axis 1, reverse", .model = cumsum({2, 3, 4}, 1, 0, 1)});
}

// Shapes big enough that every parallel_for of the kernels splits into chunks over the harness's
// two threads (rows of ~16K elements per chunk; columns of LayerNorm's parameter sums by 256).
void chunked_cases(std::vector<KernelCase>& cases) {
  cases.push_back({.op = "Softmax", .name = "Softmax [64,300], rows over two threads",
                   .model = unary("Softmax", {64, 300}, [](ModelBuilder& b) { b.attr("axis", -1); }), .range = {-4, 4}});
  cases.push_back({.op = "LogSoftmax", .name = "LogSoftmax [16,40,30] axis 1, strided rows over two threads",
                   .model = unary("LogSoftmax", {16, 40, 30}, [](ModelBuilder& b) { b.attr("axis", 1); })});
  {
    ModelBuilder b;
    b.input("x", {40, 600}).input("s", {600}).input("b", {600}).node("LayerNormalization", {"x", "s", "b"}, {"y"}).output("y");
    cases.push_back({.op = "LayerNormalization", .name = "LayerNorm [40,600], rows and parameter columns over two threads", .model = b});
  }
  cases.push_back({.op = "ReduceMean", .name = "ReduceMean [64,400] axes [-1], groups over two threads",
                   .model = unary("ReduceMean", {64, 400}, [](ModelBuilder& b) { b.attr("axes", V{-1}); })});
  cases.push_back({.op = "ReduceSumSquare", .name = "ReduceSumSquare [8,300,16] axes [1], strided lines over two threads",
                   .model = unary("ReduceSumSquare", {8, 300, 16}, [](ModelBuilder& b) { b.attr("axes", V{1}).attr("keepdims", 0); })});
  cases.push_back({.op = "CumSum", .name = "CumSum [40,500], rows over two threads", .model = [] {
                     ModelBuilder b;
                     b.input("x", {40, 500}).ints("axis", {-1}, {}).node("CumSum", {"x", "axis"}, {"y"});
                     return b.output("y");
                   }()});
  // Rows of small values with a 100 and a 90 at known places: TopK's 2 and ArgMax stay put under
  // the finite differences' perturbation.
  D x(40 * 500), top_values, top_indices, argmax;
  for (int64_t r = 0; r < 40; ++r) {
    for (int64_t j = 0; j < 500; ++j) x[static_cast<size_t>(r * 500 + j)] = static_cast<double>((r * 31 + j * 17) % 101) / 101.0;
    int64_t first = (r * 13) % 500, second = (r * 13 + 250) % 500;
    x[static_cast<size_t>(r * 500 + first)] = 100;
    x[static_cast<size_t>(r * 500 + second)] = 90;
    top_values.insert(top_values.end(), {100, 90});
    top_indices.insert(top_indices.end(), {static_cast<double>(first), static_cast<double>(second)});
    argmax.push_back(static_cast<double>(first));
  }
  {
    ModelBuilder b;
    b.input("x", {40, 500}).ints("k", {2}).node("TopK", {"x", "k"}, {"values", "indices"}).output("values").output("indices");
    cases.push_back({.op = "TopK", .name = "TopK [40,500] k=2, rows over two threads", .model = b, .values = {{"x", x}},
                     .expect = {{"values", top_values}, {"indices", top_indices}}});
  }
  cases.push_back({.op = "ArgMax", .name = "ArgMax [40,500], rows over two threads",
                   .model = unary("ArgMax", {40, 500}, [](ModelBuilder& b) { b.attr("axis", 1).attr("keepdims", 0); }),
                   .values = {{"x", x}}, .expect = {{"y", argmax}}, .gradient = false});
}

// A model imported and ready to run forward, every input, parameter, buffer and constant all 1.
struct Ones {
  explicit Ones(const ModelBuilder& b) : g(import_onnx_bytes(b.bytes(), "ones", {})) {
    for (size_t t = 0; t < g.tensors.size(); ++t) {
      const Tensor& x = g.tensors[t];
      if (x.producer < 0 && x.kind != TensorKind::Input && x.kind != TensorKind::Activation) {
        state[static_cast<int>(t)] = ones(x, runtime::MemoryKind::Parameters);
      }
    }
  }
  runtime::Array ones(const Tensor& x, runtime::MemoryKind kind) {
    runtime::Array a(x.dtype, x.shape, backend.allocator(), kind);
    backend.fill(a, 1.0);
    return a;
  }
  // One training-mode forward: the graph outputs.
  std::vector<runtime::Array> forward() {
    std::vector<runtime::Array> in;
    for (int t : g.inputs) in.push_back(ones(g.tensors[static_cast<size_t>(t)], runtime::MemoryKind::Inputs));
    runtime::Executor ex(g, backend, state);
    return ex.forward(in, runtime::StepContext{&backend.allocator(), true, 0, 1, 1});
  }
  // The message of the InputError forward() raises, or "".
  std::string error() {
    try {
      forward();
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  }

  Graph g;
  runtime::cpu::CpuBackend backend{1};
  std::map<int, runtime::Array> state;
};

}  // namespace

std::vector<KernelCase> norm_cases() {
  std::vector<KernelCase> cases;
  axis_cases(cases);
  layer_cases(cases);
  group_cases(cases);
  batch_cases(cases);
  reduce_cases(cases);
  select_cases(cases);
  chunked_cases(cases);
  return cases;
}

TEST_CASE("kernels: norm forward and backward") {
  for (const KernelCase& c : norm_cases()) check_kernel(c);
}

TEST_CASE("kernels: norm kernels refuse what they do not implement") {
  auto refused = [](const ModelBuilder& b, const std::string& part) {
    std::string what = Ones(b).error();
    CAPTURE(what);
    CHECK(what.find(part) != std::string::npos);
  };
  refused(unary("Softmax", {2, 3, 4}, none, 11), "no axis attribute");
  refused(unary("LpNormalization", {2, 3}, [](ModelBuilder& b) { b.attr("p", 3); }), "p = 3");
  {
    ModelBuilder b;
    b.input("x", {2, 4}).input("s", {4}).node("LayerNormalization", {"x", "s"}, {"y"}).attr("stash_type", 11).output("y");
    refused(b, "stash_type");
  }
  {
    ModelBuilder b(18);
    b.input("x", {2, 4, 3}).input("s", {3}).input("b", {3}).node("GroupNormalization", {"x", "s", "b"}, {"y"}).attr("num_groups", 2);
    refused(b.output("y"), "one per channel");
  }
  {
    ModelBuilder b(9);
    b.input("x", {2, 3}).input("s", {3}).input("b", {3}).input("m", {3}).input("v", {3});
    b.node("BatchNormalization", {"x", "s", "b", "m", "v"}, {"y"}).attr("spatial", 0).output("y");
    refused(b, "spatial");
  }
}

TEST_CASE("kernels: BatchNormalization updates its running statistics in training steps") {
  ModelBuilder b(15);
  b.input("x", {2, 1}).input("s", {1}).input("b", {1}).input("rm", {1}).input("rv", {1});
  b.node("BatchNormalization", {"x", "s", "b", "rm", "rv"}, {"y", "rm_out", "rv_out"}).attr("training_mode", 1);
  b.attr_f("momentum", 0.75f).output("y").output("rm_out");
  Ones run(b);
  // Batch [1, 1]: mean 1, unbiased variance 0; the buffers start at 1 and 1.
  CHECK(run.forward()[1].data<float>()[0] == doctest::Approx(1.0));
  int rv = run.g.find("rv");
  CHECK(run.state.at(rv).data<float>()[0] == doctest::Approx(0.75));
  run.forward();
  CHECK(run.state.at(rv).data<float>()[0] == doctest::Approx(0.5625));
}

}  // namespace tensoropt::test
