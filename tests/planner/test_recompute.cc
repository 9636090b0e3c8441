// Recompute in the strategy space: which ops may recompute (selective and all), what a chain of
// recomputing ops keeps, the copy of a tensor variable that only a recomputing reader needs, and FT
// against brute force with every op free to recompute.
#include <doctest/doctest.h>

#include "graph/import.h"
#include "planner/ft/brute_force.h"
#include "planner/ft/ft.h"
#include "planner/space/space.h"
#include "tests/onnx_builder.h"

namespace tensoropt::planner {
namespace {

const Cluster kH100 = load_cluster("h100-sxm");

// x -> MatMul -> Relu -> MatMul -> Relu -> MatMul -> y: every op but the last may recompute
// under recompute_all (y is a graph output, read by the loss).
Graph chain() {
  test::ModelBuilder b;
  b.input("x", {-1, 8}).input("w1", {8, 16}).input("w2", {16, 16}).input("w3", {16, 4});
  b.node("MatMul", {"x", "w1"}, {"h1"}, "mm1").node("Relu", {"h1"}, {"r1"}, "relu1");
  b.node("MatMul", {"r1", "w2"}, {"h2"}, "mm2").node("Relu", {"h2"}, {"r2"}, "relu2");
  b.node("MatMul", {"r2", "w3"}, {"y"}, "mm3").output("y");
  return import_onnx_bytes(b.bytes(), "chain.onnx", {.batch = 4});
}

// h = x W is read by Relu and by the residual Add: a tensor variable that neither its producer
// (MatMul keeps its inputs) nor its readers (Relu keeps its output, Add nothing) keep.
Graph fork() {
  test::ModelBuilder b;
  b.input("x", {-1, 8}).input("w", {8, 8});
  b.node("MatMul", {"x", "w"}, {"h"}, "mm").node("Relu", {"h"}, {"r"}, "relu").node("Add", {"r", "h"}, {"z"}, "add").output("z");
  return import_onnx_bytes(b.bytes(), "fork.onnx", {.batch = 4});
}

// h = x W is a graph output and read by Relu, whose output the next MatMul keeps: the loss holds
// h anyway.
Graph held_by_loss() {
  test::ModelBuilder b;
  b.input("x", {-1, 8}).input("w", {8, 8}).input("w2", {8, 8});
  b.node("MatMul", {"x", "w"}, {"h"}, "mm").node("Relu", {"h"}, {"r"}, "relu").node("MatMul", {"r", "w2"}, {"z"}, "mm2");
  b.output("h").output("z");
  return import_onnx_bytes(b.bytes(), "held.onnx", {.batch = 4});
}

StrategySpace space_of(const Graph& g, std::vector<int> mesh, bool all, const ComputeModel& compute) {
  SpaceOptions o;
  o.recompute_all = all;
  return StrategySpace(g, DeviceMesh::with_shape(kH100, std::move(mesh)), compute, o);
}

const Variable& op_named(const StrategySpace& s, const std::string& name) {
  const int v = s.find_variable(name);
  REQUIRE(v >= 0);
  return s.variables()[static_cast<size_t>(v)];
}

// The configuration of `var` on one GPU with the given recompute choice.
int config(const StrategySpace& s, int var, bool recompute) {
  const Variable& v = s.variables()[static_cast<size_t>(var)];
  for (size_t k = 0; k < v.configs.size(); ++k)
    if (v.configs[k].recompute == recompute) return static_cast<int>(k);
  FAIL("no such configuration");
  return -1;
}

// Activation bytes saved when op variable `name` recomputes rather than keeps, every other
// variable at its first configuration (one GPU).
double saved_by_recomputing(const StrategySpace& s, const std::string& name) {
  const int op = s.find_variable(name);
  REQUIRE(op >= 0);
  REQUIRE(s.variables()[static_cast<size_t>(op)].may_recompute);
  std::vector<int> keep(s.variables().size(), 0);
  std::vector<int> again = keep;
  keep[static_cast<size_t>(op)] = config(s, op, false);
  again[static_cast<size_t>(op)] = config(s, op, true);
  return s.breakdown(keep)[Term::Activations] - s.breakdown(again)[Term::Activations];
}

double bytes_of(const Graph& g, const std::string& tensor) {
  for (const Tensor& t : g.tensors)
    if (t.name == tensor) return static_cast<double>(t.elements() * 4);
  FAIL("no tensor " << tensor);
  return 0;
}

}  // namespace

TEST_CASE("recompute: selective offers it to ops that keep something, all to every op whose outputs go to ops") {
  AnalyticCompute compute(kH100, Precision::Fp32);
  const Graph g = chain();
  const StrategySpace selective = space_of(g, {1}, false, compute);
  const StrategySpace all = space_of(g, {1}, true, compute);
  // MatMul keeps its inputs, not its output: recomputing it alone saves nothing.
  CHECK_FALSE(op_named(selective, "op:mm1").may_recompute);
  CHECK(op_named(selective, "op:relu1").may_recompute);
  CHECK(op_named(all, "op:mm1").may_recompute);
  CHECK(op_named(all, "op:relu2").may_recompute);
  CHECK_FALSE(op_named(all, "op:mm3").may_recompute);  // its output is the graph's
  // Training-mode BatchNormalization would update its running statistics twice.
  const Graph r = import_onnx_file(std::string(TENSOROPT_SOURCE_DIR) + "/models/resnet18.onnx", {.batch = 2});
  const StrategySpace rs = space_of(r, {1}, true, compute);
  int convs = 0, norms = 0;
  for (const Variable& v : rs.variables()) {
    if (v.kind != VarKind::Op) continue;
    const std::string& op = r.nodes[static_cast<size_t>(v.node)].op_type;
    if (op == "BatchNormalization") {
      CHECK_FALSE(v.may_recompute);
      ++norms;
    }
    if (op == "Conv" && v.may_recompute) ++convs;
  }
  CHECK(norms == 20);
  CHECK(convs > 0);
}

TEST_CASE("recompute all: a chain recomputed whole keeps only its input and the loss's output") {
  AnalyticCompute compute(kH100, Precision::Fp32);
  const Graph g = chain();
  const StrategySpace all = space_of(g, {1}, true, compute);
  const StrategySpace selective = space_of(g, {1}, false, compute);
  std::vector<int> whole(all.variables().size(), 0);
  for (size_t v = 0; v < whole.size(); ++v)
    if (all.variables()[v].may_recompute) whole[v] = config(all, static_cast<int>(v), true);
  const Breakdown b = all.breakdown(whole);
  CHECK(b[Term::Activations] == bytes_of(g, "y"));
  CHECK(b[Term::DataInputs] == bytes_of(g, "x"));
  // Every op's forward again, but the last one's.
  const int last = all.find_variable("op:mm3");
  CHECK(b[Term::Recompute] == doctest::Approx(b[Term::ComputeForward] - all.variable_terms(last, 0)[Term::ComputeForward]).epsilon(1e-12));
  // Selectively, the smallest strategy still keeps the MatMuls' inputs.
  const FtResult fs = solve_ft(selective.problem());
  const FtResult fa = solve_ft(all.problem());
  CHECK(fa.points.back().cost.memory < fs.points.back().cost.memory);
  CHECK(fa.points.back().cost.memory == doctest::Approx(all.cost(whole).memory - all.workspace(whole)));
}

TEST_CASE("recompute: a tensor variable nobody keeps is charged only for a reader that recomputes") {
  AnalyticCompute compute(kH100, Precision::Fp32);
  const Graph g = fork();
  for (bool all : {false, true}) {
    CAPTURE(all);
    const StrategySpace s = space_of(g, {1}, all, compute);
    // Kept: Relu's output r (for Relu's backward). Recomputed: r is not kept, but h is, once.
    CHECK(saved_by_recomputing(s, "op:relu") == doctest::Approx(bytes_of(g, "r") - bytes_of(g, "h")));
  }
  // A graph output's copy is the loss's: a reader that recomputes from it adds nothing.
  const Graph held = held_by_loss();
  const StrategySpace s = space_of(held, {1}, false, compute);
  // r (kept by Relu and by the MatMul, one copy) is regenerated instead; h costs the same either way.
  CHECK(saved_by_recomputing(s, "op:relu") == doctest::Approx(bytes_of(held, "r")));
}

TEST_CASE("recompute all: FT equals brute force on small real subgraphs") {
  AnalyticCompute compute(kH100, Precision::Fp32);
  for (const auto& [name, g, mesh] : {std::tuple{"chain [2]", chain(), std::vector<int>{2}},
                                      std::tuple{"fork [2]", fork(), std::vector<int>{2}},
                                      std::tuple{"fork [2,2]", fork(), std::vector<int>{2, 2}}}) {
    CAPTURE(name);
    SpaceOptions o;
    o.recompute_all = true;
    o.zero = false;
    const StrategySpace s(g, DeviceMesh::with_shape(kH100, mesh), compute, o);
    double n = 1;
    for (int v = 0; v < s.problem().num_nodes(); ++v) n *= s.problem().num_configs(v);
    CAPTURE(n);
    REQUIRE(n <= static_cast<double>(kMaxBruteForceStrategies));
    CHECK(n >= 1000);
    const FtResult ft = solve_ft(s.problem());
    const FtResult bf = solve_brute_force(s.problem());
    REQUIRE(ft.points.size() == bf.points.size());
    CHECK(ft.points.size() >= 2);
    for (size_t i = 0; i < ft.points.size(); ++i) {
      CHECK(ft.points[i].cost.time == doctest::Approx(bf.points[i].cost.time).epsilon(1e-12));
      CHECK(ft.points[i].cost.memory == doctest::Approx(bf.points[i].cost.memory).epsilon(1e-12));
    }
  }
}

}  // namespace tensoropt::planner
