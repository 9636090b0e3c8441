// Parallel configurations of single ops over meshes, with the layouts they imply.
#include <doctest/doctest.h>

#include <algorithm>

#include "graph/import.h"
#include "planner/parallel/cluster.h"
#include "planner/parallel/op_configs.h"
#include "tests/onnx_builder.h"

namespace tensoropt::planner {
namespace {

struct OneOp {
  Graph graph;
  IterSpace space;
};

OneOp one_op(const test::ModelBuilder& b, int64_t batch) {
  OneOp r{import_onnx_bytes(b.bytes(), "t.onnx", {.batch = batch}), {}};
  r.space = op_space(OpView(r.graph, r.graph.nodes.back()));
  return r;
}

const OpConfig* find(const std::vector<OpConfig>& cs, const IterSpace& s, const std::string& name) {
  for (const OpConfig& c : cs) {
    if (c.str(s) == name) return &c;
  }
  return nullptr;
}

std::vector<std::string> names(const std::vector<OpConfig>& cs, const IterSpace& s) {
  std::vector<std::string> v;
  for (const OpConfig& c : cs) v.push_back(c.str(s));
  return v;
}

const Cluster kH100 = load_cluster("h100-sxm");

}  // namespace

TEST_CASE("op configs: a MatMul on 8 GPUs splits batch, rows, columns or the reduction") {
  test::ModelBuilder b;
  b.input("x", {-1, 16, 768}).input("w", {768, 2304}).node("MatMul", {"x", "w"}, {"y"}).output("y");
  OneOp op = one_op(b, 8);
  auto cs = enumerate_configs(op.space, DeviceMesh::for_cluster(kH100, 8));
  CHECK(names(cs, op.space) == std::vector<std::string>{"replicate", "b0:S0", "m:S0", "n:S0", "k:S0"});
  const OpConfig* rep = find(cs, op.space, "replicate");
  CHECK(rep->inputs[0].str() == "[R]");
  CHECK(rep->outputs[0].str() == "[R]");
  const OpConfig* col = find(cs, op.space, "n:S0");  // Megatron's column split
  CHECK(col->inputs[0].str() == "[R]");
  CHECK(col->inputs[1].str() == "[S(1)]");
  CHECK(col->outputs[0].str() == "[S(2)]");
  const OpConfig* row = find(cs, op.space, "k:S0");  // row split: partial sums
  CHECK(row->inputs[0].str() == "[S(2)]");
  CHECK(row->inputs[1].str() == "[S(0)]");
  CHECK(row->outputs[0].str() == "[P]");
  const OpConfig* dp = find(cs, op.space, "b0:S0");
  CHECK(dp->inputs[1].str() == "[R]");
  CHECK(dp->outputs[0].str() == "[S(0)]");
}

TEST_CASE("op configs: on 16 GPUs ([2 nodes, 8]), data parallel across nodes times tensor parallel inside") {
  test::ModelBuilder b;
  b.input("x", {-1, 16, 768}).input("w", {768, 2304}).node("MatMul", {"x", "w"}, {"y"}).output("y");
  OneOp op = one_op(b, 8);
  auto cs = enumerate_configs(op.space, DeviceMesh::for_cluster(kH100, 16));
  const OpConfig* c = find(cs, op.space, "b0:S0 n:S1");
  REQUIRE(c != nullptr);
  CHECK(c->inputs[0].str() == "[S(0),R]");
  CHECK(c->inputs[1].str() == "[R,S(1)]");
  CHECK(c->outputs[0].str() == "[S(0),S(2)]");
  // The batch of 8 cannot take all 16 devices; 2304 columns can.
  CHECK(find(cs, op.space, "b0:S01") == nullptr);
  CHECK(find(cs, op.space, "n:S01") != nullptr);
  // Every configuration's layouts are legal for the tensors' shapes.
  DeviceMesh mesh = DeviceMesh::for_cluster(kH100, 16);
  const Node& mm = op.graph.nodes.back();
  for (const OpConfig& k : cs) {
    CAPTURE(k.str(op.space));
    for (size_t i = 0; i < 2; ++i) CHECK_NOTHROW(check_layout(op.graph.tensors[static_cast<size_t>(mm.inputs[i])].shape, k.inputs[i], mesh));
    CHECK_NOTHROW(check_layout(op.graph.tensors[static_cast<size_t>(mm.outputs[0])].shape, k.outputs[0], mesh));
  }
  CHECK(cs.size() == 24);  // 5 choices per axis, less b0 on both axes (8 rows, 16 devices)
}

TEST_CASE("op configs: softmax never splits its normalised axis, conv never splits space or window") {
  test::ModelBuilder sm;
  sm.input("x", {-1, 12, 64, 64}).node("Softmax", {"x"}, {"y"}).attr("axis", -1).output("y");
  OneOp s = one_op(sm, 4);
  for (const OpConfig& c : enumerate_configs(s.space, DeviceMesh::for_cluster(kH100, 4))) {
    CHECK(c.str(s.space).find("d3") == std::string::npos);
  }
  test::ModelBuilder cv;
  cv.input("x", {-1, 16, 8, 8}).input("w", {32, 16, 3, 3}).node("Conv", {"x", "w"}, {"y"}).output("y");
  OneOp c = one_op(cv, 4);
  auto cs = enumerate_configs(c.space, DeviceMesh::for_cluster(kH100, 4));
  CHECK(names(cs, c.space) == std::vector<std::string>{"replicate", "n:S0", "m:S0", "c:S0"});
  CHECK(find(cs, c.space, "c:S0")->outputs[0].str() == "[P]");
}

TEST_CASE("op configs: attention heads split through the Reshape that makes them") {
  test::ModelBuilder b;
  b.input("x", {-1, 16, 768}).ints("shape", {0, 0, 12, 64}).node("Reshape", {"x", "shape"}, {"y"}).output("y");
  OneOp op = one_op(b, 2);
  auto cs = enumerate_configs(op.space, DeviceMesh::for_cluster(kH100, 4));
  const OpConfig* heads = find(cs, op.space, "d2:S0");
  REQUIRE(heads != nullptr);
  CHECK(heads->inputs[0].str() == "[S(2)]");
  CHECK(heads->inputs[1].str() == "[R]");  // the shape operand
  CHECK(heads->outputs[0].str() == "[S(2)]");
  CHECK(find(cs, op.space, "d3:S0") == nullptr);  // head_dim is fixed inside the reshape
  CHECK(find(cs, op.space, "d0:S0") == nullptr);  // batch 2 does not split 4 ways
}

}  // namespace tensoropt::planner
