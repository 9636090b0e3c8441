// The CUDA backend: the Backend (../backend.h) of one GPU, over the driver table of the CUDA module
// (driver_abi.h). This class is host code and includes no CUDA header: it decides shapes,
// attributes and which kernel a node runs, and calls the driver for everything that touches the
// GPU. So it compiles in every build, and the tests run it over the host emulation of the same
// kernel sources (device/host_exec.h) on machines without a GPU.
//
// Memory: a DeviceAllocator over the driver's stream-ordered pool, with the ledger every allocator
// keeps (../allocator.h), so `run` sets measured against predicted on GPU as on CPU. Out of memory
// throws OutOfMemory naming the bytes, the kind and what the device had free.
//
// Kernels run in order on the device's compute stream and return at once; read(), the losses and
// synchronize() wait. A failure of the driver is an InternalError naming the call and the
// driver's reason (a fault inside a kernel surfaces at the next wait). Thread-compatible: one
// step at a time, from one thread.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "launcher/runtime/backend.h"
#include "launcher/runtime/cuda/driver_abi.h"

namespace tensoropt::runtime::cuda {

class DeviceAllocator final : public Allocator {
 public:
  DeviceAllocator(const TensoroptCudaDriver& driver, TensoroptCudaDevice* device) : driver_(driver), device_(device) {}

 protected:
  void* raw_allocate(int64_t bytes) override;
  void raw_free(void* p) override;

 private:
  const TensoroptCudaDriver& driver_;
  TensoroptCudaDevice* device_;
};

class CudaBackend final : public Backend {
 public:
  // Opens GPU `ordinal` (among the visible ones) through `driver`; InputError when it cannot be had.
  CudaBackend(const TensoroptCudaDriver& driver, int ordinal);
  ~CudaBackend() override;
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  std::string_view name() const override { return "cuda"; }
  DeviceFacts facts() const override;  // the GPU's name, compute capability, memory and SMs
  std::unique_ptr<KernelTimer> kernel_timer() override;  // CUDA events on the compute stream
  Allocator& allocator() override { return *allocator_; }
  const OpKernel* kernel(std::string_view op_type) const override;

  void write(Array& dst, const void* src, int64_t bytes) override;
  void read(const Array& src, void* dst, int64_t bytes) override;
  void fill(Array& a, double value) override;
  void accumulate(Array& dst, const Array& src) override;
  void scale(Array& a, double factor) override;
  void convert(const Array& src, Array& dst) override;
  void copy_slab(const Array& src, int dim, int64_t src_at, Array& dst, int64_t dst_at, int64_t len) override;
  double cross_entropy(const Array& logits, const Array& labels, Array* dlogits) override;
  double mse(const Array& output, const Array& target, Array* doutput) override;
  void sgd_step(Array& weight, const Array& grad, Array& momentum, const SgdSettings& s, int64_t step) override;
  void adam_step(Array& weight, const Array& grad, Array& m, Array& v, const AdamSettings& s, int64_t step) override;
  void adam_steps(const std::vector<AdamParam>& params, const AdamSettings& s, int64_t step) override;  // one launch

  // For the kernel families (elementwise.cc, linear.cc, ...): the driver, this GPU's handle, and
  // check(status, what), which throws InternalError naming `what` and the driver's reason.
  const TensoroptCudaDriver& driver() const { return driver_; }
  TensoroptCudaDevice* device() const { return device_; }
  void check(int status, std::string_view what) const;
  // Runs the named kernel of a kernel family (device/registry.h) with its argument struct.
  template <class Args>
  void launch(const char* kernel, const Args& args, std::string_view what) {
    check(driver_.launch(device_, kernel, &args, sizeof(Args)), what);
  }
  // Waits for every kernel issued so far.
  void synchronize() override;
  // The compute stream (a cudaStream_t), for a communicator to order its collectives after.
  void* stream() const { return driver_.stream(device_); }

 private:
  const TensoroptCudaDriver& driver_;
  TensoroptCudaDevice* device_ = nullptr;
  std::unique_ptr<DeviceAllocator> allocator_;
  KernelTable table_;
};

// The kernel families, each registering its ops into the backend's table.
void register_elementwise(CudaBackend& backend, KernelTable& table);  // elementwise.cc
void register_linear(CudaBackend& backend, KernelTable& table);       // linear.cc
void register_einsum(CudaBackend& backend, KernelTable& table);       // einsum.cc
void register_norm(CudaBackend& backend, KernelTable& table);         // norm.cc
void register_movement(CudaBackend& backend, KernelTable& table);     // movement*.cc: Reshape ... Trilu, Slice, Pad, Gather ... OneHot
void register_resample(CudaBackend& backend, KernelTable& table);     // resample.cc: Resize, Upsample, DepthToSpace, SpaceToDepth
void register_shape(CudaBackend& backend, KernelTable& table);        // shape.cc: ConstantOfShape, Range
void register_conv(CudaBackend& backend, KernelTable& table);         // conv.cc: Conv, ConvTranspose
void register_pool(CudaBackend& backend, KernelTable& table);         // pool.cc

// The driver's last error text.
std::string driver_error(const TensoroptCudaDriver& driver, TensoroptCudaDevice* device);

}  // namespace tensoropt::runtime::cuda
