// Fixed-batch exports planned at another batch (graph/rebatch.h): the batch written into shape
// constants is found and rewritten, every tensor checked, or the model refused with advice.
#include <doctest/doctest.h>

#include "graph/error.h"
#include "graph/import.h"
#include "tests/onnx_builder.h"

namespace tensoropt {
namespace {

using test::ModelBuilder;

const Tensor& tensor(const Graph& g, const std::string& name) {
  int t = g.find(name);
  REQUIRE_MESSAGE(t >= 0, name);
  return g.tensors[static_cast<size_t>(t)];
}

Graph import(const ModelBuilder& b, std::optional<int64_t> batch) {
  return import_onnx_bytes(b.bytes(), "fixed.onnx", {.batch = batch});
}

// view(B, T, h, d) then transpose(1, 2): the target holds the batch, at `b0` or copied (0).
ModelBuilder heads(int64_t b0, std::vector<int64_t> target) {
  ModelBuilder b;
  b.input("x", {b0, 4, 8}).ints("target", std::move(target))
      .node("Reshape", {"x", "target"}, {"y"})
      .node("Transpose", {"y"}, {"z"}).attr("perm", std::vector<int64_t>{0, 2, 1, 3})
      .output("z");
  return b;
}

std::string refusal(const ModelBuilder& b, int64_t batch) {
  try {
    import(b, batch);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("rebatch: a Reshape to a baked [B0,T,h,d] is rewritten, as a dynamic export would be") {
  Graph fixed = import(heads(2, {2, 4, 2, 4}), 5);
  Graph dynamic = import(heads(-1, {0, 4, 2, 4}), 5);
  CHECK(tensor(fixed, "y").shape == Shape{5, 4, 2, 4});
  CHECK(tensor(fixed, "z").shape == Shape{5, 2, 4, 4});
  CHECK(tensor(fixed, "z").batch_axis == 0);
  for (const char* name : {"x", "y", "z"}) CHECK(tensor(fixed, name).shape == tensor(dynamic, name).shape);
  CHECK(fixed.batch == 5);
  // At its own batch nothing is rewritten, and without --batch the export's batch is used.
  CHECK(tensor(import(heads(2, {2, 4, 2, 4}), 2), "z").shape == Shape{2, 2, 4, 4});
  CHECK(import(heads(2, {2, 4, 2, 4}), std::nullopt).batch == 2);
}

TEST_CASE("rebatch: reshape(B, T, -1) keeps the batch on axis 0 instead of absorbing it") {
  ModelBuilder b;
  b.input("x", {2, 4, 2, 4}).ints("target", {2, 4, -1})
      .node("Reshape", {"x", "target"}, {"y"})
      .output("y");
  CHECK(tensor(import(b, 6), "y").shape == Shape{6, 4, 8});
}

TEST_CASE("rebatch: a batch merged into another axis, outermost ([B*T, C]) or not ([T*B, C])") {
  ModelBuilder b;
  b.input("x", {2, 4, 8}).floats("w", {8, 16})
      .ints("flat", {8, 8}).ints("back", {2, 4, 16})
      .node("Reshape", {"x", "flat"}, {"x2"})
      .node("MatMul", {"x2", "w"}, {"h"})
      .node("Reshape", {"h", "back"}, {"y"})
      // sequence-first, as nn.MultiheadAttention works inside: [T, B, C] -> [T*B, C] -> [T, B, C]
      .ints("perm_flat", {8, 16}).ints("perm_back", {4, 2, 16})
      .node("Transpose", {"y"}, {"t"}).attr("perm", std::vector<int64_t>{1, 0, 2})
      .node("Reshape", {"t", "perm_flat"}, {"t2"})
      .node("Relu", {"t2"}, {"r"})
      .node("Reshape", {"r", "perm_back"}, {"t3"})
      .node("Transpose", {"t3"}, {"out"}).attr("perm", std::vector<int64_t>{1, 0, 2})
      .output("out");
  Graph g = import(b, 3);
  CHECK(tensor(g, "x2").shape == Shape{12, 8});
  CHECK(tensor(g, "y").shape == Shape{3, 4, 16});
  CHECK(tensor(g, "t2").shape == Shape{12, 16});
  CHECK(tensor(g, "t3").shape == Shape{4, 3, 16});
  CHECK(tensor(g, "out").shape == Shape{3, 4, 16});
}

TEST_CASE("rebatch: a class token expanded to [B0,1,d] and a Tile to the batch follow the batch") {
  ModelBuilder b;
  b.input("x", {2, 4, 8}).floats("cls", {1, 1, 8}).floats("reg", {1, 1, 8})
      .ints("shape", {2, 1, 8}).ints("reps", {2, 1, 1})
      .node("Expand", {"cls", "shape"}, {"cls_b"})
      .node("Tile", {"reg", "reps"}, {"reg_b"})
      .node("Concat", {"cls_b", "reg_b", "x"}, {"y"}).attr("axis", 1)
      .output("y");
  Graph g = import(b, 6);
  CHECK(tensor(g, "cls_b").shape == Shape{6, 1, 8});
  CHECK(tensor(g, "reg_b").shape == Shape{6, 1, 8});
  CHECK(tensor(g, "y").shape == Shape{6, 6, 8});
  CHECK(tensor(g, "cls").kind == TensorKind::Parameter);
}

TEST_CASE("rebatch: a batch-1 export, whose batch axis has size 1, re-batches to any batch") {
  Graph g = import(heads(1, {1, 4, 2, 4}), 3);
  CHECK(tensor(g, "y").shape == Shape{3, 4, 2, 4});
  CHECK(tensor(g, "z").shape == Shape{3, 2, 4, 4});
}

TEST_CASE("rebatch: at batch 1, a mask of the model's own that broadcasts against the batch is not the batch") {
  // nanoGPT at a fixed batch of 1: its causal mask, a buffer sliced to [1, 1, T, T], meets the
  // scores [B0, h, T, T] with an axis 0 of the same size 1. It does not depend on the data, so
  // that 1 is a broadcast, not the batch; the class token expanded from a shape operand (above)
  // still follows the batch, and so does a mask built from the data.
  ModelBuilder b;
  b.input("x", {1, 2, 3, 3}).floats("mask", {1, 1, 3, 3}).floats("zero", {1})
      .node("Equal", {"mask", "zero"}, {"masked"})
      .node("Where", {"masked", "zero", "x"}, {"y"})
      .node("Add", {"y", "mask"}, {"z"})
      .output("z");
  Graph g = import(b, 4);
  CHECK(tensor(g, "masked").shape == Shape{1, 1, 3, 3});
  CHECK(tensor(g, "y").shape == Shape{4, 2, 3, 3});
  CHECK(tensor(g, "z").shape == Shape{4, 2, 3, 3});
  CHECK(tensor(g, "z").batch_axis == 0);
}

TEST_CASE("rebatch: what cannot be re-batched is refused with the export's batch and the fix") {
  SUBCASE("a weight-sized tensor of the export's batch added to the data") {
    ModelBuilder b;
    b.input("x", {2, 4, 8}).floats("bias", {2, 4, 8})
        .node("Add", {"x", "bias"}, {"y"})
        .output("y");
    std::string e = refusal(b, 5);
    CHECK(e.find("fixed.onnx") == 0);
    CHECK(e.find("fixed batch of 2") != std::string::npos);
    CHECK(e.find("dynamic_axes={'x': {0: 'batch'}") != std::string::npos);
    CHECK(e.find("--batch 2") != std::string::npos);
  }
  SUBCASE("a reshape that splits the batch across axes cannot say where the batch went") {
    ModelBuilder b;
    b.input("x", {2, 3, 8}).ints("mix", {3, 16}).ints("back", {2, 3, 8})
        .node("Reshape", {"x", "mix"}, {"m"})
        .node("Relu", {"m"}, {"r"})
        .node("Reshape", {"r", "back"}, {"y"})
        .output("y");
    std::string e = refusal(b, 5);
    CHECK(e.find("fixed batch of 2") != std::string::npos);
    CHECK(e.find("'/") == std::string::npos);  // names a real node, not an empty one
    // At its own batch it imports.
    CHECK(tensor(import(b, 2), "y").shape == Shape{2, 3, 8});
  }
}

TEST_CASE("classify: weights through a Transpose, folded eval-mode weights, masks and --frozen") {
  ModelBuilder b;
  b.input("x", {2, 4, 8})
      .floats("layer.linear.weight", {16, 8}).floats("layer.linear.bias", {16})
      .floats("onnx::MatMul_12", {16, 8}).floats("onnx::Div_3", {}, 2.0f)
      .floats("mask", {4, 8}).floats("zero", {}, 0.0f)
      .node("Transpose", {"layer.linear.weight"}, {"wt"}).attr("perm", std::vector<int64_t>{1, 0})
      .node("MatMul", {"x", "wt"}, {"h"})
      .node("Add", {"layer.linear.bias", "h"}, {"hb"})   // bias at input 0, as PyTorch exports it
      .node("MatMul", {"hb", "onnx::MatMul_12"}, {"h2"})
      .node("Div", {"h2", "onnx::Div_3"}, {"h3"})
      .node("Equal", {"mask", "zero"}, {"cond"})
      .node("Where", {"cond", "h3", "zero"}, {"y"})
      .output("y");
  Graph g = import_onnx_bytes(b.bytes(), "m.onnx", {});
  CHECK(tensor(g, "layer.linear.weight").kind == TensorKind::Parameter);
  CHECK(tensor(g, "layer.linear.bias").kind == TensorKind::Parameter);
  CHECK(tensor(g, "onnx::MatMul_12").kind == TensorKind::Parameter);
  CHECK(tensor(g, "onnx::Div_3").kind == TensorKind::Constant);
  CHECK(tensor(g, "mask").kind == TensorKind::Constant);

  Graph f = import_onnx_bytes(b.bytes(), "m.onnx", {.frozen = {"layer.*"}});
  CHECK(tensor(f, "layer.linear.weight").kind == TensorKind::Buffer);
  CHECK(tensor(f, "layer.linear.weight").frozen);
  CHECK(tensor(f, "onnx::MatMul_12").kind == TensorKind::Parameter);
  CHECK_THROWS_WITH_AS(import_onnx_bytes(b.bytes(), "m.onnx", {.frozen = {"encoder.*"}}),
                       doctest::Contains("--frozen 'encoder.*' matches no trainable parameter"), InputError);
}

}  // namespace tensoropt
