// The module's driver table (driver_abi.h): DeviceExec's memory, copies and cuBLASLt GEMM, and the
// kernel sources of device/ instantiated for the GPU. Compiled only into libtensoropt_cuda.so.
#include "launcher/runtime/cuda/driver.h"

#include <algorithm>
#include <cstdint>
#include <string>

#include "launcher/runtime/cuda/device/device_exec.cuh"
#include "launcher/runtime/cuda/device/driver_table.h"

namespace tensoropt::cuda_kernels {

int DeviceExec::check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return TO_CUDA_OK;
  cudaGetLastError();  // clear a non-sticky error so the next call starts clean
  return fail(std::string(what) + ": " + cudaGetErrorString(e));
}

int DeviceExec::check_lt(cublasStatus_t s, const char* what) {
  if (s == CUBLAS_STATUS_SUCCESS) return TO_CUDA_OK;
  return fail(std::string(what) + ": cuBLASLt status " + std::to_string(static_cast<int>(s)));
}

DeviceExec* DeviceExec::open(int ordinal, std::string* why) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    *why = cudaGetErrorString(e);
    return nullptr;
  }
  if (ordinal < 0 || ordinal >= count) {
    *why = "GPU " + std::to_string(ordinal) + " is not visible (" + std::to_string(count) + " visible)";
    return nullptr;
  }
  auto* d = new DeviceExec;
  d->ordinal_ = ordinal;
  auto give_up = [&](const std::string& what, const std::string& reason) {
    *why = what + ": " + reason;
    delete d;
    return nullptr;
  };
  if ((e = cudaSetDevice(ordinal)) != cudaSuccess) return give_up("cudaSetDevice", cudaGetErrorString(e));
  cudaDeviceGetAttribute(&d->sms_, cudaDevAttrMultiProcessorCount, ordinal);
  if ((e = cudaStreamCreateWithFlags(&d->stream_, cudaStreamNonBlocking)) != cudaSuccess)
    return give_up("cudaStreamCreate", cudaGetErrorString(e));
  // Freed blocks stay in the pool for the next step instead of going back to the driver.
  cudaMemPool_t pool;
  if (cudaDeviceGetDefaultMemPool(&pool, ordinal) == cudaSuccess) {
    uint64_t keep = UINT64_MAX;
    cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
  }
  if (cublasLtCreate(&d->lt_) != CUBLAS_STATUS_SUCCESS) return give_up("cublasLtCreate", "failed");
  d->workspace_bytes_ = size_t{32} << 20;  // what cuBLAS recommends for Hopper
  if ((e = cudaMalloc(&d->workspace_, d->workspace_bytes_)) != cudaSuccess)
    return give_up("the cuBLASLt workspace", cudaGetErrorString(e));
  return d;
}

DeviceExec::~DeviceExec() {
  if (stream_) cudaStreamSynchronize(stream_);
  for (cudaEvent_t e : events_) cudaEventDestroy(e);
  cudnn_.reset();  // its handle uses the stream
  for (auto& [key, p] : plans_) {
    cublasLtMatrixLayoutDestroy(p.a);
    cublasLtMatrixLayoutDestroy(p.b);
    cublasLtMatrixLayoutDestroy(p.c);
    cublasLtMatmulDescDestroy(p.op);
  }
  if (workspace_) cudaFree(workspace_);
  if (lt_) cublasLtDestroy(lt_);
  if (stream_) cudaStreamDestroy(stream_);
}

int DeviceExec::alloc(int64_t bytes, void** out) {
  *out = nullptr;
  const cudaError_t e = cudaMallocAsync(out, static_cast<size_t>(bytes), stream_);
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    int64_t free_bytes = 0, total = 0;
    memory(&free_bytes, &total);
    error = "out of GPU memory: " + std::to_string(bytes) + " bytes asked, " + std::to_string(free_bytes) + " of " +
            std::to_string(total) + " free on the device";
    return TO_CUDA_OUT_OF_MEMORY;
  }
  return check(e, "cudaMallocAsync");
}

int DeviceExec::release(void* p) { return check(cudaFreeAsync(p, stream_), "cudaFreeAsync"); }

int DeviceExec::memory(int64_t* free_bytes, int64_t* total_bytes) {
  size_t f = 0, t = 0;
  const int s = check(cudaMemGetInfo(&f, &t), "cudaMemGetInfo");
  *free_bytes = static_cast<int64_t>(f);
  *total_bytes = static_cast<int64_t>(t);
  return s;
}

int DeviceExec::upload(void* dst, const void* host, int64_t bytes) {
  if (bytes <= 0) return TO_CUDA_OK;
  if (int s = check(cudaMemcpyAsync(dst, host, static_cast<size_t>(bytes), cudaMemcpyHostToDevice, stream_), "an upload")) return s;
  return check(cudaStreamSynchronize(stream_), "an upload");
}

int DeviceExec::download(void* host, const void* src, int64_t bytes) {
  if (bytes <= 0) return synchronize();
  if (int s = check(cudaMemcpyAsync(host, src, static_cast<size_t>(bytes), cudaMemcpyDeviceToHost, stream_), "a download")) return s;
  return check(cudaStreamSynchronize(stream_), "a download (or a kernel before it)");
}

int DeviceExec::copy_rows(void* dst, int64_t dst_pitch, const void* src, int64_t src_pitch, int64_t width, int64_t count) {
  if (width <= 0 || count <= 0) return TO_CUDA_OK;
  return check(cudaMemcpy2DAsync(dst, static_cast<size_t>(dst_pitch), src, static_cast<size_t>(src_pitch), static_cast<size_t>(width),
                                 static_cast<size_t>(count), cudaMemcpyDeviceToDevice, stream_),
               "cudaMemcpy2DAsync");
}

int DeviceExec::synchronize() { return check(cudaStreamSynchronize(stream_), "a kernel"); }

int DeviceExec::event_record(int64_t* id) {
  if (events_used_ == events_.size()) {
    cudaEvent_t e = nullptr;
    if (int s = check(cudaEventCreate(&e), "cudaEventCreate")) return s;
    events_.push_back(e);
  }
  *id = static_cast<int64_t>(events_used_);
  return check(cudaEventRecord(events_[events_used_++], stream_), "cudaEventRecord");
}

int DeviceExec::event_elapsed(int64_t from, int64_t to, float* ms) {
  if (from < 0 || to < 0 || static_cast<size_t>(to) >= events_used_ || from > to) return fail("event_elapsed: no such events");
  if (int s = check(cudaEventSynchronize(events_[static_cast<size_t>(to)]), "cudaEventSynchronize")) return s;
  return check(cudaEventElapsedTime(ms, events_[static_cast<size_t>(from)], events_[static_cast<size_t>(to)]), "cudaEventElapsedTime");
}

int DeviceExec::events_reset() {
  events_used_ = 0;
  return TO_CUDA_OK;
}

std::string DeviceExec::describe() {
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, ordinal_) != cudaSuccess) return "name: unknown\n";
  return std::string("name: ") + p.name + "\ncompute capability: " + std::to_string(p.major) + "." + std::to_string(p.minor) +
         "\nmemory MiB: " + std::to_string(p.totalGlobalMem >> 20) + "\nSMs: " + std::to_string(p.multiProcessorCount) + "\n";
}

// Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: cuBLASLt's first operand is our
// B, its second our A, and the result's layout is n x m with leading dimension n.
int DeviceExec::plan_gemm(const TensoroptGemm& g, GemmPlan* plan) {
  const GemmKey key{g.batch, g.m, g.n, g.k, g.trans_a, g.trans_b, g.stride_a, g.stride_b, g.stride_c, g.dtype_ab, g.dtype_c};
  if (auto it = plans_.find(key); it != plans_.end()) {
    *plan = it->second;
    return TO_CUDA_OK;
  }
  GemmPlan p;
  if (int s = check_lt(cublasLtMatmulDescCreate(&p.op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate")) return s;
  const cublasOperation_t first = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, second = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSA, &first, sizeof first);
  cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSB, &second, sizeof second);
  // Stored shapes, column-major: our B is [k][n] (n x k col-major) or, transposed, [n][k] (k x n).
  if ((g.dtype_ab != TO_DTYPE_F32 && g.dtype_ab != TO_DTYPE_BF16) || (g.dtype_c != TO_DTYPE_F32 && g.dtype_c != TO_DTYPE_BF16))
    return fail("gemm: float32 or bfloat16 operands only");
  const cudaDataType_t ab = g.dtype_ab == TO_DTYPE_BF16 ? CUDA_R_16BF : CUDA_R_32F, cd = g.dtype_c == TO_DTYPE_BF16 ? CUDA_R_16BF : CUDA_R_32F;
  auto layout = [&](cublasLtMatrixLayout_t* l, cudaDataType_t type, int64_t rows, int64_t cols, int64_t stride) -> int {
    if (int s = check_lt(cublasLtMatrixLayoutCreate(l, type, static_cast<uint64_t>(rows), static_cast<uint64_t>(cols), rows),
                         "cublasLtMatrixLayoutCreate"))
      return s;
    const int batch = static_cast<int>(g.batch);
    cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof batch);
    cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride);
    return TO_CUDA_OK;
  };
  if (int s = g.trans_b ? layout(&p.a, ab, g.k, g.n, g.stride_b) : layout(&p.a, ab, g.n, g.k, g.stride_b)) return s;
  if (int s = g.trans_a ? layout(&p.b, ab, g.m, g.k, g.stride_a) : layout(&p.b, ab, g.k, g.m, g.stride_a)) return s;
  if (int s = layout(&p.c, cd, g.n, g.m, g.stride_c)) return s;
  cublasLtMatmulPreference_t pref = nullptr;
  if (int s = check_lt(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate")) return s;
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes_, sizeof workspace_bytes_);
  cublasLtMatmulHeuristicResult_t found{};
  int returned = 0;
  const cublasStatus_t hs = cublasLtMatmulAlgoGetHeuristic(lt_, p.op, p.a, p.b, p.c, p.c, pref, 1, &found, &returned);
  cublasLtMatmulPreferenceDestroy(pref);
  if (hs != CUBLAS_STATUS_SUCCESS || returned == 0)
    return fail("cuBLASLt has no algorithm for a " + std::to_string(g.m) + "x" + std::to_string(g.k) + "x" + std::to_string(g.n) +
                (g.dtype_ab == TO_DTYPE_BF16 ? " bfloat16" : " float32") + " GEMM (batch " + std::to_string(g.batch) + ")");
  p.algo = found.algo;
  plans_[key] = p;
  *plan = p;
  return TO_CUDA_OK;
}

int DeviceExec::gemm(const TensoroptGemm& g) {
  if (g.batch <= 0 || g.m <= 0 || g.n <= 0) return TO_CUDA_OK;
  if (g.k == 0) {
    // No products: C = beta C.
    const int64_t n = g.batch * g.m * g.n;
    void* c = g.c;
    const float beta = g.beta;
    const int dtype = g.dtype_c;
    if (g.stride_c != g.m * g.n) return fail("gemm: k = 0 with a strided C");
    return each(n, [=] TO_HD_LAMBDA(int64_t i) {
      if (dtype == TO_DTYPE_BF16) {
        uint16_t* h = static_cast<uint16_t*>(c);
        h[i] = to_bf16(beta == 0.0f ? 0.0f : beta * from_bf16(h[i]));
      } else {
        float* f = static_cast<float*>(c);
        f[i] = beta == 0.0f ? 0.0f : beta * f[i];
      }
    });
  }
  GemmPlan p;
  if (int s = plan_gemm(g, &p)) return s;
  return check_lt(cublasLtMatmul(lt_, p.op, &g.alpha, g.b, p.a, g.a, p.b, &g.beta, g.c, p.c, g.c, p.c, &p.algo, workspace_,
                                 workspace_bytes_, stream_),
                  "cublasLtMatmul");
}

}  // namespace tensoropt::cuda_kernels

namespace tensoropt::cuda {

const TensoroptCudaDriver* driver_table() {
  static const TensoroptCudaDriver table = cuda_kernels::make_driver_table<cuda_kernels::DeviceExec>();
  return &table;
}

}  // namespace tensoropt::cuda
