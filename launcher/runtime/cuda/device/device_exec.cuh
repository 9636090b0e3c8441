// DeviceExec: the executor of the CUDA kernel sources (hd.h) on a GPU, for the module's driver
// table (driver.cu). One per device handle: the device's compute stream, its stream-ordered memory
// pool (the default pool, which keeps freed memory for reuse instead of returning it to the
// driver), a cuBLASLt handle with a workspace, and cuBLASLt plans cached per GEMM shape.
//
// each(n, f) launches a grid-stride kernel of 256 threads per block, at most 32 blocks per SM;
// rows(count, f) gives each row a warp (Lanes of width 32), 8 rows per block. Launches return at
// once; their failures are reported at launch (cudaGetLastError) or by the next call that waits.
// Compiled only by nvcc, only into the module.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "launcher/runtime/cuda/device/conv_args.h"
#include "launcher/runtime/cuda/device/hd.h"
#include "launcher/runtime/cuda/driver_abi.h"

namespace tensoropt::cuda_kernels {

template <class F>
__global__ void each_kernel(int64_t n, F f) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) f(i);
}

template <class F>
__global__ void rows_kernel(int64_t count, F f) {
  Lanes l;
  l.lane = static_cast<int>(threadIdx.x % 32);
  l.width = 32;
  const int64_t warps = blockDim.x / 32;
  const int64_t step = static_cast<int64_t>(gridDim.x) * warps;
  // Every lane of a warp takes the same rows, so the shuffles in Lanes see the whole warp.
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * warps + threadIdx.x / 32; r < count; r += step) f(l, r);
}

class DeviceExec {
 public:
  std::string error;

  static DeviceExec* open(int ordinal, std::string* why);
  ~DeviceExec();

  int fail(std::string why) {
    error = std::move(why);
    return TO_CUDA_FAILED;
  }

  template <class F>
  int each(int64_t n, F f) {
    if (n <= 0) return TO_CUDA_OK;
    const int64_t blocks = std::min<int64_t>((n + 255) / 256, int64_t{32} * sms_);
    each_kernel<<<static_cast<unsigned>(blocks), 256, 0, stream_>>>(n, f);
    return check(cudaGetLastError(), "a kernel launch");
  }
  template <class F>
  int rows(int64_t count, F f) {
    if (count <= 0) return TO_CUDA_OK;
    const int64_t blocks = std::min<int64_t>((count + 7) / 8, int64_t{32} * sms_);
    rows_kernel<<<static_cast<unsigned>(blocks), 256, 0, stream_>>>(count, f);
    return check(cudaGetLastError(), "a row kernel launch");
  }

  int alloc(int64_t bytes, void** out);
  int release(void* p);
  int memory(int64_t* free_bytes, int64_t* total_bytes);
  int upload(void* dst, const void* host, int64_t bytes);
  int download(void* host, const void* src, int64_t bytes);
  int copy_rows(void* dst, int64_t dst_pitch, const void* src, int64_t src_pitch, int64_t width, int64_t count);
  int synchronize();
  int event_record(int64_t* id);
  int event_elapsed(int64_t from, int64_t to, float* ms);
  int events_reset();
  void* stream() { return stream_; }
  std::string describe();
  int gemm(const TensoroptGemm& g);
  // The convolution of conv_args.h on cuDNN's graph API (conv_cudnn.cu): conv_workspace plans it
  // and writes the workspace bytes to *a.workspace_needed; conv runs it.
  int conv_workspace(const ConvArgs& a);
  int conv(const ConvArgs& a);

  // TO_CUDA_OK, or a failure naming `what` and the runtime's reason.
  int check(cudaError_t e, const char* what);

 private:
  // A cuBLASLt plan: the operation, the three layouts and the algorithm its heuristic chose.
  struct GemmPlan {
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    cublasLtMatmulAlgo_t algo{};
  };
  using GemmKey = std::tuple<int64_t, int64_t, int64_t, int64_t, int, int, int64_t, int64_t, int64_t, int, int>;
  int plan_gemm(const TensoroptGemm& g, GemmPlan* plan);
  int check_lt(cublasStatus_t s, const char* what);
  // cuDNN's handle and the convolution plans (conv_cudnn.cu), made at the first convolution.
  struct CudnnConv;
  struct CudnnConvDeleter {
    void operator()(CudnnConv* c) const;
  };
  int conv_plan(const ConvArgs& a, int64_t* workspace, void** plan);

  int ordinal_ = 0;
  int sms_ = 1;
  cudaStream_t stream_ = nullptr;
  cublasLtHandle_t lt_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  std::map<GemmKey, GemmPlan> plans_;
  std::vector<cudaEvent_t> events_;  // made as needed, kept for reuse
  size_t events_used_ = 0;
  std::unique_ptr<CudnnConv, CudnnConvDeleter> cudnn_;
};

}  // namespace tensoropt::cuda_kernels

