// The step schedule (graph/step_schedule.h) on a hand-worked graph: which inputs take a gradient,
// what each node keeps, what recompute changes, and where each gradient starts and is complete.
// The planner's links and flights and both executors read this one schedule.
#include <doctest/doctest.h>

#include "graph/import.h"
#include "graph/step_schedule.h"
#include "tests/onnx_builder.h"

namespace tensoropt {
namespace {

// x [b,8] -> MatMul(w1) -> h -> Relu -> r -> MatMul(Transpose(w2)) -> y; w1, w2 are weights.
// The importer orders the nodes; node() finds each by the tensor it writes.
Graph two_layers() {
  test::ModelBuilder b;
  b.input("x", {-1, 8}).input("w1", {8, 16}).input("w2", {8, 16});
  b.node("MatMul", {"x", "w1"}, {"h"}).node("Relu", {"h"}, {"r"});
  b.node("Transpose", {"w2"}, {"w2t"}).attr("perm", std::vector<int64_t>{1, 0});
  b.node("MatMul", {"r", "w2t"}, {"y"}).output("y");
  return import_onnx_bytes(b.bytes(), "two_layers.onnx", {.batch = 4});
}

int tensor(const Graph& g, const std::string& name) {
  for (size_t t = 0; t < g.tensors.size(); ++t)
    if (g.tensors[t].name == name) return static_cast<int>(t);
  FAIL("no tensor " << name);
  return -1;
}

size_t node(const Graph& g, const std::string& output) { return static_cast<size_t>(g.tensors[static_cast<size_t>(tensor(g, output))].producer); }

}  // namespace

TEST_CASE("step schedule: gradients, keeps and spans of a two-layer graph, by hand") {
  const Graph g = two_layers();
  REQUIRE(g.nodes.size() == 4);
  const int x = tensor(g, "x"), w1 = tensor(g, "w1"), w2 = tensor(g, "w2"), h = tensor(g, "h"), r = tensor(g, "r"),
            w2t = tensor(g, "w2t");
  const size_t mm1 = node(g, "h"), relu = node(g, "r"), tr = node(g, "w2t"), mm2 = node(g, "y");
  const StepSchedule s = step_schedule(g, /*input_gradients=*/false, {});
  CHECK(s.roots == std::vector<int>{w1, w2});
  CHECK_FALSE(s.requires_grad[static_cast<size_t>(x)]);
  for (int t : {w1, w2, h, r, w2t}) CHECK(s.requires_grad[static_cast<size_t>(t)]);
  CHECK(s.data_dependent[static_cast<size_t>(h)]);
  CHECK_FALSE(s.data_dependent[static_cast<size_t>(w2t)]);
  // MatMul(x, w1): only w1 takes a gradient, which reads x: x is kept, w1 is not needed.
  CHECK(s.nodes[mm1].input_grad == std::vector<bool>{false, true});
  CHECK(s.nodes[mm1].need_input == std::vector<bool>{true, false});
  CHECK(s.nodes[mm1].keep_input == std::vector<bool>{true, false});
  CHECK_FALSE(s.nodes[mm1].recompute);
  // The transposed weight reads no data: it always recomputes, keeping its input (the weight).
  CHECK(s.nodes[tr].recompute);
  CHECK(s.nodes[tr].keep_input == std::vector<bool>{true});
  // MatMul(r, w2t): both take gradients, each reading the other; w2t is regenerated, not kept.
  CHECK(s.nodes[mm2].input_grad == std::vector<bool>{true, true});
  CHECK(s.nodes[mm2].need_input == std::vector<bool>{true, true});
  CHECK(s.nodes[mm2].keep_input == std::vector<bool>{true, false});
  // Backward runs in reverse node order: h's gradient is made at the Relu and complete there;
  // w1's at the first MatMul, w2t's at the second.
  CHECK(s.gradient_start[static_cast<size_t>(h)] == static_cast<int>(relu));
  CHECK(s.gradient_done[static_cast<size_t>(h)] == static_cast<int>(relu));
  CHECK(s.gradient_done[static_cast<size_t>(w1)] == static_cast<int>(mm1));
  CHECK(s.gradient_start[static_cast<size_t>(w2t)] == static_cast<int>(mm2));
  CHECK(s.gradient_start[static_cast<size_t>(x)] == -1);
  CHECK(s.last_forward_use[static_cast<size_t>(r)] == static_cast<int>(mm2));
  CHECK(s.producer[static_cast<size_t>(r)] == static_cast<int>(relu));
}

TEST_CASE("step schedule: a recomputing node keeps its inputs and nothing of its own, and nobody keeps what it wrote") {
  const Graph g = two_layers();
  const int h = tensor(g, "h"), r = tensor(g, "r");
  const size_t relu = node(g, "r"), mm2 = node(g, "y");
  std::vector<bool> recompute(g.nodes.size(), false);
  recompute[relu] = true;
  const StepSchedule plain = step_schedule(g, false, {});
  const StepSchedule re = step_schedule(g, false, recompute);
  CHECK(re.nodes[relu].recompute);
  CHECK(re.nodes[relu].keep_input == std::vector<bool>{true});            // h, for the rerun
  CHECK(re.nodes[relu].keep_output == std::vector<bool>{false});
  CHECK(re.nodes[mm2].keep_input == std::vector<bool>{false, false});     // r is made again
  CHECK(re.nodes[mm2].need_input == plain.nodes[mm2].need_input);         // what backward reads does not change
  CHECK(re.earliest_need[static_cast<size_t>(h)] == static_cast<int>(relu));
  CHECK(re.last_backward_use[static_cast<size_t>(r)] == -1);
  CHECK(plain.last_backward_use[static_cast<size_t>(r)] >= 0);
}

TEST_CASE("step schedule: with input gradients the float data inputs are roots too") {
  const Graph g = two_layers();
  const int x = tensor(g, "x");
  const StepSchedule s = step_schedule(g, /*input_gradients=*/true, {});
  CHECK(s.requires_grad[static_cast<size_t>(x)]);
  CHECK(s.roots.front() == x);
  const size_t mm1 = node(g, "h");
  CHECK(s.nodes[mm1].input_grad == std::vector<bool>{true, true});
  CHECK(s.nodes[mm1].need_input == std::vector<bool>{true, true});
}

}  // namespace tensoropt
