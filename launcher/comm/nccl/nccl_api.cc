// The NCCL table (nccl_abi.h) over NCCL and the CUDA runtime. Compiled only into the CUDA module
// (libtensoropt_cuda.so), by the host compiler: no kernel here.
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string>

#include "graph/dtype.h"
#include "launcher/comm/nccl/nccl_abi.h"

namespace {

thread_local std::string last_error;

int failed(std::string text) {
  last_error = std::move(text);
  return TO_NCCL_FAILED;
}

int cuda(cudaError_t e, const char* call) {
  if (e == cudaSuccess) return TO_NCCL_OK;
  (void)cudaGetLastError();  // a sticky error stays; clear the rest so the next call starts clean
  return failed(std::string(call) + ": " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
}

int nccl(ncclResult_t r, const char* call, ncclComm_t comm) {
  if (r == ncclSuccess) return TO_NCCL_OK;
  if (r == ncclInProgress) return TO_NCCL_IN_PROGRESS;
  std::string text = std::string(call) + ": " + ncclGetErrorString(r);
  const char* detail = ncclGetLastError(comm);
  if (detail && *detail) text.append(" (").append(detail).append(")");
  return failed(std::move(text));
}

// Makes `device` current for the scope, restoring the previous one.
class OnDevice {
 public:
  explicit OnDevice(int device) {
    if (cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
    status_ = cuda(cudaSetDevice(device), "cudaSetDevice");
  }
  ~OnDevice() {
    if (previous_ >= 0) (void)cudaSetDevice(previous_);
  }
  int status() const { return status_; }

 private:
  int previous_ = -1;
  int status_ = TO_NCCL_OK;
};

bool nccl_type(int dtype, ncclDataType_t* out) {
  using tensoropt::DType;
  switch (static_cast<DType>(dtype)) {
    case DType::F32: *out = ncclFloat32; return true;
    case DType::F64: *out = ncclFloat64; return true;
    case DType::F16: *out = ncclFloat16; return true;
    case DType::BF16: *out = ncclBfloat16; return true;
    case DType::I8: *out = ncclInt8; return true;
    case DType::U8: case DType::Bool: *out = ncclUint8; return true;
    case DType::I32: *out = ncclInt32; return true;
    case DType::U32: *out = ncclUint32; return true;
    case DType::I64: *out = ncclInt64; return true;
    case DType::U64: *out = ncclUint64; return true;
    default: return false;
  }
}

int no_type(const char* call, int dtype) {
  return failed(std::string(call) + ": tensoropt dtype " + std::to_string(dtype) + " (graph/dtype.h) has no NCCL type");
}

size_t error(char* text, size_t size) {
  if (size > 0) {
    const size_t n = std::min(last_error.size(), size - 1);
    std::memcpy(text, last_error.data(), n);
    text[n] = '\0';
  }
  return last_error.size();
}

int version(int* code) { return nccl(ncclGetVersion(code), "ncclGetVersion", nullptr); }

int device_count(int* count) {
  *count = 0;
  const cudaError_t e = cudaGetDeviceCount(count);
  if (e == cudaErrorNoDevice) {  // no GPU is an answer, not a failure
    (void)cudaGetLastError();
    *count = 0;
    return TO_NCCL_OK;
  }
  const int r = cuda(e, "cudaGetDeviceCount");
  if (r != TO_NCCL_OK) *count = 0;
  return r;
}

int device_malloc(int device, size_t bytes, void** ptr) {
  OnDevice on(device);
  if (on.status() != TO_NCCL_OK) return on.status();
  return cuda(cudaMalloc(ptr, bytes), "cudaMalloc");
}

int device_free(void* ptr) { return cuda(cudaFree(ptr), "cudaFree"); }

int copy(void* dst, const void* src, size_t bytes) { return cuda(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault), "cudaMemcpy"); }

int copy_async(void* dst, const void* src, size_t bytes, void* stream) {
  return cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, static_cast<cudaStream_t>(stream)), "cudaMemcpyAsync");
}

int stream_create(int device, void** stream) {
  OnDevice on(device);
  if (on.status() != TO_NCCL_OK) return on.status();
  cudaStream_t s = nullptr;
  const int r = cuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  *stream = s;
  return r;
}

int stream_destroy(void* stream) { return cuda(cudaStreamDestroy(static_cast<cudaStream_t>(stream)), "cudaStreamDestroy"); }

int event_create(int device, void** event) {
  OnDevice on(device);
  if (on.status() != TO_NCCL_OK) return on.status();
  cudaEvent_t e = nullptr;
  const int r = cuda(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  *event = e;
  return r;
}

int event_destroy(void* event) { return cuda(cudaEventDestroy(static_cast<cudaEvent_t>(event)), "cudaEventDestroy"); }

int event_record(void* event, void* stream) {
  return cuda(cudaEventRecord(static_cast<cudaEvent_t>(event), static_cast<cudaStream_t>(stream)), "cudaEventRecord");
}

int stream_wait_event(void* stream, void* event) {
  return cuda(cudaStreamWaitEvent(static_cast<cudaStream_t>(stream), static_cast<cudaEvent_t>(event), 0), "cudaStreamWaitEvent");
}

int event_query(void* event) {
  const cudaError_t e = cudaEventQuery(static_cast<cudaEvent_t>(event));
  if (e == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return TO_NCCL_IN_PROGRESS;
  }
  return cuda(e, "cudaEventQuery");
}

// A stream held by a host function until released (stream_hold).
struct Hold {
  std::mutex m;
  std::condition_variable cv;
  bool released = false;
  bool finished = false;  // the host function has returned: the Hold may go
};

void CUDART_CB hold_stream(void* data) {
  auto* h = static_cast<Hold*>(data);
  std::unique_lock<std::mutex> lock(h->m);
  h->cv.wait(lock, [h] { return h->released; });
  h->finished = true;
  h->cv.notify_all();
}

int stream_hold(void* stream, void** hold) {
  auto* h = new Hold;
  const int r = cuda(cudaLaunchHostFunc(static_cast<cudaStream_t>(stream), hold_stream, h), "cudaLaunchHostFunc");
  if (r != TO_NCCL_OK) {
    delete h;
    *hold = nullptr;
    return r;
  }
  *hold = h;
  return r;
}

int stream_release(void* hold) {
  auto* h = static_cast<Hold*>(hold);
  {
    std::unique_lock<std::mutex> lock(h->m);
    h->released = true;
    h->cv.notify_all();
    // The host function runs once the work before it on its stream is done; wait for it, so the
    // Hold is never freed under it.
    h->cv.wait(lock, [h] { return h->finished; });
  }
  delete h;
  return TO_NCCL_OK;
}

int get_unique_id(unsigned char id[TO_NCCL_UNIQUE_ID_BYTES]) {
  static_assert(sizeof(ncclUniqueId) == TO_NCCL_UNIQUE_ID_BYTES);
  ncclUniqueId u;
  const int r = nccl(ncclGetUniqueId(&u), "ncclGetUniqueId", nullptr);
  if (r == TO_NCCL_OK) std::memcpy(id, u.internal, TO_NCCL_UNIQUE_ID_BYTES);
  return r;
}

int comm_init(void** comm, int nranks, const unsigned char id[TO_NCCL_UNIQUE_ID_BYTES], int rank, int device) {
  *comm = nullptr;
  OnDevice on(device);
  if (on.status() != TO_NCCL_OK) return on.status();
  ncclUniqueId u;
  std::memcpy(u.internal, id, TO_NCCL_UNIQUE_ID_BYTES);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t c = nullptr;
  const int r = nccl(ncclCommInitRankConfig(&c, nranks, u, rank, &config), "ncclCommInitRankConfig", c);
  *comm = c;  // set even while in progress: the caller polls it, and aborts it on a timeout
  return r;
}

int comm_status(void* comm) {
  auto c = static_cast<ncclComm_t>(comm);
  ncclResult_t state = ncclSuccess;
  const int r = nccl(ncclCommGetAsyncError(c, &state), "ncclCommGetAsyncError", c);
  if (r != TO_NCCL_OK) return r;
  return nccl(state, "the communicator's asynchronous state", c);
}

int comm_finalize(void* comm) {
  auto c = static_cast<ncclComm_t>(comm);
  return nccl(ncclCommFinalize(c), "ncclCommFinalize", c);
}
int comm_destroy(void* comm) { return nccl(ncclCommDestroy(static_cast<ncclComm_t>(comm)), "ncclCommDestroy", nullptr); }
int comm_abort(void* comm) { return nccl(ncclCommAbort(static_cast<ncclComm_t>(comm)), "ncclCommAbort", nullptr); }
int group_start() { return nccl(ncclGroupStart(), "ncclGroupStart", nullptr); }
int group_end() { return nccl(ncclGroupEnd(), "ncclGroupEnd", nullptr); }

int all_reduce(void* buf, size_t count, int dtype, void* comm, void* stream) {
  ncclDataType_t t;
  if (!nccl_type(dtype, &t)) return no_type("ncclAllReduce", dtype);
  auto c = static_cast<ncclComm_t>(comm);
  return nccl(ncclAllReduce(buf, buf, count, t, ncclSum, c, static_cast<cudaStream_t>(stream)), "ncclAllReduce", c);
}

int all_gather(const void* in, void* out, size_t count, int dtype, void* comm, void* stream) {
  ncclDataType_t t;
  if (!nccl_type(dtype, &t)) return no_type("ncclAllGather", dtype);
  auto c = static_cast<ncclComm_t>(comm);
  return nccl(ncclAllGather(in, out, count, t, c, static_cast<cudaStream_t>(stream)), "ncclAllGather", c);
}

int reduce_scatter(const void* in, void* out, size_t count, int dtype, void* comm, void* stream) {
  ncclDataType_t t;
  if (!nccl_type(dtype, &t)) return no_type("ncclReduceScatter", dtype);
  auto c = static_cast<ncclComm_t>(comm);
  return nccl(ncclReduceScatter(in, out, count, t, ncclSum, c, static_cast<cudaStream_t>(stream)), "ncclReduceScatter", c);
}

int reduce(const void* in, void* out, size_t count, int dtype, int root, void* comm, void* stream) {
  ncclDataType_t t;
  if (!nccl_type(dtype, &t)) return no_type("ncclReduce", dtype);
  auto c = static_cast<ncclComm_t>(comm);
  return nccl(ncclReduce(in, out, count, t, ncclSum, root, c, static_cast<cudaStream_t>(stream)), "ncclReduce", c);
}

int broadcast(void* buf, size_t count, int dtype, int root, void* comm, void* stream) {
  ncclDataType_t t;
  if (!nccl_type(dtype, &t)) return no_type("ncclBroadcast", dtype);
  auto c = static_cast<ncclComm_t>(comm);
  return nccl(ncclBroadcast(buf, buf, count, t, root, c, static_cast<cudaStream_t>(stream)), "ncclBroadcast", c);
}

int send(const void* buf, size_t count, int dtype, int peer, void* comm, void* stream) {
  ncclDataType_t t;
  if (!nccl_type(dtype, &t)) return no_type("ncclSend", dtype);
  auto c = static_cast<ncclComm_t>(comm);
  return nccl(ncclSend(buf, count, t, peer, c, static_cast<cudaStream_t>(stream)), "ncclSend", c);
}

int recv(void* buf, size_t count, int dtype, int peer, void* comm, void* stream) {
  ncclDataType_t t;
  if (!nccl_type(dtype, &t)) return no_type("ncclRecv", dtype);
  auto c = static_cast<ncclComm_t>(comm);
  return nccl(ncclRecv(buf, count, t, peer, c, static_cast<cudaStream_t>(stream)), "ncclRecv", c);
}

const TensoroptNcclApi kApi = {
    version, error, device_count, device_malloc, device_free, copy, copy_async, stream_create, stream_destroy,
    event_create, event_destroy, event_record, stream_wait_event, event_query, stream_hold, stream_release,
    get_unique_id, comm_init, comm_status, comm_finalize, comm_destroy, comm_abort, group_start, group_end,
    all_reduce, all_gather, reduce_scatter, reduce, broadcast, send, recv,
};

}  // namespace

const TensoroptNcclApi* tensoropt_nccl_api(void) { return &kApi; }
