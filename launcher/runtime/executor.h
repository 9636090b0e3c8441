// The executor: one training step of an imported graph on one backend (DESIGN.md "Runtime").
//
// Forward runs the nodes in order with the backend's kernels. What each node keeps for backward
// comes from the op catalogue (OpDef::saved, for the inputs that take a gradient), so the
// activations held between forward and backward are exactly the ones the planner charges; every
// other tensor is freed after its last forward reader. The loss (loss.h) is appended to the
// graph's first output. Backward walks the nodes in reverse, hands each kernel only what its node
// kept, sums the gradients of tensors read by several nodes, and frees each saved tensor after the
// last backward that reads it. Gradients of parameters land in persistent buffers (one per
// parameter, MemoryKind::Gradients) that the optimizer (optimizer.h) then reads.
//
// BatchNormalization in training mode updates its running statistics: the kernel's
// `state_updates` copy its statistics outputs into the buffers it read.
//
// Not thread-safe: one step at a time. Errors: a node whose op has no kernel on the backend is an
// InputError naming the node and the backend, raised at construction.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "graph/ir.h"
#include "launcher/runtime/array.h"
#include "launcher/runtime/backend.h"

namespace tensoropt::runtime {

enum class LossKind : uint8_t { CrossEntropy, Mse };

struct ExecutorOptions {
  LossKind loss = LossKind::CrossEntropy;
  // Also compute gradients of the float data inputs (the kernel tests use this).
  bool input_gradients = false;
};

class Executor {
 public:
  // `state` holds an Array for every parameter, buffer and constant the nodes read (weights.h
  // loads or initialises them), keyed by tensor index; the executor reads and updates them.
  Executor(const Graph& g, Backend& backend, std::map<int, Array>& state, ExecutorOptions options = {});

  // Forward only (no loss, nothing kept): the graph outputs, in g.outputs order.
  std::vector<Array> forward(const std::vector<Array>& inputs, const StepContext& ctx);

  // Forward, loss against `target` (labels for cross-entropy, values for mse), backward. Returns
  // the loss. Afterwards gradient(t) holds dLoss/dt for every parameter t (and every float data
  // input with input_gradients).
  double train_step(const std::vector<Array>& inputs, const Array& target, const StepContext& ctx);

  // Forward, then backward from a given gradient of each graph output (nullptr: zero); for tests.
  void backward_from(const std::vector<Array>& inputs, const std::vector<const Array*>& output_grads,
                     const StepContext& ctx);

  // REQUIRES: `tensor` is one of gradient_tensors().
  const Array& gradient(int tensor) const;
  // Tensors that receive a gradient: parameters, and data inputs with input_gradients.
  const std::vector<int>& gradient_tensors() const { return grad_roots_; }
  const Graph& graph() const { return g_; }

 private:
  struct NodePlan {
    std::vector<bool> input_grad;    // this input receives a gradient
    std::vector<bool> keep_input;    // forward keeps this input for backward
    std::vector<bool> keep_output;   // and this output
    bool backward = false;           // some input receives a gradient
  };
  void plan();
  // Forward over every node; `loss_pass`: keep what backward needs and the graph outputs.
  void run_forward(const std::vector<Array>& inputs, const StepContext& ctx, bool loss_pass);
  void run_backward(const StepContext& ctx);
  void zero_gradients();
  const Array& value(int t) const;

  const Graph& g_;
  Backend& backend_;
  std::map<int, Array>& state_;
  ExecutorOptions options_;
  std::vector<const OpKernel*> kernels_;
  std::vector<NodePlan> plans_;
  std::vector<bool> requires_grad_;
  std::vector<int> last_forward_use_;   // per tensor: last node reading it in forward, -1 none
  std::vector<int> last_backward_use_;  // per tensor: earliest node whose backward reads it, or -1
  std::vector<int> grad_roots_;
  std::map<int, Array> values_;         // live activations and inputs during a step
  std::map<int, Array> grads_;          // gradients on their way back (transient)
  std::map<int, Array> root_grads_;     // gradients of the roots (persistent, MemoryKind::Gradients)
  std::vector<OpState> states_;
};

}  // namespace tensoropt::runtime
