// ShardedExecutor: one worker's training step of a strategy on a device mesh (docs/design.md "Runtime";
// issue 13). Every op runs its configuration on this worker's local shards with the backend's
// kernels; every layout transition is run_transition (transition.h) of the plan that
// planner/parallel/redistribute.h returns, the one the planner costs, and backward moves each
// gradient back by backward_plan of the same plan.
//
// What this worker holds and runs is a planner::ShardingPlan (planner/parallel/sharding_plan.h): the
// plan point as data, read from a plan file or made by the planner, never the search itself. Where
// values live ("home" layouts): a parameter in its storage layout, a data input in its variable's
// layout, a tensor that several ops read in its tensor variable's layout, any other op output in
// its producer's output layout, buffers and constants replicated. An op reads each input in the layout its configuration needs: the home copy when the
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
// ZeRO-2 (a parameter variable's `zero-2` configuration): the parameter's local shard, flattened,
// is split over the mesh axes that replicate it (nested ceil chunks, as layout.h splits a
// dimension); its gradient is reduce-scattered onto this worker's chunk instead of all-reduced, the
// optimizer updates that chunk of the weights (a view into them) and keeps state for it alone, and
// after_optimizer_step all-gathers the updated chunks: the same bytes moved as data parallelism,
// as the planner costs it.
//
// Recompute: which node keeps what is graph/step_schedule.h's, as in the one-device executor (a point's
// ` recompute` configurations, and every node that reads no data, such as a transposed weight). A
// recomputing node keeps its inputs in the layouts it needs; in backward its forward runs again
// and its outputs are moved again to the readers that need them (the redistribution the planner
// charges twice). Gradients are synchronised as soon as they are complete, in the order every
// worker's backward reaches them: under ZeRO-2 one reduce-scatter per parameter; otherwise in
// buckets of at most planner::kGradientBucketBytes (parameters all-reduced over the same mesh axes,
// in completion order, their gradients views into the bucket), one in-place all-reduce per bucket
// and axis once the bucket's last gradient is complete, as DDP does and the planner costs. A bucket's
// all-reduce is started asynchronously (Communicator::all_reduce_async) and runs beside the rest of
// the backward, as DDP overlaps it; train_step returns once every bucket is summed.
//
// Not thread-safe.
#pragma once

#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "graph/ir.h"
#include "graph/step_schedule.h"
#include "launcher/runtime/backend.h"
#include "launcher/runtime/executor.h"
#include "launcher/runtime/optimizer.h"
#include "launcher/runtime/transition.h"
#include "planner/parallel/sharding_plan.h"

namespace tensoropt::runtime {

// A plan point on one worker: the point's sharding and where this worker sits in the mesh.
struct Sharding {
  MeshContext where;
  planner::ShardingPlan plan;  // REQUIRES: plan.mesh_axes == where.mesh->ndim()
};

// This worker's shard of a replicated (global) value of tensor t in its home layout, allocated as
// `kind`. No communication: a slice.
Array home_shard(const Sharding& s, const Graph& g, int t, const Array& global, Backend& backend, MemoryKind kind);

// One worker's part of the model under one point: per parameter its local shard (home layout) and
// its optimizer slots.
struct LocalShards {
  std::map<int, Array> params;
  std::map<int, std::vector<Array>> slots;
};

class ShardedExecutor final : public GradientSource {
 public:
  // `state`: this worker's shard of every parameter (home layout) and the full buffers and
  // constants; the executor reads them, and BatchNormalization updates its buffers.
  // `bf16`: mixed precision, as the one-device Executor runs it (executor.h): float activations,
  // data inputs and gradients stored, moved and summed as bfloat16; each parameter's float32
  // master (its ZeRO-2 chunk only, under ZeRO-2) is what the optimizer updates.
  ShardedExecutor(const Graph& g, Backend& backend, std::map<int, Array>& state, const Sharding& sharding, LossKind loss,
                  bool bf16 = false);

  // Forward, loss and backward of one step on the GLOBAL batch (every worker passes the same
  // inputs and target; each takes its shard). Returns the global loss. Afterwards gradient(t) is
  // the synchronised gradient of parameter t's local shard.
  // The global arrays are given up: each is dropped once its shard is taken.
  double train_step(std::vector<Array> inputs, Array target, const StepContext& ctx);
  // What the optimizer updates, per parameter: its local shard, or under ZeRO-2 this worker's
  // chunk of it (a view), and the matching gradient.
  std::map<int, Array>& optimizer_weights() { return optimizer_weights_; }
  const Array& gradient(int tensor) const override;
  const std::vector<int>& gradient_tensors() const { return plan_.roots; }
  // After the optimizer's step: ZeRO-2 parameters gather their updated chunks.
  void after_optimizer_step();
  // The whole gradient of parameter t after train_step, on every worker (a collective: every
  // worker calls it, in the same order). For tests.
  Array whole_gradient(int tensor);

  // Checkpoints across strategies (collectives: every worker calls them, in the same order).
  // gather_whole: the whole model as one device holds it, on every worker: each parameter and each
  // slot of its optimizer state gathered from the shards (ZeRO-2 chunks first gathered into the
  // local shard); each buffer as its readers' layout spreads it (a channel-split
  // BatchNormalization's running statistics from every shard; a replicated one as worker 0 holds
  // it: under data parallelism each worker updates its own, and DDP keeps rank 0's).
  // `optimizer` updates optimizer_weights(); `state` receives its slots by parameter.
  std::map<int, Array> gather_whole(const Optimizer& optimizer, std::map<int, std::vector<Array>>& state);
  // local_whole: the same without communication, where this worker holds the whole model (every
  // parameter and buffer replicated over the mesh, no ZeRO-2: a replica, as data parallelism
  // keeps one per worker; its buffers its own); nullopt where it holds a part only. The arrays are
  // the executor's own (not copies). For an elastic job that lost a worker: the state survives in
  // any replica.
  std::optional<std::map<int, Array>> local_whole(const Optimizer& optimizer, std::map<int, std::vector<Array>>& state) const;
  // scatter_state: this worker's part of a whole optimizer state (a checkpoint's, by parameter and
  // slot) into `optimizer`'s arrays; with `local`, the state given is this worker's local shards
  // already (local_shards' slots under this point). No communication.
  void scatter_state(const std::map<int, std::vector<Array>>& whole, Optimizer& optimizer, bool local = false);
  // local_shards: each parameter's local shard in its home layout (its float32 master under mixed
  // precision) and its optimizer slots likewise, ZeRO-2 chunks gathered into the local shard (a
  // collective over the mesh; with `gather` false, nullopt where a parameter has ZeRO-2). What an
  // elastic job's handover moves shard to shard (launcher/elastic/reshard.h).
  std::optional<LocalShards> local_shards(const Optimizer& optimizer, bool gather);
  // gather_buffers: every buffer whole on every worker, as gather_whole gathers them (a collective).
  std::map<int, Array> gather_buffers();

  // A step that fails part way (a worker lost in one of its collectives) has moved the buffers a
  // forward updates (BatchNormalization's running statistics) while the parameters and optimizer
  // state stay at the step before. With keep_step_start(true) (elastic jobs), each train_step
  // first copies those buffers; rewind_buffers() puts the copies back, so the state a survivor
  // carries on from is the last complete step's. steps_begun(): train_step calls so far.
  void keep_step_start(bool on) { keep_step_start_ = on; }
  void rewind_buffers();
  int64_t steps_begun() const { return steps_begun_; }

 private:
  // x (tensor t's shard in `from`) in `to`; `consume`: x may be overwritten (a gradient being synchronised).
  Array move(const Array& x, int t, const planner::Layout& from, const planner::Layout& to, MemoryKind kind, bool consume = false);
  Array move_gradient_back(const Array& g, int t, const planner::Layout& home, const planner::Layout& used);
  Shape local(int t, const planner::Layout& l) const;
  // The loss on the output's loss layout against `target`, this worker's rows of it; the gradient.
  double loss_and_gradient(const Array& target);
  std::pair<planner::Layout, planner::Layout> loss_layouts() const;  // the output's and the target's
  DType storage_dtype(int t) const;  // bfloat16 for float tensors under mixed precision
  DType gradient_dtype() const { return bf16_ ? DType::BF16 : DType::F32; }
  Array stored(const Array& a, int t, MemoryKind kind) const;  // a in tensor t's storage dtype
  // The step's parts, in order: fresh per-step state; this worker's shards of the global batch
  // (the inputs given up) and the target's in its loss layout; one node's forward; one node's
  // backward (its output gradients moved to the layouts it produced), the kernel's part of it, and
  // one input gradient added where tensor t's gradient accumulates.
  // Construction: what the optimizer updates per parameter (optimizer_weights_, flat_ for ZeRO-2)
  // and the gradient buckets (buckets_, bucket_of_, root_grads_); sharded_state.cc.
  void setup_optimizer_weights();
  void setup_buckets();
  void begin_step();
  Array take_batch(std::vector<Array>& inputs, Array target);
  void forward_node(size_t i, const StepContext& ctx, const std::vector<bool>& is_output);
  void backward_node(size_t i, const StepContext& ctx);
  void run_backward(size_t i, std::vector<const Array*> dout, const StepContext& ctx);
  void add_gradient(int t, const Array& d);
  // Node i's kernel on `ins` (its local shards in the layouts it needs); outputs allocated as `kinds`.
  std::vector<Array> run_node(size_t i, const std::vector<Array>& ins, const std::vector<MemoryKind>& kinds, const StepContext& ctx,
                              bool updates);
  // Tensor t in its home layout: live, model state, or regenerated by rerunning its producer.
  const Array& home_value(int t, const StepContext& ctx);
  // Node i's input q in the layout node i needs: kept, or the home value moved there.
  Array input_of(size_t i, size_t q, const StepContext& ctx);
  // Runs node i's forward again in backward (no state updates); its outputs go to their homes.
  void rerun(size_t i, const StepContext& ctx);
  // Parameter t's complete gradient into its storage layout, or onto its ZeRO-2 chunk.
  void synchronise(int t);
  // Parameter t's local shard from an array the optimizer holds for it (a ZeRO-2 chunk is gathered).
  Array local_from_optimizer(int t, const Array& a);

  const Graph& g_;
  Backend& backend_;
  std::map<int, Array>& state_;
  // keep_step_start: the buffers a forward updates, and their values when the last step began.
  std::vector<int> updated_buffers_;
  bool keep_step_start_ = false;
  std::map<int, Array> step_start_;
  int64_t steps_begun_ = 0;
  const Sharding& sh_;
  LossKind loss_;
  bool bf16_;
  std::vector<const OpKernel*> kernels_;
  StepSchedule plan_;                                  // what each node keeps and recomputes (graph/step_schedule.h)
  std::vector<bool> home_kept_;                    // per tensor: a reader keeps its home value as it is
  std::vector<bool> rerun_;                        // per node: its forward ran again this backward
  std::map<int, Array> values_;                    // home copies during forward; regenerated ones in backward
  std::vector<std::vector<Array>> kept_in_, kept_out_;  // per node: what its backward reads
  std::vector<OpState> states_;
  std::vector<ShardInfo> shards_;                  // per node: where its inputs' shards lie
  std::map<int, Array> grads_;                     // in gradient_layout(home)
  std::map<int, Array> root_grads_;                // parameters: local, in the storage layout after sync
  std::map<int, Array> full_grads_;                // ZeRO-2 parameters: the whole local gradient in flight
  struct Bucket {
    std::vector<int> axes;    // the mesh axes its gradients are all-reduced over, in order
    std::vector<int> params;  // in the order backward completes them
    Array buffer;             // every gradient of the bucket, one after another (gradient_dtype())
    int done = 0;             // gradients complete this step
  };
  std::vector<Bucket> buckets_;
  std::vector<std::unique_ptr<comm::Pending>> in_flight_;  // bucket all-reduces of this step, in order
  std::map<int, int> bucket_of_;  // parameter -> its bucket
  std::map<int, Array> optimizer_weights_;         // parameters: the local shard or its ZeRO-2 chunk
  // ZeRO-2: the parameter's local shard as one flat tensor, and where this worker's chunk lies.
  struct Flat {
    planner::Layout partial = planner::Layout({}), split = planner::Layout({}), whole = planner::Layout({});  // gradient, chunk, gathered
    int64_t size = 0, offset = 0, length = 0;
  };
  std::map<int, Flat> flat_;
  Array move_flat(const Array& x, int64_t size, const planner::Layout& from, const planner::Layout& to, MemoryKind kind,
                  bool consume = false);
};

}  // namespace tensoropt::runtime
