#include "launcher/runtime/executor.h"

#include <algorithm>

#include "graph/error.h"
#include "graph/op_catalogue.h"

namespace tensoropt::runtime {
Executor::Executor(const Graph& g, Backend& backend, std::map<int, Array>& state, ExecutorOptions options)
    : g_(g), backend_(backend), state_(state), options_(options) {
  for (const Node& n : g_.nodes) {
    const OpKernel* k = backend_.kernel(n.op_type);
    if (!k || !k->forward) {
      throw InputError(g_.source_path + ": node " + n.label() + ": op '" + n.op_type + "' has no " +
                       std::string(backend_.name()) + " kernel yet");
    }
    kernels_.push_back(k);
  }
  if (g_.outputs.empty()) throw InputError(g_.source_path + ": the graph has no outputs");
  plan_ = step_schedule(g_, options_.input_gradients, options_.recompute);
  check_backward_kernels(g_, kernels_, plan_, backend_.name());
  for (int t : plan_.roots) {
    const Tensor& x = g_.tensors[static_cast<size_t>(t)];
    root_grads_[t] = Array(storage_dtype(x), x.shape, backend_.allocator(), MemoryKind::Gradients);
  }
  if (options_.bf16) {
    // Mixed precision: the float32 weights become the optimizer's master copy; forward and
    // backward read a bfloat16 working copy.
    for (auto& [t, a] : state_) {
      const Tensor& x = g_.tensors[static_cast<size_t>(t)];
      if (x.kind != TensorKind::Parameter || a.dtype() != DType::F32) continue;
      Array master(DType::F32, a.shape(), backend_.allocator(), MemoryKind::OptimizerState);
      backend_.convert(a, master);
      a = std::move(master);
      working_[t] = Array(DType::BF16, a.shape(), backend_.allocator(), MemoryKind::Parameters);
    }
  }
}

const Array& Executor::value(int t) const {
  auto it = values_.find(t);
  if (it != values_.end()) return it->second;
  if (auto w = working_.find(t); w != working_.end()) return w->second;
  auto st = state_.find(t);
  if (st == state_.end()) {
    throw InternalError("executor: tensor '" + g_.tensors[static_cast<size_t>(t)].name + "' has no value (" +
                        std::string(tensor_kind_name(g_.tensors[static_cast<size_t>(t)].kind)) + ")");
  }
  return st->second;
}

void Executor::run_forward(const std::vector<Array>& inputs, const StepContext& ctx, bool loss_pass) {
  values_.clear();
  // A forward (a step's, or forward() alone) reads the weights the optimizer left: the working
  // copies follow the masters.
  for (auto& [t, w] : working_) backend_.convert(state_.at(t), w);
  TO_CHECK(inputs.size() == g_.inputs.size());
  for (size_t k = 0; k < inputs.size(); ++k) {
    const Tensor& x = g_.tensors[static_cast<size_t>(g_.inputs[k])];
    if (inputs[k].shape() != x.shape || inputs[k].dtype() != runtime_dtype(x)) {
      throw InputError("input '" + x.name + "' is " + inputs[k].str() + ", the model takes " +
                       std::string(dtype_name(runtime_dtype(x))) + shape_str(x.shape));
    }
    values_[g_.inputs[k]] = stored(inputs[k], x, MemoryKind::Inputs);
  }
  states_.assign(g_.nodes.size(), {});
  std::vector<bool> is_output(g_.tensors.size(), false);
  for (int t : g_.outputs) is_output[static_cast<size_t>(t)] = true;
  for (size_t i = 0; i < g_.nodes.size(); ++i) {
    const Node& n = g_.nodes[i];
    std::vector<MemoryKind> kinds(n.outputs.size(), MemoryKind::Transients);
    for (size_t o = 0; o < n.outputs.size(); ++o) {
      const int t = n.outputs[o];
      if (t >= 0 && loss_pass && (plan_.nodes[i].keep_output[o] || plan_.last_backward_use[static_cast<size_t>(t)] >= 0)) {
        kinds[o] = MemoryKind::Activations;
      }
    }
    std::vector<Array> outs = forward_node(i, ctx, kinds, ctx.training);
    for (size_t o = 0; o < n.outputs.size(); ++o) {
      if (n.outputs[o] >= 0) values_[n.outputs[o]] = std::move(outs[o]);
    }
    if (!loss_pass || plan_.nodes[i].recompute) states_[i] = {};
    // Free what no later forward reads and backward does not keep.
    auto release = [&](int t) {
      if (t < 0 || is_output[static_cast<size_t>(t)]) return;
      if (loss_pass && plan_.last_backward_use[static_cast<size_t>(t)] >= 0) return;
      if (plan_.last_forward_use[static_cast<size_t>(t)] <= static_cast<int>(i)) values_.erase(t);
    };
    for (int t : n.inputs) release(t);
    for (int t : n.outputs) release(t);
  }
}

std::vector<Array> Executor::forward(const std::vector<Array>& inputs, const StepContext& ctx) {
  run_forward(inputs, ctx, /*loss_pass=*/false);
  std::vector<Array> out;
  for (int t : g_.outputs) {
    const Array& v = values_.at(t);
    out.push_back(v.dtype() == DType::BF16 ? float32_copy(backend_, v) : v);
  }
  values_.clear();
  return out;
}

void Executor::ensure(int t, const StepContext& ctx) {
  if (values_.count(t) || state_.count(t)) return;
  const int u = plan_.producer[static_cast<size_t>(t)];
  if (u < 0 || rerun_[static_cast<size_t>(u)]) {
    throw InternalError("executor: tensor '" + g_.tensors[static_cast<size_t>(t)].name +
                        "' is needed in backward but was neither kept nor can be regenerated");
  }
  rerun(static_cast<size_t>(u), ctx);
}

void Executor::rerun(size_t i, const StepContext& ctx) {
  const Node& n = g_.nodes[i];
  for (int t : n.inputs) {
    if (t >= 0) ensure(t, ctx);
  }
  states_[i] = {};
  std::vector<Array> outs = forward_node(i, ctx, std::vector<MemoryKind>(n.outputs.size(), MemoryKind::Transients), false);
  for (size_t o = 0; o < n.outputs.size(); ++o) {
    if (n.outputs[o] >= 0) values_.emplace(n.outputs[o], std::move(outs[o]));
  }
  rerun_[i] = true;
}

DType Executor::storage_dtype(const Tensor& x) const {
  const DType d = runtime_dtype(x);
  return options_.bf16 && d == DType::F32 ? DType::BF16 : d;
}

Array Executor::stored(const Array& a, const Tensor& x, MemoryKind kind) const {
  if (storage_dtype(x) == a.dtype()) return a;
  Array r(storage_dtype(x), a.shape(), backend_.allocator(), kind);
  backend_.convert(a, r);
  return r;
}

std::vector<Array> Executor::forward_node(size_t i, const StepContext& ctx, const std::vector<MemoryKind>& kinds, bool updates) {
  const Node& n = g_.nodes[i];
  std::vector<const Array*> in;
  for (int t : n.inputs) in.push_back(t < 0 ? nullptr : &value(t));
  std::vector<OutputSpec> outs(n.outputs.size());
  for (size_t o = 0; o < n.outputs.size(); ++o) {
    const int t = n.outputs[o];
    if (t < 0) continue;
    const Tensor& x = g_.tensors[static_cast<size_t>(t)];
    outs[o] = OutputSpec{true, x.shape, runtime_dtype(x), storage_dtype(x), kinds[o]};
  }
  return forward_call(backend_, *kernels_[i], n, static_cast<int>(i), in, outs, states_[i], ctx, nullptr, updates ? &state_ : nullptr);
}

void Executor::run_backward(const StepContext& ctx) {
  rerun_.assign(g_.nodes.size(), false);
  for (size_t i = g_.nodes.size(); i-- > 0;) {
    const Node& n = g_.nodes[i];
    const NodeSchedule& p = plan_.nodes[i];
    std::vector<const Array*> dout;
    bool any = false;
    for (int t : n.outputs) {
      auto it = t < 0 ? grads_.end() : grads_.find(t);
      dout.push_back(it == grads_.end() ? nullptr : &it->second);
      any = any || it != grads_.end();
    }
    if (p.backward && any) {
      // A recomputing node runs its forward again for its outputs and extras; what another
      // backward reads and nobody kept is regenerated by its producers.
      if (p.recompute && !rerun_[i]) rerun(i, ctx);
      for (size_t k = 0; k < n.inputs.size(); ++k) {
        if (n.inputs[k] >= 0 && p.need_input[k]) ensure(n.inputs[k], ctx);
      }
      for (size_t k = 0; k < n.outputs.size(); ++k) {
        if (n.outputs[k] >= 0 && p.need_output[k]) ensure(n.outputs[k], ctx);
      }
      // Kernels read float32: bfloat16 saved tensors and gradients are handed over as copies.
      Float32Args f32(backend_, n.inputs.size() + 2 * n.outputs.size(), kernels_[i]->takes_bf16);
      for (auto& d : dout) d = f32(d);
      std::vector<const Array*> in, out;
      std::vector<Shape> in_shapes;
      for (size_t k = 0; k < n.inputs.size(); ++k) {
        int t = n.inputs[k];
        in.push_back(t >= 0 && p.need_input[k] ? f32(&value(t)) : nullptr);
        in_shapes.push_back(t >= 0 ? g_.tensors[static_cast<size_t>(t)].shape : Shape{});
      }
      for (size_t k = 0; k < n.outputs.size(); ++k) {
        out.push_back(n.outputs[k] >= 0 && p.need_output[k] ? f32(&value(n.outputs[k])) : nullptr);
      }
      std::vector<Array> dins(n.inputs.size());
      std::vector<Array*> din;
      for (size_t k = 0; k < n.inputs.size(); ++k) {
        if (!p.input_grad[k]) {
          din.push_back(nullptr);
          continue;
        }
        const Tensor& x = g_.tensors[static_cast<size_t>(n.inputs[k])];
        dins[k] = Array(runtime_dtype(x), x.shape, backend_.allocator(), MemoryKind::Transients);
        din.push_back(&dins[k]);
      }
      try {
        if (ctx.timer) ctx.timer->begin(n.op_type + " backward");
        kernels_[i]->backward(GradCall{n, static_cast<int>(i), in, out, dout, din, in_shapes, states_[i], ctx, nullptr});
        if (ctx.timer) ctx.timer->end();
      } catch (const OutOfMemory& e) {
        throw e.with_context("node " + n.label() + " (backward)");
      }
      f32.clear();  // float32 copies: gone before the gradients are stored
      for (size_t k = 0; k < n.inputs.size(); ++k) {
        if (!p.input_grad[k]) continue;
        int t = n.inputs[k];
        if (auto root = root_grads_.find(t); root != root_grads_.end()) {
          backend_.accumulate(root->second, dins[k]);
          continue;
        }
        auto it = grads_.find(t);
        if (it == grads_.end()) grads_[t] = stored(dins[k], g_.tensors[static_cast<size_t>(t)], MemoryKind::Transients);
        else backend_.accumulate(it->second, dins[k]);
      }
    }
    // This node's outputs are done: their gradients were complete (every reader came later).
    for (int t : n.outputs) {
      if (t >= 0) grads_.erase(t);
    }
    states_[i] = {};
    // Kept tensors live until the earliest backward that reads them; regenerated ones until no
    // backward or forward to rerun is left that reads them.
    for (auto it = values_.begin(); it != values_.end();) {
      const auto t = static_cast<size_t>(it->first);
      const int lb = plan_.last_backward_use[t], u = plan_.producer[t];
      const bool regenerated = lb < 0 && u >= 0 && rerun_[static_cast<size_t>(u)];
      const int until = regenerated ? plan_.earliest_need[t] : lb;
      const bool live = until >= 0 && until < static_cast<int>(i);
      if (live) ++it;
      else it = values_.erase(it);
    }
  }
  values_.clear();
}

void Executor::zero_gradients() {
  grads_.clear();
  for (auto& [t, a] : root_grads_) backend_.fill(a, 0.0);
}

double Executor::train_step(const std::vector<Array>& inputs, const Array& target, const StepContext& ctx) {
  zero_gradients();
  run_forward(inputs, ctx, /*loss_pass=*/true);
  const int out = g_.outputs[0];
  double loss = 0;
  {
    const Array& kept = values_.at(out);
    const Array y = kept.dtype() == DType::BF16 ? float32_copy(backend_, kept) : kept;
    Array dy(y.dtype(), y.shape(), backend_.allocator(), MemoryKind::Transients);
    loss = options_.loss == LossKind::CrossEntropy ? backend_.cross_entropy(y, target, &dy) : backend_.mse(y, target, &dy);
    if (plan_.requires_grad[static_cast<size_t>(out)]) grads_[out] = stored(dy, g_.tensors[static_cast<size_t>(out)], MemoryKind::Transients);
  }
  // The loss has read the outputs: keep only what a backward reads (the logits of a large
  // vocabulary are as big as their gradient). The other outputs (a BatchNormalization's running
  // statistics, say) take no gradient.
  for (int t : g_.outputs) {
    if (plan_.last_backward_use[static_cast<size_t>(t)] < 0) values_.erase(t);
  }
  run_backward(ctx);
  return loss;
}

void Executor::backward_from(const std::vector<Array>& inputs, const std::vector<const Array*>& output_grads,
                             const StepContext& ctx) {
  zero_gradients();
  run_forward(inputs, ctx, /*loss_pass=*/true);
  TO_CHECK(output_grads.size() == g_.outputs.size());
  for (size_t k = 0; k < g_.outputs.size(); ++k) {
    int t = g_.outputs[k];
    if (!output_grads[k] || !plan_.requires_grad[static_cast<size_t>(t)] || grads_.count(t)) continue;
    Array d(storage_dtype(g_.tensors[static_cast<size_t>(t)]), output_grads[k]->shape(), backend_.allocator(), MemoryKind::Transients);
    backend_.convert(*output_grads[k], d);
    grads_[t] = std::move(d);
  }
  run_backward(ctx);
}

const Array& Executor::gradient(int tensor) const {
  auto it = root_grads_.find(tensor);
  TO_CHECK(it != root_grads_.end());
  return it->second;
}

}  // namespace tensoropt::runtime
