// The NCCL table: every call the NCCL communicator (nccl_communicator.h) makes into NCCL and the
// CUDA runtime, as plain C functions over opaque handles. The CUDA module (libtensoropt_cuda.so,
// launcher/runtime/cuda/module_abi.h's `nccl`) exports it, built from nccl_api.cc, so that the
// communicator's logic lives in tensoropt_comm, compiled in every build, and includes no CUDA or
// NCCL header; the tensoropt binary links neither library.
//
// Conventions.
//   - Handles: `comm` is an ncclComm_t, `stream` a cudaStream_t (nullptr: the legacy default
//     stream), `event` a cudaEvent_t, all as void*.
//   - Buffers of the collectives, send/recv and copy_async are DEVICE pointers of the comm's
//     device; `memcpy` takes any pointers (host or device, the CUDA runtime tells them apart).
//   - dtype is tensoropt's DType value (graph/dtype.h) as int, mapped to ncclDataType_t: float32,
//     float64, float16, bfloat16 (ncclBfloat16), int8, uint8, bool (as uint8), int32, uint32,
//     int64, uint64. int16, uint16 and the rest have no NCCL type: the call fails (the
//     communicator moves copies as uint8 bytes, so only sums name a dtype). Reductions are sums.
//   - Counts are elements, size_t.
//   - Every function but `error` returns TO_NCCL_OK, TO_NCCL_IN_PROGRESS or TO_NCCL_FAILED.
//     IN_PROGRESS comes only from a non-blocking communicator's calls (comm_init, comm_finalize,
//     the collectives and group_end, whose state comm_status then reports until it is OK) and
//     from event_query (the work before the event has not finished). After FAILED, `error` gives
//     the reason on the same thread: the call, NCCL's or the CUDA runtime's error string, and
//     ncclGetLastError's detail where NCCL has one.
//   - Communicators are non-blocking (ncclConfig_t.blocking = 0): no call waits for a peer; the
//     caller polls comm_status and event_query against its own deadline and calls comm_abort on
//     a timeout or an error, which frees the communicator (never call comm_destroy after it).
//   - Functions that take a device make it the calling thread's current device while they run
//     and restore the previous one.
// Thread-safety: as NCCL's and the CUDA runtime's; `error` is per thread.
// Versioned with the CUDA module (module_abi.h): this header is part of TENSOROPT_CUDA_ABI_HASH.
#pragma once

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { TO_NCCL_OK = 0, TO_NCCL_IN_PROGRESS = 1, TO_NCCL_FAILED = 2 };

#define TO_NCCL_UNIQUE_ID_BYTES 128

struct TensoroptNcclApi {
  // The NCCL library loaded: NCCL_VERSION_CODE's encoding (22809 for 2.28.9).
  int (*version)(int* code);
  // The last failure's text on this thread, copied as module_abi.h's strings (at most `size`
  // bytes with the NUL); returns the length of the whole text.
  size_t (*error)(char* text, size_t size);

  // CUDA runtime: devices, memory (the communicator's scratch; the tests' buffers), streams, events.
  // OK with the GPUs visible (0 included); FAILED, with *count 0, when the CUDA runtime cannot
  // tell (no driver, an older one): the reason is why no GPU is visible.
  int (*device_count)(int* count);
  int (*malloc)(int device, size_t bytes, void** ptr);
  int (*free)(void* ptr);
  // Synchronous: returns when the bytes are copied.
  int (*memcpy)(void* dst, const void* src, size_t bytes);
  // Device to device on `stream`, ordered with its other work.
  int (*copy_async)(void* dst, const void* src, size_t bytes, void* stream);
  // A stream that does not synchronise with the legacy default stream (cudaStreamNonBlocking).
  int (*stream_create)(int device, void** stream);
  int (*stream_destroy)(void* stream);
  // An event without timing (cudaEventDisableTiming).
  int (*event_create)(int device, void** event);
  int (*event_destroy)(void* event);
  int (*event_record)(void* event, void* stream);
  // Work queued on `stream` after this call waits for `event`'s work.
  int (*stream_wait_event)(void* stream, void* event);
  // OK: the work before the event has finished; IN_PROGRESS: not yet.
  int (*event_query)(void* event);
  // Test support: queues on `stream` a host function that holds the stream (nothing after it
  // runs) until stream_release(*hold) is called, then frees *hold. Every hold must be released.
  int (*stream_hold)(void* stream, void** hold);
  int (*stream_release)(void* hold);

  // NCCL.
  int (*get_unique_id)(unsigned char id[TO_NCCL_UNIQUE_ID_BYTES]);
  // A non-blocking communicator of `nranks` in which this process is `rank`, on `device`.
  int (*comm_init)(void** comm, int nranks, const unsigned char id[TO_NCCL_UNIQUE_ID_BYTES], int rank, int device);
  // ncclCommGetAsyncError: OK (idle or running), IN_PROGRESS (a call still being issued), FAILED
  // (an asynchronous error: a peer died, a network error, an aborted communicator).
  int (*comm_status)(void* comm);
  int (*comm_finalize)(void* comm);
  int (*comm_destroy)(void* comm);
  int (*comm_abort)(void* comm);
  int (*group_start)(void);
  int (*group_end)(void);
  // In place: buf[count] <- the sum over ranks.
  int (*all_reduce)(void* buf, size_t count, int dtype, void* comm, void* stream);
  // out[nranks * count] <- every rank's in[count], in rank order.
  int (*all_gather)(const void* in, void* out, size_t count, int dtype, void* comm, void* stream);
  // in[nranks * count]; out[count] <- the sum over ranks of their piece `rank`.
  int (*reduce_scatter)(const void* in, void* out, size_t count, int dtype, void* comm, void* stream);
  // out[count] of rank `root` <- the sum over ranks of in[count]; out is not written elsewhere.
  int (*reduce)(const void* in, void* out, size_t count, int dtype, int root, void* comm, void* stream);
  // In place: buf[count] <- rank root's buf.
  int (*broadcast)(void* buf, size_t count, int dtype, int root, void* comm, void* stream);
  // Point to point, between group_start and group_end.
  int (*send)(const void* buf, size_t count, int dtype, int peer, void* comm, void* stream);
  int (*recv)(void* buf, size_t count, int dtype, int peer, void* comm, void* stream);
};

// The table, defined by nccl_api.cc in the CUDA module only (whose entry point hands it out);
// it lives as long as the process.
const struct TensoroptNcclApi* tensoropt_nccl_api(void);

#ifdef __cplusplus
}
#endif
