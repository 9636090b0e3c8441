// The optimizers, as PyTorch defines them (torch.optim.SGD with momentum and weight decay, Adam,
// AdamW; betas 0.9/0.999 and eps 1e-8 by default): one update per parameter per step, on the
// backend (Backend::sgd_step, adam_step), from the gradients the executor left. Their state (the
// momentum buffer; Adam's two moments) is allocated once, zeroed, as MemoryKind::OptimizerState,
// which is what the planner charges from the first step on. Under mixed precision the weights it
// updates are the float32 masters and the gradients bfloat16 (executor.h). Not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string_view>
#include <vector>

#include "launcher/runtime/backend.h"
#include "launcher/runtime/executor.h"

namespace tensoropt::runtime {

enum class OptimizerKind : uint8_t { Sgd, Adam, AdamW };
// "sgd", "adam", "adamw"; throws InputError naming --optimizer otherwise.
OptimizerKind parse_optimizer_kind(std::string_view text);
std::string_view optimizer_kind_name(OptimizerKind k);

struct OptimizerSettings {
  OptimizerKind kind = OptimizerKind::Adam;
  double lr = 1e-3;
  double momentum = 0;       // sgd only
  double weight_decay = 0;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
};

class Optimizer {
 public:
  // `weights`: the model state (weights.h); `params`: the tensors to update (their gradients
  // come from the executor).
  Optimizer(const OptimizerSettings& s, Backend& backend, std::map<int, Array>& weights, std::vector<int> params);
  void step(const GradientSource& ex);
  int64_t steps() const { return steps_; }
  void set_steps(int64_t steps) { steps_ = steps; }
  // Per parameter, its state arrays in a fixed order: sgd {momentum} (none without momentum),
  // adam/adamw {first moment, second moment}. For checkpoints.
  std::map<int, std::vector<Array>>& state() { return state_; }
  const std::map<int, std::vector<Array>>& state() const { return state_; }
  const OptimizerSettings& settings() const { return s_; }

 private:
  OptimizerSettings s_;
  Backend& backend_;
  std::map<int, Array>& weights_;
  std::vector<int> params_;
  std::map<int, std::vector<Array>> state_;
  int64_t steps_ = 0;
};

}  // namespace tensoropt::runtime
