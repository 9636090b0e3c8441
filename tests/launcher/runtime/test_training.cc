// The one-device training step equals PyTorch's (tests/fixtures/runtime/make_reference.py): the
// loss of each of three steps, every gradient of the first step, and every parameter and
// BatchNorm running statistic after three steps of SGD with momentum, Adam and AdamW.
//
// Tolerances (float32 both sides, different summation orders): losses relative 1e-4; gradients
// and weights per tensor |ours - theirs| <= 1e-4 * max|theirs| + 1e-6. Adam and AdamW normalise
// each element's step, so an element whose gradient is zero up to rounding (the key bias of
// attention: softmax ignores a shift common to all keys) moves by lr in a direction rounding
// picks; their final weights are compared where the first step's gradient is above 1e-6 of the
// tensor's largest.
// Also: a checkpoint written after three steps and resumed continues bit for bit as six
// uninterrupted steps; recomputing every op the planner lets recompute gives the same losses and
// gradients bit for bit, with less memory; bf16 mixed precision follows PyTorch's fp32 losses
// within bfloat16's precision (relative 1e-2 over three steps: bfloat16 keeps 8 significant bits,
// and the fixtures' losses move by more than that between steps), holds the model state as the
// planner counts it (2 + 2 + 12 bytes per weight element with Adam) and about half the
// activations, and resumes bit for bit.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "graph/import.h"
#include "launcher/runtime/checkpoint.h"
#include "launcher/runtime/cpu/backend.h"
#include "launcher/runtime/data.h"
#include "launcher/runtime/executor.h"
#include "launcher/runtime/optimizer.h"
#include "launcher/runtime/weights.h"
#include "planner/compute_model.h"
#include "planner/space/space.h"
#include "tests/launcher/runtime/fixture_training.h"
#include "tests/launcher/runtime/reference.h"

namespace tensoropt {
namespace {

using namespace runtime;

const std::string kDir = std::string(TENSOROPT_SOURCE_DIR) + "/tests/fixtures/runtime/";

using test::reference;
using test::Reference;

using test::Session;
using test::check_close;

std::vector<float> values(const Array& a) { return std::vector<float>(a.data<float>(), a.data<float>() + a.numel()); }

}  // namespace

TEST_CASE("training: three steps of every optimizer equal PyTorch's on six model families") {
  for (const std::string& name : test::training_fixtures()) {
    for (const char* optimizer : {"sgd", "adam", "adamw"}) test::check_fixture_training(nullptr, name, optimizer);
  }
}

// --loss mse: the mean of (y - t)^2 over every element of the output, as torch.nn.functional.mse_loss
// with its default reduction, and its gradient 2 (y - t) / N: the loss a step returns equals that
// mean over the forward's output, and every parameter gradient equals the one backward gives from
// that dy.
TEST_CASE("training: the mse loss is the mean squared error and its gradient 2 (y - t) / N") {
  Graph g = import_onnx_file(kDir + "mlp.onnx", {.batch = 4});
  cpu::CpuBackend backend(1);
  LoadedState state = load_state(g, g.source_path, backend, 0);
  ExecutorOptions eo;
  eo.loss = LossKind::Mse;
  Executor ex(g, backend, state.arrays, eo);
  auto data = npy_data(g, LossKind::CrossEntropy, kDir + "mlp.x.npy", kDir + "mlp.y.npy", backend);
  Batch b = data->next(1);
  const StepContext ctx{&backend.allocator(), true, 0, 1, 1};
  const std::vector<Array> y = ex.forward(b.inputs, ctx);
  REQUIRE(y.size() == 1);
  // A target of the output's shape, not all zero.
  Array t(DType::F32, y[0].shape(), backend.allocator(), MemoryKind::Inputs);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>((i % 7) - 3) * 0.25f;
  double want = 0;
  Array dy(DType::F32, y[0].shape(), backend.allocator(), MemoryKind::Transients);
  const auto n = static_cast<double>(y[0].numel());
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double d = static_cast<double>(y[0].data<float>()[i]) - t.data<float>()[i];
    want += d * d / n;
    dy.data<float>()[i] = static_cast<float>(2 * d / n);
  }
  const double loss = ex.train_step(b.inputs, t, ctx);
  CHECK(loss == doctest::Approx(want).epsilon(1e-6));
  std::map<int, std::vector<float>> grads;
  for (int p : ex.gradient_tensors()) grads[p] = values(ex.gradient(p));
  ex.backward_from(b.inputs, {&dy}, ctx);
  for (int p : ex.gradient_tensors()) check_close(values(ex.gradient(p)), grads.at(p), "gradient of " + g.tensors[static_cast<size_t>(p)].name);
}

// A weightless export (the shipped ResNet-18) is initialised as torch.nn initialises its layers:
// convolution and linear weights U(-1/sqrt(fan_in), 1/sqrt(fan_in)) (kaiming_uniform with
// a = sqrt 5) and the linear bias in the same bound, BatchNorm scale 1, bias 0, running mean 0 and
// running variance 1. With thousands of draws a uniform's largest magnitude is within 5% of its bound.
TEST_CASE("weights: a weightless export is initialised as PyTorch initialises its layers") {
  Graph g = import_onnx_file(std::string(TENSOROPT_SOURCE_DIR) + "/models/resnet18.onnx", {.batch = 1});
  cpu::CpuBackend backend(1);
  LoadedState state = load_state(g, g.source_path, backend, 7);
  CHECK(state.initialised.size() == state.arrays.size());  // nothing came from the file
  int convs = 0, norms = 0;
  for (const auto& [t, a] : state.arrays) {
    const Tensor& x = g.tensors[static_cast<size_t>(t)];
    CAPTURE(x.name);
    const std::vector<float> v = values(a);
    float lo = v.empty() ? 0 : *std::min_element(v.begin(), v.end()), hi = v.empty() ? 0 : *std::max_element(v.begin(), v.end());
    const bool bn = x.name.find("bn") != std::string::npos || x.name.find("downsample.1") != std::string::npos;
    if (!bn && x.kind == TensorKind::Parameter && x.shape.size() >= 2) {
      int64_t fan_in = 1;
      for (size_t d = 1; d < x.shape.size(); ++d) fan_in *= x.shape[d];
      const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
      CHECK(hi <= bound);
      CHECK(-lo <= bound);
      CHECK(std::max(hi, -lo) >= 0.95 * bound);
      ++convs;
    } else if (bn && x.name.ends_with("weight")) {
      CHECK(lo == 1.0f);
      CHECK(hi == 1.0f);
      ++norms;
    } else if (x.name.ends_with("running_var")) {
      CHECK(lo == 1.0f);
      CHECK(hi == 1.0f);
    } else if (bn && (x.name.ends_with("bias") || x.name.ends_with("running_mean"))) {
      CHECK(lo == 0.0f);
      CHECK(hi == 0.0f);
    }
  }
  CHECK(convs == 21);  // 20 convolutions and the classifier
  CHECK(norms == 20);
}

TEST_CASE("training: save after three steps and resume continues bit for bit as six steps") {
  struct Case {
    const char* name;
    bool bf16;
    bool external;  // weights in FILE.onnx.data, as a model past kExternalDataAbove writes them
  };
  for (const auto& [name, bf16, external] : {Case{"cnn_bn", false, false}, Case{"gpt", false, false}, Case{"gpt", true, false},
                                             Case{"cnn_bn", false, true}, Case{"gpt", false, true}}) {
    CAPTURE(std::string(name));
    CAPTURE(bf16);
    CAPTURE(external);
    Session straight(name, "adam", {}, bf16);
    for (int k = 0; k < 6; ++k) straight.step();
    auto dir = std::filesystem::temp_directory_path() / ("tensoropt_ckpt_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    std::string path = (dir / (std::string(name) + ".onnx")).string();
    {
      Session first(name, "adam", {}, bf16);
      for (int k = 0; k < 3; ++k) first.step();
      save_checkpoint(path, first.g.source_path, first.g, first.backend, first.state.arrays, *first.opt,
                      external ? 0 : kExternalDataAbove);
    }
    CHECK(std::filesystem::exists(path + ".data") == external);
    CHECK_FALSE(std::filesystem::exists(path + ".part"));

    Session resumed(name, "adam", {}, bf16);
    CHECK(load_checkpoint(path, resumed.g, resumed.backend, resumed.state.arrays, *resumed.opt));
    CHECK(resumed.opt->steps() == 3);
    {
      // The saved file is a model in its own right: loaded as one, every weight comes from it
      // (from the .data file when external) and equals the checkpoint's.
      Graph saved = import_onnx_file(path, {.batch = 4});
      LoadedState st = load_state(saved, path, resumed.backend, 0);
      CHECK(st.initialised.empty());
      for (const auto& [t, a] : resumed.state.arrays) {
        const Tensor& x = resumed.g.tensors[static_cast<size_t>(t)];
        if (x.kind != TensorKind::Parameter && x.kind != TensorKind::Buffer) continue;
        const Array& b = st.arrays.at(saved.find(x.name));
        CHECK_MESSAGE(std::memcmp(a.raw(), b.raw(), static_cast<size_t>(a.bytes())) == 0, x.name);
      }
    }
    for (int k = 0; k < 3; ++k) resumed.step();
    for (const auto& [t, a] : straight.state.arrays) {
      if (a.dtype() != DType::F32) continue;
      const Array& b = resumed.state.arrays.at(t);
      CHECK_MESSAGE(std::memcmp(a.raw(), b.raw(), static_cast<size_t>(a.bytes())) == 0, straight.g.tensors[static_cast<size_t>(t)].name);
    }
    // A checkpoint of one model does not load into another.
    Session other("mlp", "adam");
    CHECK_THROWS_WITH_AS(load_checkpoint(path, other.g, other.backend, other.state.arrays, *other.opt),
                         doctest::Contains("not a checkpoint of"), InputError);
    std::filesystem::remove_all(dir);
  }
}

TEST_CASE("training: recomputing every op that may gives the same losses and gradients bit for bit, in less memory") {
  for (const char* name : {"mlp", "cnn_bn", "resblock", "gpt", "vit", "branches"}) {
    CAPTURE(std::string(name));
    Session plain(name, "adam");
    // The ops `plan --recompute all` may recompute, as the planner decides it; the most activations
    // held at once must fall.
    planner::Cluster cluster = planner::load_cluster("cpu");
    planner::AnalyticCompute compute(cluster, planner::Precision::Fp32);
    planner::SpaceOptions so;
    so.recompute_all = true;
    planner::StrategySpace space(plain.g, planner::DeviceMesh::with_shape(cluster, {1}), compute, so);
    std::vector<bool> recompute(plain.g.nodes.size(), false);
    int n = 0;
    for (const planner::Variable& v : space.variables()) {
      if (v.kind == planner::VarKind::Op && v.may_recompute) {
        recompute[static_cast<size_t>(v.node)] = true;
        ++n;
      }
    }
    REQUIRE(n > 0);
    Session again(name, "adam", recompute);
    for (int k = 0; k < 2; ++k) {
      CAPTURE(k);
      double a = plain.step(), b = again.step();
      CHECK(a == b);
      for (int t : plain.ex->gradient_tensors()) {
        const Array &x = plain.ex->gradient(t), &y = again.ex->gradient(t);
        CHECK_MESSAGE(std::memcmp(x.raw(), y.raw(), static_cast<size_t>(x.bytes())) == 0, plain.g.tensors[static_cast<size_t>(t)].name);
      }
    }
    const auto kept = [](Session& s) { return s.backend.allocator().stats().peak[static_cast<size_t>(MemoryKind::Activations)]; };
    CAPTURE(kept(plain));
    CAPTURE(kept(again));
    CHECK(kept(again) < kept(plain));
  }
}

TEST_CASE("training: bf16 mixed precision follows PyTorch's fp32 losses and holds what the planner counts") {
  for (const char* name : {"mlp", "cnn_bn", "resblock", "gpt", "vit", "branches"}) {
    CAPTURE(std::string(name));
    Reference ref = reference(name);
    Session wide(name, "adam"), mixed(name, "adam", {}, true);
    auto losses = ref.head["losses"]["adam"].get<std::vector<double>>();
    for (size_t k = 0; k < losses.size(); ++k) {
      CAPTURE(k);
      wide.step();
      CHECK(mixed.step() == doctest::Approx(losses[k]).epsilon(1e-2));
    }
    // The model state, kind by kind: bf16 weights and gradients, fp32 master and two moments.
    int64_t elements = 0;
    for (int t : mixed.ex->gradient_tensors()) elements += numel(mixed.g.tensors[static_cast<size_t>(t)].shape);
    const MemoryStats a = wide.backend.allocator().stats(), b = mixed.backend.allocator().stats();
    const auto live = [](const MemoryStats& m, MemoryKind k) { return m.live[static_cast<size_t>(k)]; };
    const auto at = [](const MemoryStats& m, MemoryKind k) { return m.peak[static_cast<size_t>(k)]; };
    CHECK(live(b, MemoryKind::Parameters) == 2 * elements);
    CHECK(live(b, MemoryKind::Gradients) == 2 * elements);
    CHECK(live(b, MemoryKind::OptimizerState) == 12 * elements);
    CHECK(live(a, MemoryKind::Parameters) == 4 * elements);
    // Float activations take half the bytes (extras such as dropout masks and BatchNorm statistics
    // stay as the kernels make them).
    const double ratio = static_cast<double>(at(b, MemoryKind::Activations)) / static_cast<double>(at(a, MemoryKind::Activations));
    CAPTURE(ratio);
    CHECK(ratio >= 0.45);
    CHECK(ratio <= 0.65);
  }
}

TEST_CASE("bfloat16: float32 rounds to nearest even, keeps infinities and NaN") {
  const auto bits = [](float v) { return float_to_bf16(v); };
  CHECK(bits(1.0f) == 0x3f80);
  CHECK(bits(1.0f + 0x1p-8f) == 0x3f80);           // a tie: to the even 1.0
  CHECK(bits(1.0f + 3 * 0x1p-8f) == 0x3f82);       // a tie: to the even 1 + 2^-6
  CHECK(bits(1.0f + 0x1p-8f + 0x1p-16f) == 0x3f81);  // past the tie: up
  CHECK(bits(-2.5f) == 0xc020);
  CHECK(bits(std::numeric_limits<float>::max()) == 0x7f80);  // rounds up to infinity
  CHECK(bits(std::numeric_limits<float>::infinity()) == 0x7f80);
  CHECK(std::isnan(bf16_to_float(bits(std::numeric_limits<float>::quiet_NaN()))));
  CHECK(std::isnan(bf16_to_float(bits(std::bit_cast<float>(0x7f800001u)))));  // a NaN with low payload only
  CHECK(bf16_to_float(0x3f81) == 1.0f + 0x1p-7f);
}

}  // namespace tensoropt
