// The CPU backend: host memory, the kernels of cpu/*.cc (Eigen for the dense algebra, OpenMP
// threads for the rest), and the loss and optimizer primitives of backend.h. set_threads() bounds
// every kernel and Eigen's products to the cores this worker was given. Thread-compatible: one
// step at a time.
#pragma once

#include "launcher/runtime/backend.h"

namespace tensoropt::runtime::cpu {

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(int threads = 1);
  std::string_view name() const override { return "cpu"; }
  DeviceFacts facts() const override;  // the GEMM build and the subnormal mode
  Allocator& allocator() override { return allocator_; }
  const OpKernel* kernel(std::string_view op_type) const override;
  int threads() const { return threads_; }
  void set_threads(int threads);

  void write(Array& dst, const void* src, int64_t bytes) override;
  void read(const Array& src, void* dst, int64_t bytes) override;
  void fill(Array& a, double value) override;
  void accumulate(Array& dst, const Array& src) override;
  void convert(const Array& src, Array& dst) override;
  void scale(Array& a, double factor) override;
  void copy_slab(const Array& src, int dim, int64_t src_at, Array& dst, int64_t dst_at, int64_t len) override;
  double cross_entropy(const Array& logits, const Array& labels, Array* dlogits) override;
  double mse(const Array& output, const Array& target, Array* doutput) override;
  void sgd_step(Array& weight, const Array& grad, Array& momentum, const SgdSettings& s, int64_t step) override;
  void adam_step(Array& weight, const Array& grad, Array& m, Array& v, const AdamSettings& s, int64_t step) override;

 private:
  HostAllocator allocator_;
  KernelTable table_;
  int threads_ = 1;
};

}  // namespace tensoropt::runtime::cpu
