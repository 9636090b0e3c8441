#include "launcher/runtime/optimizer.h"

#include <string>

#include "graph/error.h"

namespace tensoropt::runtime {

OptimizerKind parse_optimizer_kind(std::string_view text) {
  if (text == "sgd" || text == "momentum") return OptimizerKind::Sgd;
  if (text == "adam") return OptimizerKind::Adam;
  if (text == "adamw") return OptimizerKind::AdamW;
  throw InputError("--optimizer: unknown optimizer '" + std::string(text) + "' (accepted: sgd, momentum, adam, adamw)");
}

std::string_view optimizer_kind_name(OptimizerKind k) {
  switch (k) {
    case OptimizerKind::Sgd: return "sgd";
    case OptimizerKind::Adam: return "adam";
    case OptimizerKind::AdamW: return "adamw";
  }
  return "?";
}

Optimizer::Optimizer(const OptimizerSettings& s, Backend& backend, std::map<int, Array>& weights, std::vector<int> params)
    : s_(s), backend_(backend), weights_(weights), params_(std::move(params)) {
  int slots = s_.kind == OptimizerKind::Sgd ? (s_.momentum != 0 ? 1 : 0) : 2;
  for (int t : params_) {
    const Array& w = weights_.at(t);
    auto& v = state_[t];
    for (int k = 0; k < slots; ++k) {
      v.emplace_back(w.dtype(), w.shape(), backend_.allocator(), MemoryKind::OptimizerState);
      backend_.fill(v.back(), 0.0);
    }
  }
}

void Optimizer::step(const GradientSource& ex) {
  ++steps_;
  const AdamSettings adam{s_.lr, s_.beta1, s_.beta2, s_.eps, s_.weight_decay, s_.kind == OptimizerKind::AdamW};
  // Adam on float32 gradients: every parameter in one call (one launch on a GPU).
  bool same_dtype = s_.kind != OptimizerKind::Sgd;
  for (int t : params_) same_dtype = same_dtype && ex.gradient(t).dtype() == weights_.at(t).dtype();
  if (same_dtype) {
    std::vector<Backend::AdamParam> all;
    for (int t : params_) {
      auto& v = state_.at(t);
      all.push_back({&weights_.at(t), &ex.gradient(t), &v[0], &v[1]});
    }
    backend_.adam_steps(all, adam, steps_);
    return;
  }
  for (int t : params_) {
    Array& w = weights_.at(t);
    // Under mixed precision the gradient is bfloat16 and the weight its float32 master: widened
    // one parameter at a time, so at most one float32 copy is held.
    Array g = ex.gradient(t);
    if (g.dtype() != w.dtype()) {
      Array wide(w.dtype(), g.shape(), backend_.allocator(), MemoryKind::Transients);
      backend_.convert(g, wide);
      g = std::move(wide);
    }
    auto& v = state_.at(t);
    if (s_.kind == OptimizerKind::Sgd) {
      Array none;
      backend_.sgd_step(w, g, v.empty() ? none : v[0], {s_.lr, s_.momentum, s_.weight_decay}, steps_);
    } else {
      backend_.adam_step(w, g, v[0], v[1], adam, steps_);
    }
  }
}

}  // namespace tensoropt::runtime
