// Op catalogue: formulas checked by hand on small cases, iteration spaces and roles, and the
// activation memory a training step keeps for backward.
#include <doctest/doctest.h>

#include "graph/import.h"
#include "graph/op_catalogue.h"
#include "graph/summary.h"
#include "tests/onnx_builder.h"

namespace tensoropt {
namespace {

using test::ModelBuilder;

const Node& node_of(const Graph& g, const std::string& op, int nth = 0) {
  for (const Node& n : g.nodes) {
    if (n.op_type == op && nth-- == 0) return n;
  }
  FAIL("no node " << op);
  return g.nodes.front();
}

std::string roles(const IterSpace& s) {
  std::string out;
  for (const IterDim& d : s.dims) out += d.name + ":" + std::string(dim_role_name(d.role)) + " ";
  return out;
}

}  // namespace

TEST_CASE("every catalogue entry is complete") {
  CHECK(all_ops().size() >= 70);
  for (const OpDef& d : all_ops()) {
    CAPTURE(d.type);
    CHECK(d.infer);
    CHECK(d.space);
    CHECK(d.fwd_flops);
    CHECK(d.bwd_flops);
    CHECK(d.saved);
    CHECK(!d.flops_doc.empty());
    CHECK(!d.saves_doc.empty());
  }
  CHECK(find_op("Conv") != nullptr);
  CHECK(find_op("NoSuchOp") == nullptr);
}

TEST_CASE("Conv -> Relu -> Conv: FLOPs, backward FLOPs and saved activations by hand") {
  ModelBuilder b;
  b.input("x", {-1, 3, 8, 8})
      .input("w1", {4, 3, 3, 3})
      .input("w2", {5, 4, 3, 3})
      .node("Conv", {"x", "w1"}, {"c1"}).attr("pads", std::vector<int64_t>{1, 1, 1, 1})
      .node("Relu", {"c1"}, {"r"})
      .node("Conv", {"r", "w2"}, {"c2"}).attr("pads", std::vector<int64_t>{1, 1, 1, 1})
      .output("c2");
  Graph g = import_onnx_bytes(b.bytes(), "t.onnx", {.batch = 2});
  auto costs = node_costs(g);
  // conv1: 2 * N*M*O * C*K = 2 * 2*4*64 * 3*9
  CHECK(costs[0].fwd_flops == 27648);
  CHECK(costs[0].bwd_flops == 27648);  // dW only: the image needs no gradient
  CHECK(costs[1].fwd_flops == 512);
  CHECK(costs[1].bwd_flops == 512);
  // conv2: 2 * 2*5*64 * 4*9, and backward computes dX and dW
  CHECK(costs[2].fwd_flops == 46080);
  CHECK(costs[2].bwd_flops == 2 * 46080);
  ModelSummary s = summarize(g);
  // x saved by conv1 (for dW); relu's output saved by relu and by conv2, counted once.
  CHECK(s.activation_bytes == 2 * 3 * 64 * 4 + 2 * 4 * 64 * 4);
  CHECK(s.trainable_parameters == 4 * 27 + 5 * 36);
}

TEST_CASE("MatMul broadcasting and its iteration space") {
  ModelBuilder b;
  b.input("a", {-1, 12, 10, 64}).input("w", {64, 32}).node("MatMul", {"a", "w"}, {"y"}).output("y");
  Graph g = import_onnx_bytes(b.bytes(), "t.onnx", {.batch = 2});
  const Node& mm = node_of(g, "MatMul");
  CHECK(g.tensors[static_cast<size_t>(mm.outputs[0])].shape == Shape{2, 12, 10, 32});
  IterSpace s = op_space(OpView(g, mm));
  CHECK(roles(s) == "b0:batch b1:parallel m:parallel n:parallel k:reduction ");
  CHECK(s.inputs[1] == std::vector<int>{4, 3});
  CHECK(node_costs(g)[0].fwd_flops == 2.0 * 2 * 12 * 10 * 32 * 64);
}

TEST_CASE("heads are followed through Reshape: hidden 768 splits as 12 heads of 64") {
  ModelBuilder b;
  b.input("x", {-1, 16, 768}).ints("shape", {0, 0, 12, 64}).node("Reshape", {"x", "shape"}, {"y"}).output("y");
  Graph g = import_onnx_bytes(b.bytes(), "t.onnx", {.batch = 2});
  IterSpace s = op_space(OpView(g, node_of(g, "Reshape")));
  CHECK(roles(s) == "d0:batch d1:parallel d2:parallel d3:fixed ");
  CHECK(s.inputs[0] == std::vector<int>{0, 1, 2});
  CHECK(s.outputs[0] == std::vector<int>{0, 1, 2, 3});
}

TEST_CASE("GPT-2: the batch axis reaches attention, whose softmax axis is normalised") {
  Graph g = import_onnx_file(std::string(TENSOROPT_SOURCE_DIR) + "/models/gpt2_small.onnx", {.batch = 2});
  const Node& sm = node_of(g, "Softmax");
  const Tensor& in = g.tensors[static_cast<size_t>(sm.inputs[0])];
  CHECK(in.shape == Shape{2, 12, 1024, 1024});
  CHECK(in.batch_axis == 0);
  IterSpace s = op_space(OpView(g, sm));
  CHECK(roles(s) == "d0:batch d1:parallel d2:parallel d3:normalized ");
  // The fused QKV projection: [B,T,768] x [768,2304] with k reduced.
  const Node& mm = node_of(g, "MatMul");
  CHECK(roles(op_space(OpView(g, mm))) == "b0:batch m:parallel n:parallel k:reduction ");
  // The embedding table splits as a reduction (vocabulary-parallel lookup).
  const Node& emb = node_of(g, "Gather");
  CHECK(roles(op_space(OpView(g, emb))).find("v:reduction") != std::string::npos);
}

TEST_CASE("Conv iteration space: batch, output channels, spatial, reduction, window") {
  Graph g = import_onnx_file(std::string(TENSOROPT_SOURCE_DIR) + "/models/resnet18.onnx", {.batch = 2});
  IterSpace s = op_space(OpView(g, node_of(g, "Conv")));
  CHECK(roles(s) == "n:batch m:parallel o0:spatial o1:spatial c:reduction k0:window k1:window ");
}

TEST_CASE("depthwise Conv maps channels to the group dim") {
  ModelBuilder b;
  b.input("x", {-1, 8, 6, 6}).input("w", {8, 1, 3, 3})
      .node("Conv", {"x", "w"}, {"y"}).attr("group", 8).attr("strides", std::vector<int64_t>{2, 2})
      .output("y");
  Graph g = import_onnx_bytes(b.bytes(), "t.onnx", {.batch = 1});
  const Node& c = node_of(g, "Conv");
  CHECK(g.tensors[static_cast<size_t>(c.outputs[0])].shape == Shape{1, 8, 2, 2});
  IterSpace s = op_space(OpView(g, c));
  CHECK(roles(s) == "n:batch g:parallel m:parallel o0:spatial o1:spatial c:reduction k0:window k1:window ");
  CHECK(s.inputs[0][1] == 1);
  CHECK(node_costs(g)[0].fwd_flops == 2.0 * 8 * 4 * 9);
}

TEST_CASE("MaxPool with ceil_mode, and its saved indices") {
  ModelBuilder b;
  b.input("x", {-1, 2, 7, 7}).input("w", {2, 2, 1, 1})
      .node("Conv", {"x", "w"}, {"c"})
      .node("MaxPool", {"c"}, {"y"}).attr("kernel_shape", std::vector<int64_t>{2, 2})
      .attr("strides", std::vector<int64_t>{2, 2}).attr("ceil_mode", 1)
      .output("y");
  Graph g = import_onnx_bytes(b.bytes(), "t.onnx", {.batch = 1});
  const Node& p = node_of(g, "MaxPool");
  CHECK(g.tensors[static_cast<size_t>(p.outputs[0])].shape == Shape{1, 2, 4, 4});
  auto costs = node_costs(g);
  int64_t saved = 0;
  for (const Saved& sv : costs[1].saved) saved += sv.bytes;
  CHECK(saved == 2 * 49 * 4 + 2 * 16 * 8);  // input, and int64 argmax per output
}

TEST_CASE("training Dropout saves a one-byte mask, inference Dropout costs nothing") {
  for (bool train : {true, false}) {
    CAPTURE(train);
    ModelBuilder b;
    b.input("x", {-1, 10}).input("w", {10, 10})
        .node("Gemm", {"x", "w"}, {"h"})
        .floats("ratio", {}, 0.1f)
        .flag("training", train)
        .node("Dropout", {"h", "ratio", "training"}, {"y", "mask"})
        .output("y");
    Graph g = import_onnx_bytes(b.bytes(), "t.onnx", {.batch = 3});
    auto costs = node_costs(g);
    REQUIRE(costs.size() == 2);
    int64_t saved = 0;
    for (const Saved& sv : costs[1].saved) saved += sv.bytes;
    CHECK(saved == (train ? 30 : 0));
    CHECK(costs[1].fwd_flops == (train ? 60 : 0));
  }
}

}  // namespace tensoropt

namespace tensoropt {

TEST_CASE("Einsum: shapes, roles and FLOPs of attention scores") {
  test::ModelBuilder b;
  b.input("q", {-1, 4, 10, 16}).input("k", {-1, 4, 12, 16})
      .node("Einsum", {"q", "k"}, {"s"}).attr_s("equation", "bhqd,bhkd->bhqk")
      .output("s");
  Graph g = import_onnx_bytes(b.bytes(), "t.onnx", {.batch = 2});
  const Node& e = node_of(g, "Einsum");
  CHECK(g.tensors[static_cast<size_t>(e.outputs[0])].shape == Shape{2, 4, 10, 12});
  CHECK(roles(op_space(OpView(g, e))) == "b:batch h:parallel q:parallel d:reduction k:parallel ");
  CHECK(node_costs(g)[0].fwd_flops == 2.0 * 2 * 4 * 10 * 12 * 16);
}

TEST_CASE("Einsum with an ellipsis and an implicit output") {
  test::ModelBuilder b;
  b.input("x", {-1, 3, 5, 7}).input("w", {7, 6})
      .node("Einsum", {"x", "w"}, {"y"}).attr_s("equation", "...ij,jk")
      .output("y");
  Graph g = import_onnx_bytes(b.bytes(), "t.onnx", {.batch = 2});
  CHECK(g.tensors[static_cast<size_t>(node_of(g, "Einsum").outputs[0])].shape == Shape{2, 3, 5, 6});
}

TEST_CASE("ConvTranspose doubles the spatial size with stride 2") {
  test::ModelBuilder b;
  b.input("x", {-1, 8, 5, 5}).input("w", {8, 4, 4, 4})
      .node("ConvTranspose", {"x", "w"}, {"y"}).attr("strides", std::vector<int64_t>{2, 2})
      .attr("pads", std::vector<int64_t>{1, 1, 1, 1})
      .output("y");
  Graph g = import_onnx_bytes(b.bytes(), "t.onnx", {.batch = 2});
  CHECK(g.tensors[static_cast<size_t>(node_of(g, "ConvTranspose").outputs[0])].shape == Shape{2, 4, 10, 10});
  CHECK(node_costs(g)[0].fwd_flops == 2.0 * 2 * 8 * 25 * 4 * 16);
}

TEST_CASE("Resize by scales and by sizes") {
  test::ModelBuilder b;
  b.input("x", {-1, 3, 8, 8})
      .floats("roi", {0}).floats("scales", {4}, 2.0f)
      .node("Resize", {"x", "roi", "scales"}, {"y"}).attr_s("mode", "nearest")
      .floats("none", {0}).ints("sizes", {2, 3, 5, 7})
      .node("Resize", {"y", "none", "none", "sizes"}, {"z"}).attr_s("mode", "linear")
      .output("z");
  Graph g = import_onnx_bytes(b.bytes(), "t.onnx", {.batch = 2});
  CHECK(g.tensors[static_cast<size_t>(g.find("y"))].shape == Shape{4, 6, 16, 16});
  CHECK(g.tensors[static_cast<size_t>(g.find("scales"))].kind == TensorKind::Constant);
  CHECK(g.tensors[static_cast<size_t>(g.find("z"))].shape == Shape{2, 3, 5, 7});
}

}  // namespace tensoropt
