// The strategy space of real graphs: FT against brute force on small real subgraphs, random
// strategies against the frontier, the one-GPU costs against the model summary, and tensors of
// 2^45 elements on 4,096 GPUs. The plan over every mesh is tested in test_plan.cc, the baselines
// in test_baselines.cc, the plan file in test_plan_file.cc.
#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include "graph/error.h"
#include "graph/import.h"
#include "graph/summary.h"
#include "planner/ft/brute_force.h"
#include "planner/parallel/collectives.h"
#include "planner/plan.h"
#include "tests/onnx_builder.h"

namespace tensoropt::planner {
namespace {

const Cluster kH100 = load_cluster("h100-sxm");

Graph mlp(bool residual) {
  test::ModelBuilder b;
  b.input("x", {-1, 8}).input("w1", {8, 16}).input("w2", {16, 8});
  b.node("MatMul", {"x", "w1"}, {"h"}).node("Relu", {"h"}, {"r"}).node("MatMul", {"r", "w2"}, {"y"});
  if (residual) {
    b.node("Add", {"y", "x"}, {"z"}).output("z");
  } else {
    b.output("y");
  }
  return import_onnx_bytes(b.bytes(), "mlp.onnx", {.batch = 4});
}

// Attention's fork: one input read by the Q, K and V projections, a softmax over scores.
Graph tiny_attention() {
  test::ModelBuilder b;
  b.input("x", {-1, 4, 8}).input("wq", {8, 8}).input("wk", {8, 8}).input("wv", {8, 8});
  b.node("MatMul", {"x", "wq"}, {"q"}).node("MatMul", {"x", "wk"}, {"k"}).node("MatMul", {"x", "wv"}, {"v"});
  b.node("Transpose", {"k"}, {"kt"}).attr("perm", std::vector<int64_t>{0, 2, 1});
  b.node("MatMul", {"q", "kt"}, {"s"}).node("Softmax", {"s"}, {"p"}).attr("axis", int64_t{-1});
  b.node("MatMul", {"p", "v"}, {"o"}).output("o");
  return import_onnx_bytes(b.bytes(), "attention.onnx", {.batch = 2});
}

double strategies(const Problem& p) {
  double n = 1;
  for (int v = 0; v < p.num_nodes(); ++v) n *= p.num_configs(v);
  return n;
}

void check_equal(const FtResult& ft, const FtResult& bf) {
  REQUIRE(ft.points.size() == bf.points.size());
  for (size_t i = 0; i < ft.points.size(); ++i) {
    CHECK(ft.points[i].cost.time == doctest::Approx(bf.points[i].cost.time).epsilon(1e-12));
    CHECK(ft.points[i].cost.memory == doctest::Approx(bf.points[i].cost.memory).epsilon(1e-12));
  }
}

std::string fixture(const std::string& name) { return std::string(TENSOROPT_SOURCE_DIR) + "/" + name; }

}  // namespace

TEST_CASE("strategy space: FT equals brute force on small real subgraphs") {
  AnalyticCompute compute(kH100, Precision::Fp32);
  struct Case {
    std::string name;
    Graph graph;
    std::vector<int> mesh;
    bool options = true;  // recompute and ZeRO offered
  };
  std::vector<Case> cases;
  cases.push_back({"mlp [2]", mlp(true), {2}});
  cases.push_back({"mlp [2,2]", mlp(false), {2, 2}, false});
  cases.push_back({"attention [2]", tiny_attention(), {2}, false});
  for (const Case& c : cases) {
    CAPTURE(c.name);
    for (bool bf16 : {false, true}) {
      SpaceOptions o;
      o.training.precision = bf16 ? Precision::Bf16 : Precision::Fp32;
      o.training.optimizer = bf16 ? Optimizer::Adam : Optimizer::Momentum;
      o.recompute = o.zero = c.options;
      StrategySpace s(c.graph, DeviceMesh::with_shape(kH100, c.mesh), compute, o);
      const double n = strategies(s.problem());
      CAPTURE(n);
      REQUIRE(n <= static_cast<double>(kMaxBruteForceStrategies));
      CHECK(n >= 1000);  // a real choice, not a handful of strategies
      FtResult ft = solve_ft(s.problem());
      check_equal(ft, solve_brute_force(s.problem()));
      CHECK(ft.points.size() >= 2);  // a trade-off exists
      for (const FrontierPoint& p : ft.points) {
        Breakdown b = s.breakdown(p.assignment);
        CHECK(b.time() == doctest::Approx(p.cost.time).epsilon(1e-12));
        CHECK(b.memory() - b[Term::Workspace] == doctest::Approx(p.cost.memory).epsilon(1e-12));
      }
    }
  }
}

TEST_CASE("strategy space: random strategies never dominate the frontier") {
  Graph g = import_onnx_file(fixture("tests/fixtures/models/gpt_gelu_tanh.onnx"), {.batch = 4});
  AnalyticCompute compute(kH100, Precision::Bf16);
  SpaceOptions o;
  o.training.precision = Precision::Bf16;
  StrategySpace s(g, DeviceMesh::with_shape(kH100, {4}), compute, o);
  FtResult ft = solve_ft(s.problem());
  REQUIRE(ft.points.size() >= 2);
  std::mt19937_64 rng(7);
  int checked = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<int> a(s.variables().size());
    for (size_t v = 0; v < a.size(); ++v) {
      // Mostly the fastest point's choices with some variables redrawn, so the draws land near
      // the frontier, where a broken solver would be caught, not in the far worse bulk.
      int k = static_cast<int>(s.variables()[v].configs.size());
      bool redraw = std::uniform_int_distribution<int>(0, 9)(rng) < (trial % 10 + 1);
      a[v] = redraw ? std::uniform_int_distribution<int>(0, k - 1)(rng)
                    : ft.points[static_cast<size_t>(trial) % ft.points.size()].assignment[v];
    }
    Cost c = evaluate(s.problem(), a);
    bool dominated = false;
    for (const FrontierPoint& p : ft.points) dominated = dominated || weakly_dominates(p.cost, c);
    CHECK(dominated);
    ++checked;
  }
  CHECK(checked == 2000);
}

namespace {

// The link into `to` (an op variable's name) from `from`, and the terms under the configurations
// whose layouts on that link are `from_layout` (what `from` gives) and `to_layout` (what the
// reader needs), without recompute.
Breakdown gathered_link(const StrategySpace& s, const std::string& from, const std::string& to, const std::string& from_layout,
                        const std::string& to_layout) {
  const int u = s.find_variable(from), v = s.find_variable(to);
  REQUIRE(u >= 0);
  REQUIRE(v >= 0);
  int link = -1;
  for (size_t e = 0; e < s.links().size(); ++e)
    if (s.links()[e].from == u && s.links()[e].to == v) link = static_cast<int>(e);
  REQUIRE(link >= 0);
  const Link& l = s.links()[static_cast<size_t>(link)];
  const auto pick = [&](int var, bool producer, const std::string& want) {
    const Variable& x = s.variables()[static_cast<size_t>(var)];
    for (size_t k = 0; k < x.configs.size(); ++k) {
      const VarConfig& c = x.configs[k];
      if (c.recompute || c.zero != 0) continue;
      const Layout& at = x.kind != VarKind::Op ? c.layout
                         : producer ? x.op_configs[static_cast<size_t>(c.op_config)].outputs[static_cast<size_t>(l.from_slot)]
                                    : x.op_configs[static_cast<size_t>(c.op_config)].inputs[static_cast<size_t>(l.to_slot)];
      if (at.str() == want) return static_cast<int>(k);
    }
    FAIL("no configuration of " << x.name << " with " << want);
    return -1;
  };
  return s.link_terms(link, pick(u, true, from_layout), pick(v, false, to_layout));
}

}  // namespace

TEST_CASE("strategy space: a weight gathered for its product is gathered again for the backward, through a Transpose or not") {
  // nn.Linear exported without constant folding, x · Transpose(W), and as a default export stores
  // it, x · Wᵀ: stored split on the output features, gathered whole for a data-parallel product.
  // Neither holds the gathered copy from forward to backward (the runtime gathers it again), so
  // both charge the gather forward and again in backward, with the gradient's reduce-scatter.
  test::ModelBuilder unfolded, folded;
  // A bias before the product makes its input need a gradient, so its backward reads the weight.
  for (test::ModelBuilder* b : {&unfolded, &folded}) b->input("x0", {-1, 64}).floats("b0", {64}).node("Add", {"x0", "b0"}, {"x"});
  unfolded.floats("w", {128, 64}).node("Transpose", {"w"}, {"wt"}, "t").attr("perm", std::vector<int64_t>{1, 0});
  unfolded.node("MatMul", {"x", "wt"}, {"y"}, "mm").output("y");
  folded.floats("wt", {64, 128}).node("MatMul", {"x", "wt"}, {"y"}, "mm").output("y");
  const Graph gu = import_onnx_bytes(unfolded.bytes(), "unfolded.onnx", {.batch = 8});
  const Graph gf = import_onnx_bytes(folded.bytes(), "folded.onnx", {.batch = 8});
  AnalyticCompute compute(kH100, Precision::Fp32);
  StrategySpace su(gu, DeviceMesh::with_shape(kH100, {4}), compute, SpaceOptions{});
  StrategySpace sf(gf, DeviceMesh::with_shape(kH100, {4}), compute, SpaceOptions{});
  const Breakdown u = gathered_link(su, "op:t", "op:mm", "[S(1)]", "[R]");
  const Breakdown f = gathered_link(sf, "param:wt", "op:mm", "[S(1)]", "[R]");
  for (const Breakdown& b : {u, f}) {
    const double gather = b[comm_term(Purpose::Forward, StepKind::AllGather)];
    CHECK(gather > 0);
    CHECK(b[comm_term(Purpose::Backward, StepKind::AllGather)] == gather);
    CHECK(b[comm_term(Purpose::Backward, StepKind::ReduceScatter)] > 0);
    CHECK(b[Term::Weights] == 0);
    CHECK(b[Term::Activations] == 0);
  }
  CHECK(u.time() == f.time());
}

TEST_CASE("strategy space: parameters below param_persistence are stored whole, and the frontier only loses their gathers") {
  Graph g = import_onnx_file(fixture("tests/fixtures/models/gpt_gelu_tanh.onnx"), {.batch = 8});
  AnalyticCompute compute(kH100, Precision::Fp32);
  int64_t largest_small = 0;
  for (const Tensor& t : g.tensors)
    if (t.kind == TensorKind::Parameter) largest_small = std::max(largest_small, t.elements());
  // A threshold between the fixture's parameter sizes: some below it, some at or above it.
  const int64_t threshold = largest_small / 2;
  int small = 0, large_split = 0, small_split_without = 0;
  for (std::vector<int> shape : {std::vector<int>{4}, std::vector<int>{2, 2}}) {
    SpaceOptions kept;
    kept.param_persistence = threshold;
    StrategySpace with(g, DeviceMesh::with_shape(kH100, shape), compute, kept);
    StrategySpace without(g, DeviceMesh::with_shape(kH100, shape), compute, SpaceOptions{});
    const auto split = [](const VarConfig& c) {
      return std::any_of(c.layout.placements().begin(), c.layout.placements().end(), [](const Placement& p) { return !p.is_replicate(); });
    };
    for (size_t v = 0; v < with.variables().size(); ++v) {
      const Variable& var = with.variables()[v];
      if (var.kind != VarKind::Parameter) continue;
      CAPTURE(var.name);
      const bool below = g.tensors[static_cast<size_t>(var.tensor)].elements() < threshold;
      const Variable& full = without.variables()[v];
      REQUIRE(full.name == var.name);
      if (below) {
        ++small;
        for (const VarConfig& c : var.configs) CHECK_FALSE(split(c));
        // ZeRO-2 is still offered on the whole copy.
        CHECK(std::any_of(var.configs.begin(), var.configs.end(), [](const VarConfig& c) { return c.zero == 2; }));
        small_split_without += std::any_of(full.configs.begin(), full.configs.end(), split);
      } else {
        large_split += std::any_of(var.configs.begin(), var.configs.end(), split);
        CHECK(var.configs.size() == full.configs.size());
      }
    }
  }
  CHECK(small > 10);
  CHECK(large_split > 4);
  CHECK(small_split_without > 10);  // without the threshold they may be split
  // The restricted space is a subset of the full one: each point of its frontier is a strategy
  // of the full space (configurations by name) of the same cost.
  PlanOptions restricted;
  restricted.space.param_persistence = threshold;
  const GpuFrontier a = plan_frontier(g, kH100, 4, compute, restricted);
  for (const PlanPoint& p : a.points) {
    const StrategySpace& in = *a.spaces[static_cast<size_t>(p.mesh)];
    StrategySpace full(g, in.mesh(), compute, SpaceOptions{});
    std::vector<int> same(p.assignment.size());
    for (size_t v = 0; v < same.size(); ++v) {
      const std::string& name = in.variables()[v].configs[static_cast<size_t>(p.assignment[v])].name;
      const auto& configs = full.variables()[v].configs;
      const auto it = std::find_if(configs.begin(), configs.end(), [&](const VarConfig& c) { return c.name == name; });
      REQUIRE(it != configs.end());
      same[v] = static_cast<int>(it - configs.begin());
    }
    CHECK(full.cost(same) == p.cost);
  }
}

TEST_CASE("strategy space: a large Constant read by several ops is state, as a constant initializer, and joins nothing") {
  // Two "layers" add one pooled constant (a mask, as exporters pool equal constants) to their
  // scores; the layers are split along the mask's axes in some strategies. The mask is larger
  // than the importer keeps a value for (kMaxFoldElements): still a constant tensor, which the
  // runtime reads from the file and holds whole, so no variable carries its layout between the
  // layers, and it is counted once.
  test::ModelBuilder b;
  b.input("x", {-1, 512, 16}).input("w1", {16, 256}).input("w2", {256, 16});
  b.node("Constant", {}, {"mask"}).attr_t("value", {512, 256}, -1.0f);
  b.node("MatMul", {"x", "w1"}, {"s1"}).node("Add", {"s1", "mask"}, {"a1"}).node("Relu", {"a1"}, {"h1"});
  b.node("MatMul", {"h1", "w2"}, {"s2"}).node("MatMul", {"s2", "w1"}, {"s3"});
  b.node("Add", {"s3", "mask"}, {"a2"}).output("a2");
  Graph g = import_onnx_bytes(b.bytes(), "mask.onnx", {.batch = 4});
  const int mask = g.find("mask");
  REQUIRE(mask >= 0);
  CHECK(g.tensors[static_cast<size_t>(mask)].kind == TensorKind::Constant);
  CHECK(g.tensors[static_cast<size_t>(mask)].producer < 0);
  CHECK_FALSE(g.tensors[static_cast<size_t>(mask)].value.has_value());
  AnalyticCompute compute(kH100, Precision::Fp32);
  for (std::vector<int> shape : {std::vector<int>{4}, std::vector<int>{2, 2}}) {
    StrategySpace space(g, DeviceMesh::with_shape(kH100, shape), compute, SpaceOptions{});
    CHECK(space.find_variable("tensor:mask") < 0);
    for (const Link& l : space.links()) CHECK(l.tensor != mask);
    // Held whole and once, however its two readers are split: every point's buffers are the mask's bytes.
    const auto points = solve_ft(space.problem()).points;
    CHECK_FALSE(points.empty());
    for (const auto& p : points) CHECK(space.breakdown(p.assignment)[Term::Buffers] == 512.0 * 256 * 4);
  }
}

TEST_CASE("strategy space: ZeRO-2 holds less than data parallelism and, synchronising each parameter alone, pays each whole collective") {
  Graph g = import_onnx_file(fixture("models/resnet18.onnx"), {.batch = 16});
  AnalyticCompute compute(kH100, Precision::Fp32);
  int compared = 0, two_axis = 0;
  for (std::vector<int> shape : {std::vector<int>{8}, std::vector<int>{2, 4}, std::vector<int>{4, 2}}) {
    StrategySpace s(g, DeviceMesh::with_shape(kH100, shape), compute, SpaceOptions{});
    for (size_t v = 0; v < s.variables().size(); ++v) {
      const Variable& var = s.variables()[v];
      if (var.kind != VarKind::Parameter) continue;
      for (size_t a = 0; a < var.configs.size(); ++a) {
        for (size_t b = 0; b < var.configs.size(); ++b) {
          if (var.configs[a].zero != 0 || var.configs[b].zero != 2 || !(var.configs[a].layout == var.configs[b].layout)) continue;
          CAPTURE(var.name);
          CAPTURE(var.configs[b].name);
          const Breakdown plain = s.variable_terms(static_cast<int>(v), static_cast<int>(a));
          const Breakdown zero = s.variable_terms(static_cast<int>(v), static_cast<int>(b));
          double moved_plain = 0, moved_zero = 0;
          for (int t = static_cast<int>(Term::CommFirst); t <= static_cast<int>(Term::CommLast); ++t) {
            moved_plain += plain[static_cast<Term>(t)];
            moved_zero += zero[static_cast<Term>(t)];
          }
          // The reduce-scatter and all-gather of every all-reduce of the plain plan, each at its
          // whole (unbucketed) time: the runtime runs ZeRO-2's per parameter.
          double expect = 0;
          const Tensor& t = g.tensors[static_cast<size_t>(var.tensor)];
          const Layout& l = var.configs[b].layout;
          for (const Step& st : redistribute(t.shape, 4, gradient_layout(l), l, s.mesh()).steps) {
            if (!is_collective(st.kind)) continue;
            Step scatter = st, gather = st;
            scatter.kind = st.kind == StepKind::AllReduce ? StepKind::ReduceScatter : st.kind;
            gather.kind = StepKind::AllGather;
            expect += step_time(scatter, s.mesh()) + (st.kind == StepKind::AllReduce ? step_time(gather, s.mesh()) : 0);
          }
          CHECK(moved_plain > 0);
          CHECK(moved_zero == doctest::Approx(expect).epsilon(1e-9));
          CHECK(moved_zero >= moved_plain);
          CHECK(zero.memory() < plain.memory());
          ++compared;
          const auto& pl = var.configs[b].layout.placements();
          two_axis += pl.size() == 2 && (pl[0].is_replicate() != pl[1].is_replicate());
        }
      }
    }
  }
  CHECK(compared > 300);
  CHECK(two_axis > 50);  // replicated on one axis, sharded on the other: where it once cost more
}

TEST_CASE("strategy space: on one GPU, the saved activations are the model summary's") {
  for (const char* m : {"models/resnet18.onnx", "models/gpt2_small.onnx", "models/vit_b_16.onnx"}) {
    CAPTURE(m);
    Graph g = import_onnx_file(fixture(m), {.batch = 2});
    AnalyticCompute compute(kH100, Precision::Fp32);
    SpaceOptions o;
    o.recompute = false;
    StrategySpace s(g, DeviceMesh::with_shape(kH100, {1}), compute, o);
    std::vector<int> only(s.variables().size(), 0);
    Breakdown b = s.breakdown(only);
    ModelSummary sum = summarize(g);
    CHECK(b[Term::Weights] == static_cast<double>(sum.parameter_bytes));
    CHECK(b[Term::Gradients] == static_cast<double>(sum.parameter_bytes));
    CHECK(b[Term::OptimizerState] == 2.0 * static_cast<double>(sum.parameter_bytes));
    // The summary counts a kept data input as an activation, the space as a data input; the space
    // also counts views of a kept tensor as copies, and the loss's hold on the outputs.
    double kept = b[Term::Activations] + b[Term::DataInputs];
    CHECK(kept >= static_cast<double>(sum.activation_bytes));
    CHECK(kept <= 1.25 * static_cast<double>(sum.activation_bytes));
    CHECK(b[Term::ComputeForward] > 0);
    for (int t = static_cast<int>(Term::CommFirst); t <= static_cast<int>(Term::CommLast); ++t)
      CHECK(b[static_cast<Term>(t)] == 0);
  }
}

TEST_CASE("strategy space: 2^45-element tensors on 4,096 GPUs, and a tensor whose collectives would overflow is refused") {
  AnalyticCompute compute(kH100, Precision::Fp32);
  const DeviceMesh gpus4096 = DeviceMesh::for_cluster(kH100, 4096);
  {
    test::ModelBuilder b;
    b.input("x", {-1, 1024}).input("w", {1024, 16}).node("MatMul", {"x", "w"}, {"y"}).output("y");
    Graph g = import_onnx_bytes(b.bytes(), "big.onnx", {.batch = int64_t{1} << 35, .onnx_cross_check = false});
    StrategySpace s(g, gpus4096, compute, SpaceOptions{});
    const int x = s.find_variable("input:x");
    REQUIRE(x >= 0);
    double least = INFINITY, most = 0;  // x is 2^47 bytes: all of it replicated, 1/4096 fully split
    for (size_t k = 0; k < s.variables()[static_cast<size_t>(x)].configs.size(); ++k) {
      double bytes = s.variable_terms(x, static_cast<int>(k))[Term::DataInputs];
      least = std::min(least, bytes);
      most = std::max(most, bytes);
    }
    CHECK(most == std::ldexp(1.0, 47));
    CHECK(least == std::ldexp(1.0, 47 - 12));
  }
  test::ModelBuilder b;
  b.input("x", {int64_t{1} << 50}).node("Relu", {"x"}, {"y"}).output("y");  // 4 PiB: fits int64 alone
  Graph g = import_onnx_bytes(b.bytes(), "huge.onnx", {.batch = std::nullopt, .onnx_cross_check = false});
  StrategySpace on8(g, DeviceMesh::for_cluster(kH100, 8), compute, SpaceOptions{});
  CHECK(on8.variables().size() > 0);
  try {
    StrategySpace s(g, gpus4096, compute, SpaceOptions{});
    FAIL("expected an InputError");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).rfind("huge.onnx: tensor 'x' [1125899906842624]", 0) == 0);
    CHECK(std::string(e.what()).find("4096 GPUs") != std::string::npos);
  }
}

}  // namespace tensoropt::planner

namespace tensoropt::planner {

TEST_CASE("strategy space: WorkspaceScan equals workspace() bit for bit along walks and frontiers") {
  // Models with recompute, ZeRO-2 flights, tied weights and convolutions' im2col workspace.
  int compared = 0, positive = 0;
  for (const char* model : {"tests/fixtures/models/gpt_gelu_tanh.onnx", "tests/fixtures/models/resnet18_eval.onnx",
                            "tests/fixtures/models/llama_tiny.onnx"}) {
    CAPTURE(model);
    Graph g = import_onnx_file(fixture(model), {.batch = 8});
    AnalyticCompute compute(kH100, Precision::Fp32);
    for (std::vector<int> shape : {std::vector<int>{4}, std::vector<int>{2, 2}}) {
      StrategySpace s(g, DeviceMesh::with_shape(kH100, shape), compute, SpaceOptions{});
      StrategySpace::WorkspaceScan scan(s);
      // The FT frontier in time order, as plan re-costs it.
      const FtResult ft = solve_ft(s.problem());
      for (const FrontierPoint& p : ft.points) {
        const double w = s.workspace(p.assignment);
        REQUIRE(scan.workspace(p.assignment) == w);
        positive += w > 0;
        ++compared;
      }
      // Random walks: one to a few variables changed a step, and now and then a jump.
      std::mt19937_64 rng(static_cast<uint64_t>(compared));
      std::vector<int> a = ft.points.front().assignment;
      for (int step = 0; step < 200; ++step) {
        const int changes = step % 50 == 49 ? static_cast<int>(a.size()) : 1 + step % 4;
        for (int c = 0; c < changes; ++c) {
          const size_t v = std::uniform_int_distribution<size_t>(0, a.size() - 1)(rng);
          a[v] = std::uniform_int_distribution<int>(0, static_cast<int>(s.variables()[v].configs.size()) - 1)(rng);
        }
        const double w = s.workspace(a);
        REQUIRE(scan.workspace(a) == w);
        positive += w > 0;
        ++compared;
      }
    }
  }
  CHECK(compared > 1200);
  CHECK(positive > compared / 2);  // the peak has a transient above what is freed, not only zeros
}

}  // namespace tensoropt::planner

