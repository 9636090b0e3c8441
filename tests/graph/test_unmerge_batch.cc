// Products over a merged batch axis (graph/unmerge_batch.h): a sequence-first attention's output
// projection Reshape [T*B, C] -> Gemm -> Reshape [T, B, N] becomes an Einsum over [T, B, C], so
// the batch has an axis of its own that data parallelism splits.
#include <doctest/doctest.h>

#include "graph/import.h"
#include "graph/summary.h"
#include "tests/onnx_builder.h"

namespace tensoropt {
namespace {

using test::ModelBuilder;

// x [B, T=3, C=4] -> sequence-first [3, B, 4] -> [3*B, 4] -> Gemm (W [5, 4], transB, bias [5])
// -> [3, B, 5] -> batch-first [B, 3, 5]. dynamic: the Reshapes copy the batch (0) or infer it.
ModelBuilder projection(bool bias, int64_t batch) {
  ModelBuilder b;
  b.input("x", {-1, 3, 4}).floats("w", {5, 4}).ints("flat", {3 * batch, 4}).ints("back", {3, batch, 5});
  if (bias) b.floats("b", {5});
  b.node("Transpose", {"x"}, {"seq"}).attr("perm", std::vector<int64_t>{1, 0, 2})
      .node("Reshape", {"seq", "flat"}, {"rows"})
      .node("Gemm", bias ? std::vector<std::string>{"rows", "w", "b"} : std::vector<std::string>{"rows", "w"}, {"proj"}, "out_proj")
      .attr("transB", 1)
      .node("Reshape", {"proj", "back"}, {"unflat"})
      .node("Transpose", {"unflat"}, {"y"}).attr("perm", std::vector<int64_t>{1, 0, 2})
      .output("y");
  return b;
}

const Node* named(const Graph& g, const std::string& name) {
  for (const Node& n : g.nodes)
    if (n.name == name) return &n;
  return nullptr;
}

int count(const Graph& g, const std::string& op) {
  int k = 0;
  for (const Node& n : g.nodes) k += n.op_type == op;
  return k;
}

}  // namespace

TEST_CASE("unmerge batch: a Gemm over T*B rows becomes an Einsum with the batch on an axis of its own") {
  for (bool bias : {true, false}) {
    CAPTURE(bias);
    Graph g = import_onnx_bytes(projection(bias, 2).bytes(), "proj.onnx", {.batch = 2});
    CHECK(count(g, "Gemm") == 0);
    const Node* e = named(g, "out_proj");
    REQUIRE(e != nullptr);
    CHECK(e->op_type == "Einsum");
    CHECK(e->attr_string("equation", "") == "obk,nk->obn");
    const Tensor& in = g.tensors[static_cast<size_t>(e->inputs[0])];
    CHECK(in.shape == Shape{3, 2, 4});
    CHECK(in.batch_axis == 1);  // the batch, no longer an inner factor of a merged axis
    CHECK(g.tensors[static_cast<size_t>(g.outputs[0])].shape == Shape{2, 3, 5});
    CHECK(g.tensors[static_cast<size_t>(g.outputs[0])].batch_axis == 0);
    const Node* add = named(g, "out_proj/bias");
    CHECK((add != nullptr) == bias);
    if (add) CHECK(add->op_type == "Add");
    // The same arithmetic: FLOPs of the product and the bias.
    CHECK(summarize(g).fwd_flops == doctest::Approx(2.0 * 6 * 4 * 5 + (bias ? 6 * 5 : 0)));
  }
}

TEST_CASE("unmerge batch: at batch 1, or when the rows do not come back as [T, B, N], the Gemm stays") {
  Graph one = import_onnx_bytes(projection(true, 1).bytes(), "proj.onnx", {.batch = 1});
  CHECK(count(one, "Gemm") == 1);
  // The Gemm's rows read by something other than the Reshape back: left as it is.
  ModelBuilder b;
  b.input("x", {-1, 3, 4}).floats("w", {5, 4}).ints("flat", {6, 4})
      .node("Transpose", {"x"}, {"seq"}).attr("perm", std::vector<int64_t>{1, 0, 2})
      .node("Reshape", {"seq", "flat"}, {"rows"})
      .node("Gemm", {"rows", "w"}, {"proj"}, "out_proj").attr("transB", 1)
      .output("proj");
  Graph kept = import_onnx_bytes(b.bytes(), "proj.onnx", {.batch = 2});
  CHECK(count(kept, "Gemm") == 1);
}

}  // namespace tensoropt
