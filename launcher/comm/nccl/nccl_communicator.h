// NcclCommunicator: the Communicator (../communicator.h) of GPU workers, over NCCL. One process
// per GPU: NCCL refuses two ranks of one communicator on one GPU.
//
// No CUDA or NCCL header here or in the .cc: every call goes through the NCCL table of the CUDA
// module (nccl_abi.h), which the caller hands in (launcher/runtime/cuda/nccl_loader.h loads it),
// so this code is compiled and its host logic tested in every build.
//
// Buffers: every pointer passed to a collective is a DEVICE pointer of `device`.
//
// Rendezvous (id_exchange.h): each group's NCCL unique id goes through the store the Gloo
// communicator uses ("file:DIR" or "redis://HOST:PORT", behind `prefix`): member 0 makes it and
// sets it under the group's key, the others wait for it.
//
// Groups: one NCCL communicator per Group, made the first time this process uses the group (a
// rendezvous of its members only; non-members never call, as communicator.h says), and a second
// one, under the key's "a" lane, the first time the group is used by all_reduce_async: async
// collectives are not ordered with the blocking ones (communicator.h), and two members that
// interleave them differently must not issue them to one NCCL communicator in two orders. A group
// of one needs no NCCL communicator: its collectives are device copies on the communication
// stream (or nothing: all_reduce, broadcast, barrier), unless `nccl_for_groups_of_one` asks for a
// one-rank NCCL communicator (the GPU test, so NCCL's own path runs on one GPU).
//
// Streams: the caller's buffers are written by kernels on `compute_stream`. Each collective is
// queued on a communication stream of the communicator's own, after an event recorded on the
// compute stream, so it reads what the kernels before the call wrote. A blocking call returns
// once its collective is done on this rank (an event on the communication stream has passed);
// all_reduce_async queues on a second stream of its own and returns a Pending whose wait() waits
// for its event, so a gradient bucket is summed while the backward goes on.
//
// Algorithms: all_reduce is ncclAllReduce (sum), broadcast ncclBroadcast, barrier an all-reduce
// of a one-element device scratch buffer. all_gather_v and reduce_scatter_v with equal counts are
// ncclAllGather and ncclReduceScatter; with uneven counts, all_gather_v is grouped
// ncclSend/ncclRecv and reduce_scatter_v one ncclReduce per piece (rooted at the piece's member),
// each inside ncclGroupStart/End. all_to_all_v is always grouped send/recv. Copies move bytes
// (uint8), so every dtype with a size travels; sums use the dtype (bfloat16: ncclBfloat16).
// Members skip zero-length pieces alike (counts are the same on every member).
//
// Deadlines: NCCL communicators are non-blocking (ncclConfig_t.blocking = 0), so no NCCL call
// waits; every wait of ours (a communicator's creation, each collective, Pending::wait) polls the
// event and ncclCommGetAsyncError until `timeout` has passed since the wait began. On a timeout,
// an asynchronous error or a failed call, every NCCL communicator of this communicator is aborted
// (ncclCommAbort), and a CommError names the collective, the group and this rank; every later
// call throws CommError at once. A dead peer thus takes its group down within `timeout`.
//
// Destruction waits (up to `timeout`) for what is in flight, then finalizes and destroys each
// NCCL communicator (aborting one that does not finalize in time) and frees the streams, events
// and scratch. Not thread-safe (communicator.h).
//
// Tested here (tests/launcher/comm/test_nccl.cc, no GPU): options, the id exchange through a real
// file store, the group keys, the factory without a GPU. On a GPU only (test_nccl_gpu.cc, run by
// scripts/gpu-check): every collective through a one-rank NCCL communicator against known answers,
// and the abort paths. Multi-rank NCCL needs one GPU per rank; its logic is shared with the
// one-rank path and the multi-process behaviour with the Gloo tests through the same interface.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "launcher/comm/communicator.h"
#include "launcher/comm/nccl/nccl_abi.h"

namespace tensoropt::comm {

struct NcclOptions {
  int rank = 0;
  int size = 1;
  std::string rendezvous;  // parse_rendezvous's format (gloo_communicator.h)
  std::string prefix;      // namespaces this job's keys in a shared store; "" for none
  std::chrono::milliseconds timeout{30000};
  int device = 0;                  // this rank's CUDA device ordinal
  void* compute_stream = nullptr;  // the cudaStream_t whose kernels write the buffers; null: the legacy default stream
  bool nccl_for_groups_of_one = false;
};

// Checks the options and makes the communicator's streams, events and scratch on `device`; the
// NCCL communicators come when their groups are first used. Throws InputError (one line naming
// the option) for a bad rendezvous spec, a rank outside 0..size-1, size < 1, a timeout <= 0, a
// device that is not one of the visible GPUs (none visible included); CommError ("init" over the
// world) when the device's streams cannot be made or the store cannot be opened.
std::unique_ptr<Communicator> make_nccl_communicator(const NcclOptions& options, const TensoroptNcclApi& api);

}  // namespace tensoropt::comm
