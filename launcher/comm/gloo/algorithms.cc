#include "launcher/comm/gloo/algorithms.h"

#include <gloo/allreduce.h>
#include <gloo/reduce_scatter.h>
#include <gloo/types.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace tensoropt::comm::gloo_impl {

namespace {

// Reduce-scatters of at most this many input bytes, with equal counts over a power-of-two group,
// run Gloo's halving-doubling algorithm, built once per (dtype, counts) on a scratch copy of the
// input and cached (its buffers are registered with the peers, so a run needs no handshake: 2-4x
// faster than an alltoallv on small inputs). It runs on a context of its own per group: on the
// blocking calls' connections its registered buffers stalled the unbound-buffer collectives that
// followed (a 7 MiB all-gather took 0.4-4 s, both sides idle; GPT-2 small on 2 workers: 208 s a
// step, 27 s without). Above 256 KiB direct_reduce_scatter is as fast (1 MiB on 2 processes:
// within 1% of halving-doubling, whose copies in and out of its scratch cost 16% there); so do
// uneven counts and other group sizes, for which Gloo's final local copy may memcpy between
// overlapping ranges (ASan showed it for counts {2,5}).
constexpr int64_t kHalvingDoublingMaxBytes = 1 << 18;
// The slot prefix of direct_reduce_scatter's messages: past Gloo's own (gloo/types.h, 0x01-0x08).
constexpr uint8_t kReduceScatterSlotPrefix = 0x40;
constexpr size_t kHalvingDoublingCacheEntries = 32;  // per group: at most ~32 MiB of scratch

template <typename T>
void gloo_all_reduce(const std::shared_ptr<gloo::Context>& context, uint32_t tag, T* buf, int64_t count, AddFn fn,
                     std::chrono::milliseconds timeout) {
  gloo::AllreduceOptions opts(context);
  opts.setOutput(buf, static_cast<size_t>(count));
  opts.setReduceFunction(fn);
  opts.setTag(tag);
  opts.setTimeout(timeout);
  gloo::allreduce(opts);
}

template <typename T>
std::unique_ptr<gloo::Algorithm> make_halving_doubling(const std::shared_ptr<gloo::Context>& ctx, uint8_t* scratch,
                                                       const std::vector<int64_t>& counts) {
  std::vector<int> recv;
  int all = 0;
  for (int64_t c : counts) {
    recv.push_back(static_cast<int>(c));
    all += static_cast<int>(c);
  }
  return std::make_unique<gloo::ReduceScatterHalvingDoubling<T>>(ctx, std::vector<T*>{reinterpret_cast<T*>(scratch)}, all, recv);
}

}  // namespace

void gloo_all_reduce(const std::shared_ptr<gloo::Context>& context, uint32_t tag, void* buf, int64_t count, DType dtype,
                     AddFn fn, std::chrono::milliseconds timeout) {
  switch (dtype) {
    case DType::F32: return gloo_all_reduce(context, tag, static_cast<float*>(buf), count, fn, timeout);
    case DType::F64: return gloo_all_reduce(context, tag, static_cast<double*>(buf), count, fn, timeout);
    case DType::I32: return gloo_all_reduce(context, tag, static_cast<int32_t*>(buf), count, fn, timeout);
    case DType::BF16: return gloo_all_reduce(context, tag, static_cast<uint16_t*>(buf), count, fn, timeout);
    default: return gloo_all_reduce(context, tag, static_cast<int64_t*>(buf), count, fn, timeout);  // I64 (sum_fn checked)
  }
}

bool use_halving_doubling(const std::vector<int64_t>& counts, int64_t bytes, DType dtype) {
  const auto n = static_cast<int>(counts.size());
  const bool even = std::all_of(counts.begin(), counts.end(), [&](int64_t c) { return c == counts[0]; });
  return bytes <= kHalvingDoublingMaxBytes && even && (n & (n - 1)) == 0 && dtype != DType::BF16;
}

void halving_doubling_reduce_scatter(const std::shared_ptr<gloo::Context>& ctx, HalvingDoublingCache& cache,
                                     const void* in, void* out, const std::vector<int64_t>& counts, DType dtype) {
  const int64_t es = comm_dtype_size(dtype);
  const auto bytes = static_cast<size_t>(total(counts) * es);
  auto key = std::make_pair(dtype, counts);
  auto it = cache.find(key);
  if (it == cache.end()) {
    if (cache.size() >= kHalvingDoublingCacheEntries) cache.clear();
    HalvingDoubling h;
    h.scratch.resize(bytes);
    switch (dtype) {
      case DType::F32: h.algorithm = make_halving_doubling<float>(ctx, h.scratch.data(), counts); break;
      case DType::F64: h.algorithm = make_halving_doubling<double>(ctx, h.scratch.data(), counts); break;
      case DType::I32: h.algorithm = make_halving_doubling<int32_t>(ctx, h.scratch.data(), counts); break;
      default: h.algorithm = make_halving_doubling<int64_t>(ctx, h.scratch.data(), counts); break;
    }
    it = cache.emplace(std::move(key), std::move(h)).first;
  }
  HalvingDoubling& h = it->second;
  std::memcpy(h.scratch.data(), in, bytes);
  h.algorithm->run();
  const int64_t mine = counts[static_cast<size_t>(ctx->rank)];
  if (mine > 0) std::memcpy(out, h.scratch.data(), static_cast<size_t>(mine * es));  // its result comes first
}

// Direct reduce-scatter: one Gloo alltoallv sends piece j of my input to member j and brings me
// every member's piece `me`; I add them up. Each member sends and receives (n-1)/n of the input,
// as a ring does, in one round instead of n-1 (Gloo's unbound buffers cost a handshake per
// message, which made the ring 2-10x slower than Gloo's halving-doubling below 4 MiB on 4 ranks).
void direct_reduce_scatter(const GroupContext& g, const void* in, void* out, const std::vector<int64_t>& counts,
                           int64_t es, AddFn fn, std::vector<uint8_t>& scratch, std::chrono::milliseconds timeout) {
  const int n = g.context->size, me = g.context->rank;
  const int64_t mine = counts[static_cast<size_t>(me)];
  const size_t piece_bytes = static_cast<size_t>(mine * es);
  std::vector<size_t> offset(static_cast<size_t>(n) + 1, 0);
  for (int j = 0; j < n; ++j) offset[static_cast<size_t>(j) + 1] = offset[static_cast<size_t>(j)] + static_cast<size_t>(counts[static_cast<size_t>(j)] * es);
  // Every other member's piece `me` lands in scratch, one after another; my own piece is read
  // where it is (an alltoallv would copy it in first). Sends and receives are posted at once on
  // unbound buffers, under a slot of this call's tag no Gloo collective uses.
  scratch.resize(std::max<size_t>(1, piece_bytes * static_cast<size_t>(n - 1)));
  uint8_t dummy = 0;
  auto source = g.context->createUnboundBuffer(offset.back() ? const_cast<void*>(in) : &dummy, std::max<size_t>(1, offset.back()));
  auto sink = g.context->createUnboundBuffer(scratch.data(), scratch.size());
  const uint64_t slot = gloo::Slot::build(kReduceScatterSlotPrefix, g.tag);
  int sends = 0, recvs = 0;
  for (int j = 0; j < n; ++j) {
    if (j == me) continue;
    const auto bytes = static_cast<size_t>(counts[static_cast<size_t>(j)] * es);
    if (bytes > 0) source->send(j, slot, offset[static_cast<size_t>(j)], bytes), ++sends;
    if (piece_bytes > 0) sink->recv(j, slot, static_cast<size_t>(recvs) * piece_bytes, piece_bytes), ++recvs;
  }
  for (int k = 0; k < recvs; ++k)
    if (!sink->waitRecv(timeout)) throw std::runtime_error("reduce_scatter: a receive was aborted");
  for (int k = 0; k < sends; ++k)
    if (!source->waitSend(timeout)) throw std::runtime_error("reduce_scatter: a send was aborted");
  if (mine == 0) return;
  const auto elems = static_cast<size_t>(mine);
  const auto* own = static_cast<const uint8_t*>(in) + offset[static_cast<size_t>(me)];
  if (n == 1) {
    std::memmove(out, own, piece_bytes);
    return;
  }
  fn(out, own, scratch.data(), elems);
  for (int k = 1; k < n - 1; ++k) fn(out, out, scratch.data() + static_cast<size_t>(k) * piece_bytes, elems);
}

}  // namespace tensoropt::comm::gloo_impl
