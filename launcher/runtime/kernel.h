// The kernel interface: one forward and one backward function per op type of the catalogue
// (graph/op_catalogue.h), per backend. The CPU backend (cpu/, Eigen and threads) implements it now;
// the CUDA backend (cuBLAS, cuDNN, own kernels) implements the same table. Nothing above this
// interface knows which backend runs.
//
// Forward: the executor allocates every output with the shape and dtype the importer inferred and
// calls forward(OpCall); the kernel writes the outputs, and may keep extras for its backward in
// OpState (a dropout mask, normalisation statistics, pooling indices: the bytes the catalogue's
// `saved` function charges as extras). For a kernel with `aliases_input` set the executor makes
// output 0 a view of input 0 under the output's shape (Reshape, Flatten, Squeeze, Unsqueeze,
// Identity): its forward has nothing left to do.
//
// Backward: backward(GradCall) receives the output gradients and writes the input gradients the
// executor asks for (din[i] non-null: allocated with input i's shape, to be OVERWRITTEN, not
// accumulated). It may read only what forward kept: the inputs and outputs the catalogue's `saved`
// function lists for this node and these needs-grad flags (the others are null), and its OpState.
// This is the contract that makes measured activation memory equal the planner's: the kernel
// tests (tests/launcher/runtime/) call backward with exactly those tensors and nothing else.
//
// An empty `backward` means no input of the op takes a gradient (comparisons, Shape, ArgMax...).
// A kernel that meets something it does not implement (an attribute value, a dtype) calls
// kernel_error, an InputError naming the node: the model is refused, never silently mis-run.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "graph/error.h"
#include "graph/ir.h"
#include "graph/step_schedule.h"
#include "launcher/runtime/array.h"

namespace tensoropt::runtime {

// Where the time of a step's kernels goes (run --kernel-times): the executors call begin(label)
// before a node's forward or backward and end() after it, labelled "<op type> forward" or
// "<op type> backward". A backend's timer measures the device's own time for what ran between
// (the host clock on CPU, whose kernels return when done; CUDA events on the GPU's stream, read
// when report() waits for them). Not thread-safe.
class KernelTimer {
 public:
  struct Row {
    std::string label;
    int64_t calls = 0;
    double seconds = 0;  // the sum over calls
  };
  virtual ~KernelTimer() = default;
  virtual void begin(const std::string& label) = 0;
  virtual void end() = 0;
  // Every label's calls and time since the last reset, the largest time first.
  virtual std::vector<Row> report() = 0;
  virtual void reset() = 0;
};

// A timer on the host's steady clock: the CPU backend's (and any backend whose kernels return
// when they are done).
std::unique_ptr<KernelTimer> host_kernel_timer();
// Rows by label, the largest time first (for timers' report()).
std::vector<KernelTimer::Row> sorted_rows(const std::map<std::string, KernelTimer::Row>& rows);

// What every kernel of a step shares.
struct StepContext {
  Allocator* allocator = nullptr;  // where kernels allocate OpState and workspaces
  bool training = true;            // Dropout drops and BatchNormalization uses batch statistics
  uint64_t seed = 0;               // --seed
  int64_t step = 0;                // 1-based training step, for dropout masks
  int threads = 1;                 // cores the kernels may use
  KernelTimer* timer = nullptr;    // run --kernel-times: times each node's kernels
};

// Extras a forward keeps for its backward, allocated as MemoryKind::Activations.
struct OpState {
  std::vector<Array> saved;
};

// Sharded execution (sharded_executor.h): where each input's local shard lies in the whole tensor.
// Most kernels never look: an op's configuration makes its local op the op on local shards. The
// exception reads it: Gather on a table split along the gathered axis (Megatron's vocabulary split)
// looks up the rows this shard holds and leaves zeros for the others (partial sums).
struct ShardInfo {
  std::vector<Shape> global;                 // per input: the whole tensor's shape
  std::vector<std::vector<int64_t>> offset;  // per input, per axis: the shard's first index
};

// How many elements a mean over the axes `reduced` of input `input` divides by: the whole tensor's
// (a split reduced axis leaves partial sums that add up to the whole mean), or the local one's
// without `shard`.
int64_t mean_count(const ShardInfo* shard, int input, const Shape& local, const std::vector<bool>& reduced);

struct OpCall {
  const Node& node;
  int node_index;                   // position in the graph, for per-node random streams
  std::vector<const Array*> in;     // nullptr for an omitted optional input
  std::vector<Array*> out;          // nullptr for an omitted optional output
  OpState& state;
  const StepContext& ctx;
  const ShardInfo* shard;           // nullptr: whole tensors (one device)
};

struct GradCall {
  const Node& node;
  int node_index;
  std::vector<const Array*> in;     // forward inputs the catalogue saves; others nullptr
  std::vector<const Array*> out;    // forward outputs the catalogue saves; others nullptr
  std::vector<const Array*> dout;   // output gradients; nullptr where none flows back (treat as 0)
  std::vector<Array*> din;          // input gradients wanted, to overwrite; nullptr where not wanted
  const std::vector<Shape>& in_shapes;  // every forward input's shape, saved or not
  OpState& state;
  const StepContext& ctx;
  const ShardInfo* shard;           // nullptr: whole tensors (one device)
};

struct OpKernel {
  std::function<void(const OpCall&)> forward;
  std::function<void(const GradCall&)> backward;  // empty: no input takes a gradient
  bool aliases_input = false;                     // output 0 is a view of input 0
  // (output, input) pairs: in training, after forward, the output's values are copied into the
  // input, a buffer (BatchNormalization's running mean and variance).
  std::vector<std::pair<int, int>> state_updates = {};
  // Under mixed precision: the kernel reads bfloat16 inputs, saved tensors and output gradients as
  // they are stored and writes its outputs in their storage dtype (it computes in float32 all the
  // same: a GEMM on bfloat16 operands with float32 accumulation); input gradients stay float32.
  // Without it the executor hands it float32 copies and rounds what it writes.
  bool takes_bf16 = false;
};

class Backend;
// After a training forward of `node` with `kernel`: copies each state_updates output (as the
// kernel wrote it, float32) into the buffer the node read (BatchNormalization's running
// statistics) when `state` holds it. A sharded buffer's output (`shard`: a channel split) lands
// at its shard's offset along dimension 0 of the whole buffer.
void apply_state_updates(Backend& backend, const OpKernel& kernel, const Node& node, const std::vector<Array*>& outputs,
                         std::map<int, Array>& state, const ShardInfo* shard);

// One output of a forward_call: its shape, the dtype the kernel writes (runtime_dtype), the dtype
// it is stored in (bfloat16 under mixed precision) and its memory kind; absent: not wanted.
struct OutputSpec {
  bool present = false;
  Shape shape;
  DType compute = DType::F32, store = DType::F32;
  MemoryKind kind = MemoryKind::Transients;
};

// `a` (float32 or bfloat16) as a new float32 transient array.
Array float32_copy(Backend& backend, const Array& a);

// Arguments for a kernel, which computes in float32: a bfloat16 array is handed over as a float32
// transient copy that lives as long as this object (or until clear()); any other passes as it is,
// and so does every array for a kernel that takes bfloat16 (`pass_bf16`). At most `capacity`
// arrays are converted, so the pointers handed out stay valid.
class Float32Args {
 public:
  Float32Args(Backend& backend, size_t capacity, bool pass_bf16 = false) : backend_(backend), pass_bf16_(pass_bf16) {
    copies_.reserve(capacity);
  }
  const Array* operator()(const Array* a);
  void clear() { copies_.clear(); }

 private:
  Backend& backend_;
  bool pass_bf16_;
  std::vector<Array> copies_;
};

// One node's forward as both executors run it (kernels compute in float32 whatever the storage):
// a bfloat16 input is handed over as a float32 transient copy, an output whose storage dtype
// differs is computed into a float32 transient and stored rounded; a viewing kernel
// (aliases_input) gets input 0 viewed as output 0's shape (an InternalError when the element
// counts differ). `updates`: the model state that the kernel's state updates go to (a first
// forward; nullptr for a rerun). Returns the outputs (undefined where not wanted).
std::vector<Array> forward_call(Backend& backend, const OpKernel& kernel, const Node& node, int index,
                                const std::vector<const Array*>& inputs, const std::vector<OutputSpec>& outputs, OpState& state,
                                const StepContext& ctx, const ShardInfo* shard, std::map<int, Array>* updates);

// One backend's kernels by op type.
using KernelTable = std::map<std::string, OpKernel, std::less<>>;

// "<node label>: <what>" as an InputError.
[[noreturn]] void kernel_error(const Node& node, const std::string& what);

// InputError naming the node and `backend` when the schedule gives some input of a node a gradient
// and its kernel has no backward (`kernels[i]` is node i's).
void check_backward_kernels(const Graph& g, const std::vector<const OpKernel*>& kernels, const StepSchedule& schedule,
                            std::string_view backend);

}  // namespace tensoropt::runtime
