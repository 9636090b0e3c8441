// The sharded training step equals the one-device step: on the runtime's reference models, for
// random strategies of the planner's space (every variable's configuration drawn at random, so
// tensor, data and mixed parallelism, partial sums, tensor variables and every kind of layout
// transition occur, recompute and ZeRO-2; and draws that take recompute and ZeRO-2 wherever the
// space offers them, with every op free to recompute) on meshes [2], [3] and [2,2] of worker
// processes over Gloo (and [8], [2,4] for two models), three steps of SGD
// with momentum give the one-device losses (relative 1e-5: float32 sums in another order), the
// first step's gradients (per tensor |ours - one device| <= 1e-4 * max|one device| + 1e-7) and the
// final weights (1e-3 * max + 1e-5: three steps carry the first step's rounding differences on).
// Under bf16 mixed precision the same runs compare with the one-device bf16 run. bfloat16 keeps 8
// bits of mantissa, so every rounding moves a value by up to 2^-9 of itself, and the sharded step
// rounds partial sums and gradients in other places and orders (on their way between workers); a
// pre-activation that lands on the other side of a ReLU's zero then flips that unit's whole row of
// a weight gradient (the MLP's first layer at batch 4: 12% of the gradient's norm from one unit of
// one sample), so elementwise bounds do not hold and tensors compare in the L2 norm: losses to
// relative 2e-3, each gradient to ||ours - one device|| <= 0.25 ||one device|| (a gradient summed
// twice or lost is 1.0 or more), each final weight to 2e-2 of its norm (ViT's class token, which
// starts at zero, moves 1% of its norm away). Also: gather_whole, DDP's BatchNormalization, and a
// step broken by a lost peer rewound (rewind_buffers).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "graph/import.h"
#include "launcher/comm/gloo_communicator.h"
#include "launcher/runtime/cpu/backend.h"
#include "launcher/runtime/data.h"
#include "launcher/runtime/optimizer.h"
#include "launcher/runtime/sharded_executor.h"
#include "launcher/runtime/weights.h"
#include "planner/compute_model.h"
#include "planner/parallel/cluster.h"
#include "planner/sharding.h"
#include "planner/baselines.h"
#include "tests/children.h"
#include "tests/launcher/runtime/reference.h"

namespace tensoropt {
namespace {

using namespace runtime;

const std::string kDir = std::string(TENSOROPT_SOURCE_DIR) + "/tests/fixtures/runtime/";
constexpr int kSteps = 3;

// SGD with momentum: unlike Adam, which moves an element by about lr whatever the size of its
// gradient, it keeps a difference in rounding a difference in rounding, so weights compare tightly.
OptimizerSettings sgd() {
  OptimizerSettings s;
  s.kind = OptimizerKind::Sgd;
  s.lr = 0.05;
  s.momentum = 0.9;
  return s;
}

struct Tolerance {
  double loss, grad, weight;
  bool l2;  // tensors in the L2 norm (else elementwise against the largest magnitude)
};
// bf16 losses: within 4e-3, about one bf16 rounding (2^-8) of the loss: a sharded step rounds
// partial products and sums in another order than one device does, and three steps carry that on
// (the vit's projection, an Einsum and a bias Add each rounding once, drifts 2.2e-3 on one draw;
// the same draws in fp32 agree within 1e-5, which is what checks the sharding itself).
constexpr Tolerance kFp32{1e-5, 1e-4, 1e-3, false}, kBf16{4e-3, 0.25, 2e-2, true};

// How far `got` is from `want` on the tolerance's scale: the largest elementwise difference over
// the largest |want| (plus `floor`), or the L2 norms' ratio; and the element that differs most.
struct Gap {
  double ratio = 0;
  size_t at = 0;
  double worst = 0, scale = 0;
};
Gap gap(const std::vector<float>& got, const std::vector<float>& want, bool l2, double floor) {
  Gap r;
  double diff2 = 0, want2 = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double d = std::abs(static_cast<double>(got[i]) - want[i]);
    if (d > r.worst) r.worst = d, r.at = i;
    r.scale = std::max(r.scale, static_cast<double>(std::abs(want[i])));
    diff2 += d * d;
    want2 += static_cast<double>(want[i]) * want[i];
  }
  r.ratio = l2 ? std::sqrt(diff2) / (std::sqrt(want2) + floor) : r.worst / (r.scale + floor);
  return r;
}

struct OneDevice {
  std::vector<double> losses;
  std::map<std::string, std::vector<float>> weights;  // final parameters by name
  std::map<std::string, std::vector<float>> grads;    // first step's gradients by name
  std::map<std::string, std::vector<float>> buffers;  // final float buffers by name
  std::map<std::string, std::vector<float>> momentum; // final SGD momentum by parameter name
};

// An array's values as float (bfloat16 widened).
std::vector<float> values(const Array& a) {
  if (a.dtype() == DType::F32) return std::vector<float>(a.data<float>(), a.data<float>() + a.numel());
  std::vector<float> v;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const uint32_t bits = static_cast<uint32_t>(a.data<uint16_t>()[i]) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    v.push_back(f);
  }
  return v;
}

OneDevice one_device(const std::string& name, bool bf16 = false) {
  Graph g = import_onnx_file(kDir + name + ".onnx", {.batch = 4});
  cpu::CpuBackend backend(1);
  LoadedState state = load_state(g, g.source_path, backend, 0);
  ExecutorOptions eo;
  eo.bf16 = bf16;
  Executor ex(g, backend, state.arrays, eo);
  Optimizer opt(sgd(), backend, state.arrays, ex.gradient_tensors());
  auto data = npy_data(g, LossKind::CrossEntropy, kDir + name + ".x.npy", kDir + name + ".y.npy", backend);
  OneDevice r;
  for (int s = 1; s <= kSteps; ++s) {
    Batch b = data->next(s);
    r.losses.push_back(ex.train_step(b.inputs, b.target, StepContext{&backend.allocator(), true, 0, s, 1}));
    for (int t : ex.gradient_tensors()) {
      if (s == 1) r.grads[g.tensors[static_cast<size_t>(t)].name] = values(ex.gradient(t));
    }
    opt.step(ex);
  }
  for (int t : ex.gradient_tensors()) {
    r.weights[g.tensors[static_cast<size_t>(t)].name] = values(state.arrays.at(t));
    r.momentum[g.tensors[static_cast<size_t>(t)].name] = values(opt.state().at(t).at(0));
  }
  for (const auto& [t, a] : state.arrays)
    if (g.tensors[static_cast<size_t>(t)].kind == TensorKind::Buffer && a.dtype() == DType::F32) r.buffers[g.tensors[static_cast<size_t>(t)].name] = values(a);
  return r;
}

// |got - want| <= 1e-3 * max|want| + 1e-5, or an error naming what differs.
void same_values(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  if (got.size() != want.size()) throw std::runtime_error(what + ": " + std::to_string(got.size()) + " values, want " + std::to_string(want.size()));
  double scale = 0, worst = 0;
  for (float v : want) scale = std::max(scale, static_cast<double>(std::abs(v)));
  for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, static_cast<double>(std::abs(got[i] - want[i])));
  if (worst > 1e-3 * scale + 1e-5) throw std::runtime_error(what + " differs by " + std::to_string(worst));
}

// Every parameter's synchronised gradient, gathered, against the one-device step's.
void check_gradients(const Graph& g, ShardedExecutor& ex, const Sharding& sh, const OneDevice& want, const Tolerance& tol) {
  std::string failures;
  for (int t : ex.gradient_tensors()) {
    const Tensor& x = g.tensors[static_cast<size_t>(t)];
    const std::vector<float> whole = values(ex.whole_gradient(t));
    const std::vector<float>& ref = want.grads.at(x.name);
    const Gap d = gap(whole, ref, tol.l2, 1e-7 / tol.grad);
    if (d.ratio > tol.grad) {
      std::ostringstream os;
      os << "gradient of " << x.name << " (" << sh.plan.home[static_cast<size_t>(t)].str() << ") differs by " << d.ratio << " of its scale, most at element "
         << d.at << " (" << d.worst << "; one device " << ref[d.at] << ", largest " << d.scale << "); read by";
      for (size_t n = 0; n < g.nodes.size(); ++n)
        for (size_t q = 0; q < g.nodes[n].inputs.size(); ++q)
          if (g.nodes[n].inputs[q] == t) os << " " << g.nodes[n].label() << " in " << sh.plan.in[n][q].str() << " out " << sh.plan.out[n][0].str();

      failures += (failures.empty() ? "" : " | ") + os.str();
    }
  }
  if (!failures.empty()) throw std::runtime_error(failures);
}

// One worker: a random strategy (the same draw on every worker), three steps, then its losses and
// gathered weights against the one-device run. Throws on the first difference.
// A reference model imported at batch 4 and its strategy space on a mesh of CPU workers.
struct ModelSpace {
  Graph g;
  planner::Cluster cluster = planner::load_cluster("cpu");
  planner::DeviceMesh mesh;
  planner::AnalyticCompute compute;
  planner::StrategySpace space;
  ModelSpace(const std::string& name, const std::vector<int>& mesh_shape, const planner::SpaceOptions& options = {})
      : g(import_onnx_file(kDir + name + ".onnx", {.batch = 4})),
        mesh(planner::DeviceMesh::with_shape(cluster, mesh_shape)),
        compute(cluster, planner::Precision::Fp32),
        space(g, mesh, compute, options) {}
};

// One worker of a test group: its communicator (Gloo, a file store in `store`), its layouts, its
// shard of the model's state, the sharded executor and the optimizer, ready for steps.
struct Worker {
  std::unique_ptr<comm::Communicator> comm;
  cpu::CpuBackend backend{1};
  Sharding sh;
  LoadedState state;
  std::unique_ptr<ShardedExecutor> ex;
  std::unique_ptr<Optimizer> opt;

  Worker(const Graph& g, const planner::StrategySpace& space, const std::vector<int>& assignment, int rank, const std::string& store,
         const OptimizerSettings& settings, bool bf16 = false) {
    comm::GlooOptions o;
    o.rank = rank;
    o.size = space.mesh().size();
    o.rendezvous = "file:" + store;
    o.timeout = std::chrono::seconds(20);
    o.hostname = "127.0.0.1";
    comm = comm::make_gloo_communicator(o);
    sh = Sharding{MeshContext{&space.mesh(), rank, comm.get()}, planner::sharding_plan(space, assignment)};
    state = load_state(g, g.source_path, backend, 0);
    for (auto& [t, a] : state.arrays)
      if (g.tensors[static_cast<size_t>(t)].kind == TensorKind::Parameter) a = home_shard(sh, g, t, a, backend, MemoryKind::Parameters);
    ex = std::make_unique<ShardedExecutor>(g, backend, state.arrays, sh, LossKind::CrossEntropy, bf16);
    opt = std::make_unique<Optimizer>(settings, backend, ex->optimizer_weights(), ex->gradient_tensors());
  }
  // Forward, loss and backward on the global batch of step s: the loss.
  double train(DataSource& data, int s) {
    Batch b = data.next(s);
    return ex->train_step(std::move(b.inputs), std::move(b.target), StepContext{&backend.allocator(), true, 0, s, 1});
  }
  // The optimizer's step on the gradients train() left.
  void update() {
    opt->step(*ex);
    ex->after_optimizer_step();
  }
};

// How a strategy is drawn: every configuration alike, or only those that recompute (ops) and use
// ZeRO-2 (parameters) wherever a variable has some, in the space where every op may recompute.
enum class Draw { Any, RecomputeZero };

void worker(const std::string& name, const std::vector<int>& mesh_shape, uint64_t draw, Draw how, int rank, const std::string& store,
            const OneDevice& want, bool bf16) {
  const Tolerance tol = bf16 ? kBf16 : kFp32;
  planner::SpaceOptions so;
  so.recompute_all = how == Draw::RecomputeZero;
  ModelSpace m(name, mesh_shape, so);
  const Graph& g = m.g;
  const planner::StrategySpace& space = m.space;
  std::mt19937_64 rng(draw);
  std::vector<int> assignment;
  for (const planner::Variable& v : space.variables()) {
    std::vector<int> pool;
    for (size_t c = 0; c < v.configs.size(); ++c) {
      if (how == Draw::Any || v.configs[c].recompute || v.configs[c].zero == 2) pool.push_back(static_cast<int>(c));
    }
    if (pool.empty()) {
      for (size_t c = 0; c < v.configs.size(); ++c) pool.push_back(static_cast<int>(c));
    }
    assignment.push_back(pool[rng() % pool.size()]);
  }

  Worker w(g, space, assignment, rank, store, sgd(), bf16);
  auto data = npy_data(g, LossKind::CrossEntropy, kDir + name + ".x.npy", kDir + name + ".y.npy", w.backend);
  for (int s = 1; s <= kSteps; ++s) {
    const double loss = w.train(*data, s);
    const double ref = want.losses[static_cast<size_t>(s - 1)];
    if (std::abs(loss - ref) > tol.loss * std::abs(ref)) {
      std::ostringstream os;
      os << "step " << s << ": loss " << loss << ", one device " << ref << "; strategy:";
      for (size_t v = 0; v < assignment.size(); ++v)
        os << " " << space.variables()[v].name << "=" << space.variables()[v].configs[static_cast<size_t>(assignment[v])].name;
      throw std::runtime_error(os.str());
    }
    if (s == 1) {
      try {
        check_gradients(g, *w.ex, w.sh, want, tol);
      } catch (const std::exception& e) {
        std::ostringstream os;
        os << e.what() << " STRATEGY";
        for (size_t v = 0; v < assignment.size(); ++v)
          os << " " << space.variables()[v].name << "=" << space.variables()[v].configs[static_cast<size_t>(assignment[v])].name;
        throw std::runtime_error(os.str());
      }
    }
    w.update();
  }
  // The final weights: the shards gathered (under bf16 the float32 masters, as a checkpoint takes them).
  const planner::Layout r = planner::Layout::replicated(m.mesh.ndim());
  std::map<int, std::vector<Array>> slots;
  std::map<int, Array> masters;
  if (bf16) masters = w.ex->gather_whole(*w.opt, slots);
  for (int t : w.ex->gradient_tensors()) {
    const Tensor& x = g.tensors[static_cast<size_t>(t)];
    const Array whole = bf16 ? masters.at(t)
                             : run_transition(w.state.arrays.at(t), planner::redistribute(x.shape, 4, w.sh.plan.home[static_cast<size_t>(t)], r, m.mesh),
                                              w.sh.where, w.backend, MemoryKind::Transients);
    const std::vector<float>& ref = want.weights.at(x.name);
    const Gap d = gap(values(whole), ref, tol.l2, 1e-5 / tol.weight);
    if (d.ratio > tol.weight) {
      std::ostringstream os;
      os << "weight " << x.name << " (" << w.sh.plan.home[static_cast<size_t>(t)].str() << ") differs by " << d.ratio << " of its scale";
      throw std::runtime_error(os.str());
    }
  }
}

void random_strategies(const std::string& name, const std::vector<int>& mesh_shape, int draws, Draw how = Draw::Any, bool bf16 = false) {
  const OneDevice want = one_device(name, bf16);
  int n = 1;
  for (int a : mesh_shape) n *= a;
  for (int d = 0; d < draws; ++d) {
    CAPTURE(name);
    CAPTURE(d);
    test::TempDir dir;
    auto results = test::run_children(n, [&](int rank) { worker(name, mesh_shape, 1000 + static_cast<uint64_t>(d), how, rank, dir.path, want, bf16); },
                                      std::chrono::seconds(120));
    for (size_t r = 0; r < results.size(); ++r) {
      CAPTURE(r);
      CHECK(results[r].message == "ok");
    }
  }
}

}  // namespace

TEST_CASE("sharded step: random strategies on 2 and 3 workers equal the one-device step") {
  // (The BatchNorm models are not here: a batch split gives per-shard statistics, as DDP does,
  // which the one-device step does not compute.)
  for (const char* name : {"mlp", "gpt", "vit", "branches"}) {
    random_strategies(name, {2}, 3);
    random_strategies(name, {3}, 2);
  }
}

TEST_CASE("sharded step: random strategies on a 2x2 mesh equal the one-device step") {
  for (const char* name : {"mlp", "gpt", "branches"}) random_strategies(name, {2, 2}, 2);
}

TEST_CASE("sharded step: random strategies on 8 workers ([8] and [2,4]) equal the one-device step") {
  for (const char* name : {"mlp", "gpt"}) {
    random_strategies(name, {8}, 1);
    random_strategies(name, {2, 4}, 1);
  }
}

TEST_CASE("sharded step: recompute and ZeRO-2 wherever offered equal the one-device step") {
  for (const char* name : {"mlp", "gpt", "vit", "branches"}) {
    random_strategies(name, {2}, 2, Draw::RecomputeZero);
    random_strategies(name, {2, 2}, 1, Draw::RecomputeZero);
  }
}

TEST_CASE("sharded step: bf16 mixed precision equals the one-device bf16 step, random strategies, recompute and ZeRO-2") {
  for (const char* name : {"mlp", "gpt", "vit", "branches"}) {
    random_strategies(name, {2}, 2, Draw::Any, true);
    random_strategies(name, {2, 2}, 1, Draw::Any, true);
    random_strategies(name, {2}, 1, Draw::RecomputeZero, true);
  }
}

// A checkpoint's view of a sharded run: after three steps of a random strategy whose
// BatchNormalizations split channels (so each worker's running statistics of its channels are the
// one-device ones), gather_whole gives every worker the one-device parameters, momentum and
// running statistics. (Found: a kernel that updated the running statistics in its input wrote into
// a worker's transitioned copy; an unused output was labelled replicated under a channel split; a
// mean over a split axis divided by the local count.)
TEST_CASE("sharded step: gather_whole collects parameters, optimizer state and channel-split running statistics") {
  for (const std::string model : {"cnn_bn", "resblock"}) {
  const OneDevice want = one_device(model);
  REQUIRE(!want.buffers.empty());
  for (uint64_t draw : {7, 8, 9}) {
    CAPTURE(model);
    CAPTURE(draw);
    test::TempDir dir;
    auto results = test::run_children(2, [&](int rank) {
      ModelSpace m(model, {2});
      const Graph& g = m.g;
      const planner::StrategySpace& space = m.space;
      std::mt19937_64 rng(draw);
      std::vector<int> assignment;
      for (const planner::Variable& v : space.variables()) {
        const int split = v.find_config("d1:S0");
        const bool bn = v.kind == planner::VarKind::Op && g.nodes[static_cast<size_t>(v.node)].op_type == "BatchNormalization";
        if (bn && split < 0) throw std::runtime_error(v.name + " has no d1:S0 configuration");
        assignment.push_back(bn ? split : static_cast<int>(rng() % v.configs.size()));
      }
      Worker w(g, space, assignment, rank, dir.path, sgd());
      auto data = npy_data(g, LossKind::CrossEntropy, kDir + model + ".x.npy", kDir + model + ".y.npy", w.backend);
      for (int s = 1; s <= kSteps; ++s) {
        w.train(*data, s);
        w.update();
      }
      std::map<int, std::vector<Array>> slots;
      const std::map<int, Array> whole = w.ex->gather_whole(*w.opt, slots);
      std::string strategy;
      for (size_t v = 0; v < assignment.size(); ++v)
        strategy += " " + space.variables()[v].name + "=" + space.variables()[v].configs[static_cast<size_t>(assignment[v])].name;
      try {
      for (const auto& [t, a] : whole) {
        const std::string& name = g.tensors[static_cast<size_t>(t)].name;
        if (g.tensors[static_cast<size_t>(t)].kind == TensorKind::Parameter) {
          same_values(values(a), want.weights.at(name), "weight " + name);
          same_values(values(slots.at(t).at(0)), want.momentum.at(name), "momentum of " + name);
        } else if (want.buffers.count(name)) {
          same_values(values(a), want.buffers.at(name), "buffer " + name);
        }
      }
      } catch (const std::exception& e) {
        throw std::runtime_error(std::string(e.what()) + "; strategy:" + strategy);
      }
    }, std::chrono::seconds(120));
    for (const auto& r : results) CHECK(r.message == "ok");
  }
  }
}

// Data parallelism on a 1-axis mesh: every op splits its batch (ops without one replicate),
// parameters replicated, no ZeRO.
std::vector<int> data_parallel_assignment(const planner::StrategySpace& space) {
  std::vector<int> assignment;
  for (const planner::Variable& v : space.variables()) {
    int pick = -1;
    for (size_t c = 0; c < v.configs.size() && pick < 0; ++c) {
      const planner::VarConfig& vc = v.configs[c];
      const bool ok = v.kind == planner::VarKind::Op ? !vc.recompute && planner::data_parallel(v, v.op_configs[static_cast<size_t>(vc.op_config)])
                      : v.kind == planner::VarKind::Parameter ? vc.zero == 0 && vc.layout == planner::Layout::replicated(1)
                                                              : true;
      if (ok) pick = static_cast<int>(c);
    }
    if (pick < 0) throw std::runtime_error(v.name + ": no data-parallel configuration");
    assignment.push_back(pick);
  }
  return assignment;
}

// Data parallelism with BatchNormalization is DDP's: on 2 workers every op splits the batch, each
// worker's BatchNormalization normalises its half by the half's statistics and updates its own
// running statistics, and the gradients are averaged: three steps of SGD give the losses, the
// parameters and worker 0's running statistics of PyTorch's DDP on 2 replicas (make_reference.py,
// "ddp2_sgd"), to the tolerances of the one-device comparison.
TEST_CASE("sharded step: data parallelism with BatchNormalization equals PyTorch DDP on 2 replicas") {
  for (const std::string model : {"cnn_bn", "resblock"}) {
    CAPTURE(model);
    const test::Reference ref = test::reference(model);
    REQUIRE(ref.head["losses"].contains("ddp2_sgd"));
    const std::vector<double> want = ref.head["losses"]["ddp2_sgd"].get<std::vector<double>>();
    test::TempDir dir;
    auto results = test::run_children(2, [&](int rank) {
      ModelSpace m(model, {2});
      const Graph& g = m.g;
      const planner::StrategySpace& space = m.space;
      Worker w(g, space, data_parallel_assignment(space), rank, dir.path, test::reference_settings("sgd"));
      auto data = npy_data(g, LossKind::CrossEntropy, kDir + model + ".x.npy", kDir + model + ".y.npy", w.backend);
      for (int s = 1; s <= kSteps; ++s) {
        const double loss = w.train(*data, s);
        if (std::abs(loss - want[static_cast<size_t>(s - 1)]) > 1e-4 * std::abs(want[static_cast<size_t>(s - 1)])) {
          throw std::runtime_error("step " + std::to_string(s) + ": loss " + std::to_string(loss) + ", DDP's " +
                                   std::to_string(want[static_cast<size_t>(s - 1)]));
        }
        w.update();
      }
      std::map<int, std::vector<Array>> slots;
      const std::map<int, Array> whole = w.ex->gather_whole(*w.opt, slots);
      for (const auto& [t, a] : whole) {
        const std::string& name = g.tensors[static_cast<size_t>(t)].name;
        Shape shape;
        const std::vector<float> theirs = ref.tensor("ddp2_sgd/" + name, shape);
        if (theirs.empty()) continue;  // an integer buffer (num_batches_tracked)
        same_values(values(a), theirs, name);
      }
    }, std::chrono::seconds(120));
    for (const auto& r : results) CHECK(r.message == "ok");
  }
}

// An elastic job's survivor (launcher/elastic/worker.cc): a peer lost during a step leaves this
// worker's BatchNormalization running statistics moved by that step's forward (data parallelism
// has no collective before the backward's gradients), while the parameters stay at the step
// before. With keep_step_start, rewind_buffers puts the statistics back where the step found
// them, to the bit.
TEST_CASE("sharded step: a step a lost peer broke leaves the running statistics where it found them after rewind_buffers") {
  test::TempDir dir;
  auto results = test::run_children(2, [&](int rank) {
    ModelSpace m("cnn_bn", {2});
    const Graph& g = m.g;
    Worker w(g, m.space, data_parallel_assignment(m.space), rank, dir.path, sgd());
    w.ex->keep_step_start(true);
    auto data = npy_data(g, LossKind::CrossEntropy, kDir + std::string("cnn_bn.x.npy"), kDir + std::string("cnn_bn.y.npy"), w.backend);
    w.train(*data, 1);
    w.update();
    if (rank == 1) return;  // lost: its process ends, and with it its connections
    std::map<int, std::vector<float>> before;
    for (const auto& [t, a] : w.state.arrays)
      if (g.tensors[static_cast<size_t>(t)].kind == TensorKind::Buffer && a.dtype() == DType::F32) before[t] = values(a);
    if (before.empty()) throw std::runtime_error("cnn_bn has no float buffer");
    bool broke = false;
    try {
      w.train(*data, 2);
    } catch (const comm::CommError&) {
      broke = true;
    }
    if (!broke) throw std::runtime_error("step 2 finished without its peer");
    if (w.ex->steps_begun() != 2) throw std::runtime_error("steps_begun " + std::to_string(w.ex->steps_begun()) + ", not 2");
    bool moved = false;
    for (const auto& [t, v] : before) moved = moved || values(w.state.arrays.at(t)) != v;
    if (!moved) throw std::runtime_error("the broken step's forward moved no running statistic");
    w.ex->rewind_buffers();
    for (const auto& [t, v] : before)
      if (values(w.state.arrays.at(t)) != v) throw std::runtime_error("buffer " + g.tensors[static_cast<size_t>(t)].name + " not rewound");
  }, std::chrono::seconds(120));
  for (const auto& r : results) CHECK(r.message == "ok");
}

}  // namespace tensoropt
