#include "planner/compute_model.h"

#include <algorithm>

namespace tensoropt::planner {

bool is_tensor_core_op(const std::string& op_type) {
  return op_type == "Conv" || op_type == "ConvTranspose" || op_type == "Gemm" || op_type == "MatMul" ||
         op_type == "Einsum";
}

AnalyticCompute::AnalyticCompute(const Cluster& cluster, Precision precision, AnalyticAssumptions a)
    : gpu_(cluster.gpu), precision_(precision), a_(a) {}

double AnalyticCompute::direction(double flops, double bytes, bool tensor_core) const {
  bool tc = tensor_core && precision_ == Precision::Bf16;
  double peak = tc ? gpu_.peak_flops_bf16 * a_.tensor_core_efficiency : gpu_.peak_flops_fp32 * a_.cuda_core_efficiency;
  double compute = flops / peak;
  double memory = bytes / (gpu_.memory_bandwidth * a_.memory_efficiency);
  return a_.launch_seconds + std::max(compute, memory);
}

OpTime AnalyticCompute::op_time(const ShardWork& w) const {
  OpTime t;
  t.forward = direction(w.fwd_flops, w.fwd_bytes, w.tensor_core);
  if (w.has_backward) t.backward = direction(w.bwd_flops, w.bwd_bytes, w.tensor_core);
  return t;
}

double AnalyticCompute::optimizer_time(double elements, const Training& tr) const {
  const double bytes = elements * (2.0 * tr.weight_bytes() + tr.gradient_bytes() + 2.0 * tr.optimizer_state_bytes());
  if (bytes <= 0) return 0;
  return bytes / (gpu_.memory_bandwidth * a_.memory_efficiency);
}

}  // namespace tensoropt::planner
