// One-device training of the runtime fixtures (tests/fixtures/runtime/) as `run` builds it, on any
// backend, and the check that its steps equal PyTorch's (make_reference.py): the loss of each of
// three steps, every gradient of the first step (SGD), and every parameter and BatchNorm running
// statistic after three steps. Shared by test_training.cc (CPU), test_cuda_emulated.cc and
// test_cuda_gpu.cc (CUDA).
// Tolerances (float32 both sides, different summation orders): losses relative 1e-4; gradients
// and weights per tensor |ours - theirs| <= 1e-4 * max|theirs| + 1e-6. Adam and AdamW normalise
// each element's step, so an element whose gradient is zero up to rounding (the key bias of
// attention: softmax ignores a shift common to all keys) moves by lr in a direction rounding
// picks; their final weights are compared where the first step's gradient is above 1e-6 of the
// tensor's largest.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "graph/ir.h"
#include "launcher/runtime/backend.h"
#include "launcher/runtime/data.h"
#include "launcher/runtime/executor.h"
#include "launcher/runtime/optimizer.h"
#include "launcher/runtime/weights.h"

namespace tensoropt::test {

// A training session of fixture `name` at batch 4: on `on` when given, else on a CPU backend of
// two threads it owns.
struct Session {
  Graph g;
  std::unique_ptr<runtime::Backend> own;
  runtime::Backend& backend;
  runtime::LoadedState state;
  std::unique_ptr<runtime::Executor> ex;
  std::unique_ptr<runtime::Optimizer> opt;
  std::unique_ptr<runtime::DataSource> data;
  runtime::StepContext ctx;

  Session(const std::string& name, const std::string& optimizer, std::vector<bool> recompute = {}, bool bf16 = false,
          runtime::Backend* on = nullptr);
  double step();
};

// |ours - theirs| <= 1e-4 * max|theirs| + 1e-6 per element (where `gradient`, when given, is
// above 1e-6 of its largest), as doctest checks naming `what`.
void check_close(const std::vector<float>& ours, const std::vector<float>& theirs, const std::string& what,
                 const std::vector<float>& gradient = {});

// `a`'s float32 values, read through `backend`.
std::vector<float> read_values(runtime::Backend& backend, const runtime::Array& a);

// Trains fixture `name` with make_reference.py's `optimizer` ("sgd", "adam", "adamw") on `on`
// (nullptr: the CPU) and checks it against PyTorch's run, as the header says.
void check_fixture_training(runtime::Backend* on, const std::string& name, const std::string& optimizer);

}  // namespace tensoropt::test

namespace tensoropt::test {

// The fixtures of check_fixture_training, and those of them whose every node has a kernel on
// `backend` (the others are named in `missing`, with an op that lacks one).
const std::vector<std::string>& training_fixtures();
std::vector<std::string> fixtures_with_kernels(const runtime::Backend& backend, std::string* missing);

}  // namespace tensoropt::test
