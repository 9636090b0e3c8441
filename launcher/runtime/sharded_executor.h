// ShardedExecutor: one worker's training step of a strategy on a device mesh (DESIGN.md "Runtime";
// issue 13). Every op runs its configuration on this worker's local shards with the backend's
// kernels; every layout transition is run_transition (transition.h) of the plan that
// planner/parallel/redistribute.h returns, the one the planner costs, and backward moves each
// gradient back by backward_plan of the same plan.
//
// Where values live ("home" layouts, sharding_of): a parameter in its variable's layout (its
// storage), a data input in its variable's layout, a tensor that several ops read in its tensor
// variable's layout, any other op output in its producer's output layout, buffers and constants
// replicated. An op reads each input in the layout its configuration needs: the home copy when the
// layouts agree, else a transitioned copy (kept for backward when the op's backward reads it, as the
// planner charges a reader's copy). An output whose home differs (a tensor variable) is moved there
// after the op.
//
// Backward: the gradient of a tensor accumulates in gradient_layout(home) (R and P swap: a
// replicated value's copies each hold an addend of its gradient); before an op's backward it is
// moved into gradient_layout of the op's output layout, and each input gradient the kernel writes
// is moved back to gradient_layout of the input's home. Parameter gradients are then synchronised
// into the storage layout (P -> R: the data-parallel all-reduce; P -> S: a reduce-scatter).
//
// The loss: the graph's first output is moved to its loss layout (its home with every P reduced
// and, for cross-entropy, the class dimension gathered), where each worker computes its rows'
// share; rows that several workers hold (replicated axes) are counted by the worker at coordinate
// 0 of those axes only, and the sums and counts are all-reduced over the world, so the loss is the
// one-device loss. Its gradient is held by those workers (the LocalPartial convention, zeros
// elsewhere) and goes back by duality.
//
// Not yet: recompute (a point's recompute choices run as plain configurations: the same numbers,
// more memory), ZeRO-2 (gradients synchronised as plain data parallelism: the same numbers, the
// optimizer state not sharded), bf16, gradient buckets (one collective per parameter). Not
// thread-safe.
#pragma once

#include <map>
#include <optional>
#include <vector>

#include "graph/ir.h"
#include "launcher/runtime/backend.h"
#include "launcher/runtime/executor.h"
#include "launcher/runtime/transition.h"
#include "planner/space.h"

namespace tensoropt::runtime {

struct Sharding {
  MeshContext where;
  std::vector<std::vector<planner::Layout>> in, out;  // per node: the layouts its configuration needs and produces
  std::vector<planner::Layout> home;                  // per tensor: where its value lives
};

// The layouts of `assignment` (one configuration per variable of `space`) for the worker `where`.
Sharding sharding_of(const planner::StrategySpace& space, const std::vector<int>& assignment, const MeshContext& where);

// This worker's shard of a replicated (global) value of tensor t in its home layout, allocated as
// `kind`. No communication: a slice.
Array home_shard(const Sharding& s, const Graph& g, int t, const Array& global, Backend& backend, MemoryKind kind);

class ShardedExecutor final : public GradientSource {
 public:
  // `state`: this worker's shard of every parameter (home layout) and the full buffers and
  // constants; the executor reads them, and BatchNormalization updates its buffers.
  ShardedExecutor(const Graph& g, Backend& backend, std::map<int, Array>& state, const Sharding& sharding, LossKind loss);

  // Forward, loss and backward of one step on the GLOBAL batch (every worker passes the same
  // inputs and target; each takes its shard). Returns the global loss. Afterwards gradient(t) is
  // the synchronised gradient of parameter t's local shard.
  double train_step(const std::vector<Array>& inputs, const Array& target, const StepContext& ctx);
  const Array& gradient(int tensor) const override;
  const std::vector<int>& gradient_tensors() const { return roots_; }

 private:
  Array move(const Array& x, int t, const planner::Layout& from, const planner::Layout& to, MemoryKind kind);
  Array move_gradient_back(const Array& g, int t, const planner::Layout& home, const planner::Layout& used);
  Shape local(int t, const planner::Layout& l) const;
  double loss_and_gradient(const Array& target);

  const Graph& g_;
  Backend& backend_;
  std::map<int, Array>& state_;
  const Sharding& sh_;
  LossKind loss_;
  std::vector<const OpKernel*> kernels_;
  std::vector<std::vector<bool>> input_grad_, need_in_, need_out_;
  std::vector<bool> requires_grad_;
  std::vector<int> last_forward_use_;
  std::vector<int> roots_;
  std::map<int, Array> values_;                    // home copies during forward
  std::vector<std::vector<Array>> kept_in_, kept_out_;  // per node: what its backward reads
  std::vector<OpState> states_;
  std::vector<ShardInfo> shards_;                  // per node: where its inputs' shards lie
  std::map<int, Array> grads_;                     // in gradient_layout(home)
  std::map<int, Array> root_grads_;                // parameters: local, in the storage layout after sync
};

}  // namespace tensoropt::runtime
