// Where the time of computation comes from: the cost source interface (docs/design.md "Cost").
//
// The strategy space (planner/space/space.h) describes the work one device does for one op under
// one configuration as a ShardWork; a ComputeModel turns it into seconds. AnalyticCompute is the
// roofline model below; a measured profile (profiler/profiled_compute.h, docs/profile.md)
// implements the same interface, keyed on the op, its attributes, its local shapes and dtypes.
//
// AnalyticCompute, per op and direction (forward; backward when any input needs a gradient):
//   time = launch + max(flops / (peak * compute_efficiency), bytes / (bandwidth * memory_efficiency))
// peak is the GPU's dense BF16 tensor-core rate for matmul-class ops (Conv, ConvTranspose, Gemm,
// MatMul, Einsum) under bf16 and its FP32 CUDA-core rate otherwise (TF32 is not assumed: PyTorch
// leaves it off for matmuls by default). The efficiencies and the launch overhead are assumptions,
// stated in docs/cost-model.md, until a profile replaces them. The optimizer step is one
// memory-bound pass over the bytes it touches.
// Thread-safety: implementations are immutable after construction and safe to share.
#pragma once

#include <string>
#include <vector>

#include "graph/ir.h"
#include "planner/parallel/cluster.h"
#include "planner/training.h"

namespace tensoropt::planner {

struct ShardWork {
  const Graph* graph = nullptr;         // the node's graph (tensor dtypes and constants)
  const Node* node = nullptr;           // the op (type, attributes) for profile lookups
  std::vector<Shape> local_inputs;      // this device's input shapes (empty for absent inputs)
  std::vector<Shape> local_outputs;     // ... and output shapes (empty for absent outputs)
  std::vector<bool> input_grad;         // per input: it takes a gradient
  bool tensor_core = false;             // matmul-class op
  double fwd_flops = 0, bwd_flops = 0;  // this device's share
  double fwd_bytes = 0, bwd_bytes = 0;  // read + written by this device
  bool has_backward = false;
};

struct OpTime {
  double forward = 0;
  double backward = 0;
};

class ComputeModel {
 public:
  virtual ~ComputeModel() = default;
  virtual std::string name() const = 0;  // "analytic", or the profile it reads
  virtual OpTime op_time(const ShardWork& work) const = 0;
  // The optimizer's step over one parameter variable's `elements` updated elements (its local
  // part; ZeRO: its chunk), of `training`'s precision and optimizer.
  virtual double optimizer_time(double elements, const Training& training) const = 0;
};

struct AnalyticAssumptions {
  double tensor_core_efficiency = 0.6;  // fraction of dense tensor-core peak a large GEMM reaches
  double cuda_core_efficiency = 0.6;    // fraction of FP32 peak
  double memory_efficiency = 0.8;       // fraction of DRAM bandwidth a streaming kernel reaches
  double launch_seconds = 4e-6;         // per kernel: launch and tail
};

bool is_tensor_core_op(const std::string& op_type);

class AnalyticCompute final : public ComputeModel {
 public:
  AnalyticCompute(const Cluster& cluster, Precision precision, AnalyticAssumptions a = {});
  std::string name() const override { return "analytic"; }
  OpTime op_time(const ShardWork& work) const override;
  // One memory-bound pass reading and writing weights and optimizer state and reading the
  // gradient. Multi-tensor kernels (PyTorch's foreach/fused optimizers) update many parameters
  // per launch, so no launch overhead is charged per call.
  double optimizer_time(double elements, const Training& training) const override;
  const AnalyticAssumptions& assumptions() const { return a_; }

 private:
  double direction(double flops, double bytes, bool tensor_core) const;
  GpuSpec gpu_;
  Precision precision_;
  AnalyticAssumptions a_;
};

}  // namespace tensoropt::planner
