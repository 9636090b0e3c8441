// Shape subgraphs fold to constants; what remains is compute ops whose shapes are static.
#include <doctest/doctest.h>

#include <limits>

#include "graph/error.h"
#include "graph/import.h"
#include "tests/onnx_builder.h"

namespace tensoropt {
namespace {

using test::ModelBuilder;

std::vector<std::string> op_types(const Graph& g) {
  std::vector<std::string> v;
  for (const Node& n : g.nodes) v.push_back(n.op_type);
  return v;
}

const Tensor& tensor(const Graph& g, const std::string& name) {
  int t = g.find(name);
  REQUIRE_MESSAGE(t >= 0, name);
  return g.tensors[static_cast<size_t>(t)];
}

Graph import(const ModelBuilder& b, int64_t batch) { return import_onnx_bytes(b.bytes(), "test.onnx", {.batch = batch}); }

}  // namespace

TEST_CASE("Reshape target built from Shape/Gather/Unsqueeze/Concat folds away") {
  ModelBuilder b;
  b.input("x", {-1, 12, 64})
      .ints("zero", {0}, {})
      .ints("hidden", {768})
      .node("Shape", {"x"}, {"s"})
      .node("Gather", {"s", "zero"}, {"n"}).attr("axis", 0)
      .ints("axes0", {0})
      .node("Unsqueeze", {"n", "axes0"}, {"n1"})
      .node("Concat", {"n1", "hidden"}, {"target"}).attr("axis", 0)
      .node("Reshape", {"x", "target"}, {"y"})
      .output("y");
  Graph g = import(b, 4);
  CHECK(op_types(g) == std::vector<std::string>{"Reshape"});
  CHECK(tensor(g, "y").shape == Shape{4, 768});
  CHECK(tensor(g, "target").value->ints == std::vector<int64_t>{4, 768});
  CHECK(tensor(g, "y").batch_axis == 0);
}

TEST_CASE("Range over a shape value, then an embedding Gather") {
  ModelBuilder b;
  b.input("tokens", {-1, 10}, /*elem_type=*/7)
      .input("pos_table", {32, 16})
      .ints("one", {1}, {})
      .ints("zero", {0}, {})
      .node("Shape", {"tokens"}, {"s"})
      .node("Gather", {"s", "one"}, {"t"}).attr("axis", 0)
      .node("Range", {"zero", "t", "one"}, {"pos"})
      .node("Gather", {"pos_table", "pos"}, {"emb"}).attr("axis", 0)
      .output("emb");
  Graph g = import(b, 3);
  CHECK(op_types(g) == std::vector<std::string>{"Gather"});
  CHECK(tensor(g, "pos").value->ints == std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  CHECK(tensor(g, "emb").shape == Shape{10, 16});
  CHECK(tensor(g, "pos_table").kind == TensorKind::Parameter);
  CHECK(tensor(g, "tokens").kind == TensorKind::Input);
}

TEST_CASE("Slice clamps INT64 extremes and handles negative steps") {
  const int64_t big = std::numeric_limits<int64_t>::max(), small = std::numeric_limits<int64_t>::min();
  ModelBuilder b;
  b.input("x", {-1, 10, 8})
      .ints("s1", {-3}).ints("e1", {big}).ints("a1", {1})
      .node("Slice", {"x", "s1", "e1", "a1"}, {"y"})
      .ints("s2", {-1}).ints("e2", {small}).ints("a2", {2}).ints("st2", {-2})
      .node("Slice", {"y", "s2", "e2", "a2", "st2"}, {"z"})
      .output("z");
  Graph g = import(b, 2);
  CHECK(tensor(g, "y").shape == Shape{2, 3, 8});
  CHECK(tensor(g, "z").shape == Shape{2, 3, 4});
}

TEST_CASE("the PyTorch expand(-1) pattern: Equal/Where/ConstantOfShape feed Expand") {
  ModelBuilder b;
  b.input("x", {-1, 4, 8})
      .input("cls", {1, 1, 8})
      .ints("zero", {0}, {})
      .ints("axes0", {0})
      .ints("minus", {-1, -1})
      .ints("three", {3})
      .ints("neg3", {-1, -1, -1})
      .node("Shape", {"x"}, {"s"})
      .node("Gather", {"s", "zero"}, {"n"}).attr("axis", 0)
      .node("Unsqueeze", {"n", "axes0"}, {"n1"})
      .node("Concat", {"n1", "minus"}, {"want"}).attr("axis", 0)
      .floats("one", {1}, 1.0f)
      .node("ConstantOfShape", {"three"}, {"zeros"})
      .node("Add", {"zeros", "one"}, {"ones"})
      .node("Equal", {"want", "neg3"}, {"eq"})
      .node("Cast", {"ones"}, {"ones64"}).attr("to", 7)
      .node("Where", {"eq", "ones64", "want"}, {"shape"})
      .node("Expand", {"cls", "shape"}, {"cls_b"})
      .node("Concat", {"cls_b", "x"}, {"y"}).attr("axis", 1)
      .output("y");
  Graph g = import(b, 5);
  CHECK(op_types(g) == std::vector<std::string>{"Expand", "Concat"});
  CHECK(tensor(g, "shape").value->ints == std::vector<int64_t>{5, 1, 1});
  CHECK(tensor(g, "y").shape == Shape{5, 5, 8});
  CHECK(tensor(g, "y").batch_axis == 0);
  CHECK(tensor(g, "cls").kind == TensorKind::Parameter);
}

TEST_CASE("attention scale 1/sqrt(head_dim) computed from a shape folds to a float constant") {
  ModelBuilder b;
  b.input("q", {-1, 12, 64})
      .ints("last", {-1}, {})
      .floats("one", {}, 1.0f)
      .node("Shape", {"q"}, {"s"})
      .node("Gather", {"s", "last"}, {"d"}).attr("axis", 0)
      .node("Cast", {"d"}, {"df"}).attr("to", 1)
      .node("Sqrt", {"df"}, {"r"})
      .node("Div", {"one", "r"}, {"scale"})
      .node("Mul", {"q", "scale"}, {"y"})
      .output("y");
  Graph g = import(b, 2);
  CHECK(op_types(g) == std::vector<std::string>{"Mul"});
  REQUIRE(tensor(g, "scale").value);
  CHECK(tensor(g, "scale").value->reals.at(0) == doctest::Approx(0.125));
}

TEST_CASE("a shape that depends on data is refused, naming the node and the tensor") {
  ModelBuilder b;
  b.input("x", {-1, 6})
      .input("target", {2}, /*elem_type=*/7)
      .node("Reshape", {"x", "target"}, {"y"}, "the_reshape")
      .output("y");
  try {
    import(b, 2);
    FAIL("expected an InputError");
  } catch (const InputError& e) {
    std::string what = e.what();
    CHECK(what.find("test.onnx") != std::string::npos);
    CHECK(what.find("the_reshape") != std::string::npos);
    CHECK(what.find("'target'") != std::string::npos);
  }
}

TEST_CASE("nodes no output depends on are dropped") {
  ModelBuilder b;
  b.input("x", {-1, 4})
      .node("Relu", {"x"}, {"y"})
      .node("Sigmoid", {"x"}, {"unused"})
      .output("y");
  Graph g = import(b, 2);
  CHECK(op_types(g) == std::vector<std::string>{"Relu"});
}

TEST_CASE("--batch re-specialises a batch axis the export made static") {
  ModelBuilder b;
  b.input("x", {2, 8})
      .floats("w", {4, 8})
      .floats("bias", {4})
      .node("Gemm", {"x", "w", "bias"}, {"y"}).attr("transB", 1)
      .output("y");
  CHECK(tensor(import_onnx_bytes(b.bytes(), "t.onnx"), "y").shape == Shape{2, 4});
  CHECK(tensor(import(b, 6), "y").shape == Shape{6, 4});
  Graph g = import(b, 6);
  CHECK(tensor(g, "w").kind == TensorKind::Parameter);
  CHECK(tensor(g, "x").kind == TensorKind::Input);
}

TEST_CASE("BatchNormalization running statistics are buffers, its scale and bias parameters") {
  ModelBuilder b;
  b.input("x", {-1, 3, 8, 8})
      .input("w", {4, 3, 3, 3})
      .input("gamma", {4}).input("beta", {4}).input("mean", {4}).input("var", {4})
      .node("Conv", {"x", "w"}, {"c"}).attr("pads", std::vector<int64_t>{1, 1, 1, 1})
      .node("BatchNormalization", {"c", "gamma", "beta", "mean", "var"}, {"bn", "rm", "rv"}).attr("training_mode", 1)
      .output("bn");
  Graph g = import(b, 2);
  CHECK(tensor(g, "w").kind == TensorKind::Parameter);
  CHECK(tensor(g, "gamma").kind == TensorKind::Parameter);
  CHECK(tensor(g, "mean").kind == TensorKind::Buffer);
  CHECK(tensor(g, "var").kind == TensorKind::Buffer);
  CHECK(tensor(g, "bn").shape == Shape{2, 4, 8, 8});
}

}  // namespace tensoropt

namespace tensoropt {

// GELU as the PyTorch exporter spells it: 0.5 · x · (1 + erf(x / √2)), ending in tensor "gelu".
ModelBuilder erf_gelu() {
  ModelBuilder b;
  b.input("x", {-1, 8})
      .floats("sqrt2", {}, 1.41421356f).floats("one", {}, 1.0f).floats("half", {}, 0.5f)
      .node("Div", {"x", "sqrt2"}, {"d"})
      .node("Erf", {"d"}, {"e"})
      .node("Add", {"e", "one"}, {"a"})
      .node("Mul", {"x", "a"}, {"m"})
      .node("Mul", {"m", "half"}, {"gelu"});
  return b;
}

TEST_CASE("exported GELU (Div, Erf, Add, Mul, Mul) and SiLU (Sigmoid, Mul) fuse into one op") {
  ModelBuilder b = erf_gelu();
  b.node("Sigmoid", {"gelu"}, {"s"}).node("Mul", {"gelu", "s"}, {"silu"}).output("silu");
  Graph g = import(b, 2);
  CHECK(op_types(g) == std::vector<std::string>{"Gelu", "Silu"});
  CHECK(tensor(g, "silu").shape == Shape{2, 8});
}

TEST_CASE("a GELU whose intermediate is read elsewhere stays unfused") {
  ModelBuilder b = erf_gelu();
  b.output("gelu").output("e");
  CHECK(op_types(import(b, 2)).size() == 5);
}

}  // namespace tensoropt

namespace tensoropt {

TEST_CASE("Flatten with a negative axis counts from the back, as ONNX's own inference does") {
  for (auto [axis, want] : {std::pair<int64_t, Shape>{-1, {6, 4}}, {-3, {1, 24}}, {0, {1, 24}}, {3, {24, 1}}}) {
    CAPTURE(axis);
    test::ModelBuilder b;
    b.input("x", {2, 3, 4}).node("Flatten", {"x"}, {"y"}).attr("axis", axis).output("y");
    Graph g = import_onnx_bytes(b.bytes(), "flatten.onnx", {});  // with ONNX's cross-check
    CHECK(g.tensors[static_cast<size_t>(g.find("y"))].shape == want);
  }
  test::ModelBuilder b;
  b.input("x", {2, 3, 4}).node("Flatten", {"x"}, {"y"}).attr("axis", int64_t{-4}).output("y");
  CHECK_THROWS_WITH_AS(import_onnx_bytes(b.bytes(), "flatten.onnx", {}), doctest::Contains("out of range"), InputError);
}

}  // namespace tensoropt
