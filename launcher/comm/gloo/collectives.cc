// The blocking collectives of GlooCommunicator: argument checks, then one run() on the group's
// context. Copies are Gloo's own (allgatherv, alltoallv, broadcast, barrier); sums go through
// algorithms.h. A group of one (a null context) copies locally.
#include <gloo/allgatherv.h>
#include <gloo/alltoallv.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>

#include <cstring>

#include "graph/error.h"
#include "launcher/comm/gloo/gloo_communicator.h"

namespace tensoropt::comm::gloo_impl {

template <typename Fn>
void GlooCommunicator::run(const char* what, const Group& group, Fn&& fn) {
  refuse_after_failure(what, group);
  check_group(group, what);
  GroupContext& g = context(group, what, contexts_);
  try {
    fn(g);
    ++g.tag;
  } catch (const InternalError&) {
    throw;
  } catch (const std::exception& e) {
    fail(what, group, e.what());
  }
}

void GlooCommunicator::all_reduce(void* buf, int64_t count, DType dtype, const Group& group) {
  const AddFn fn = sum_fn(dtype, "all_reduce");
  check_count(count, "all_reduce");
  run("all_reduce", group, [&](GroupContext& g) {
    if (!g.context || count == 0) return;
    gloo_all_reduce(g.context, g.tag, buf, count, dtype, fn, options_.timeout);
  });
}

void GlooCommunicator::all_gather_v(const void* in, void* out, const std::vector<int64_t>& counts, DType dtype,
                                    const Group& group) {
  const int64_t es = copy_size(dtype, "all_gather");
  check_counts(counts, group, "all_gather");
  run("all_gather", group, [&](GroupContext& g) {
    const int me = group.index_of(rank());
    if (!g.context) {
      if (counts[0] > 0) std::memmove(out, in, static_cast<size_t>(counts[0] * es));
      return;
    }
    if (total(counts) == 0) return;
    std::vector<size_t> bytes;
    for (int64_t c : counts) bytes.push_back(static_cast<size_t>(c * es));
    gloo::AllgathervOptions opts(g.context);
    opts.setInput(const_cast<uint8_t*>(static_cast<const uint8_t*>(in)), bytes[static_cast<size_t>(me)]);
    opts.setOutput(static_cast<uint8_t*>(out), bytes);
    opts.setTag(g.tag);
    opts.setTimeout(options_.timeout);
    gloo::allgatherv(opts);
  });
}

void GlooCommunicator::reduce_scatter_v(const void* in, void* out, const std::vector<int64_t>& counts, DType dtype,
                                        const Group& group) {
  const AddFn fn = sum_fn(dtype, "reduce_scatter");
  check_counts(counts, group, "reduce_scatter");
  run("reduce_scatter", group, [&](GroupContext& g) {
    const int64_t es = comm_dtype_size(dtype);
    if (!g.context) {
      if (counts[0] > 0) std::memmove(out, in, static_cast<size_t>(counts[0] * es));
      return;
    }
    const int64_t bytes = total(counts) * es;
    if (bytes == 0) return;
    if (use_halving_doubling(counts, bytes, dtype))
      halving_doubling_reduce_scatter(group, in, out, counts, dtype);
    else
      direct_reduce_scatter(g, in, out, counts, es, fn, scratch_, options_.timeout);
  });
}

void GlooCommunicator::halving_doubling_reduce_scatter(const Group& group, const void* in, void* out,
                                                       const std::vector<int64_t>& counts, DType dtype) {
  const std::shared_ptr<gloo::Context> ctx = context(group, "reduce_scatter", hd_contexts_, "h").context;
  gloo_impl::halving_doubling_reduce_scatter(ctx, hd_cache_[group.ranks], in, out, counts, dtype);
}

void GlooCommunicator::all_to_all_v(const void* in, const std::vector<int64_t>& send_counts, void* out,
                                    const std::vector<int64_t>& recv_counts, DType dtype, const Group& group) {
  const int64_t es = copy_size(dtype, "all_to_all");
  check_counts(send_counts, group, "all_to_all");
  check_counts(recv_counts, group, "all_to_all");
  run("all_to_all", group, [&](GroupContext& g) {
    if (!g.context) {
      if (send_counts[0] != recv_counts[0])
        throw InternalError("all_to_all: a group of one sends and receives different counts");
      if (send_counts[0] > 0) std::memmove(out, in, static_cast<size_t>(send_counts[0] * es));
      return;
    }
    std::vector<int64_t> sb, rb;
    for (int64_t c : send_counts) sb.push_back(c * es);
    for (int64_t c : recv_counts) rb.push_back(c * es);
    // Gloo wants a buffer even when this member moves nothing.
    uint8_t dummy_in = 0, dummy_out = 0;
    auto* src = total(send_counts) ? const_cast<uint8_t*>(static_cast<const uint8_t*>(in)) : &dummy_in;
    auto* dst = total(recv_counts) ? static_cast<uint8_t*>(out) : &dummy_out;
    gloo::AlltoallvOptions opts(g.context);
    opts.setInput(src, sb);
    opts.setOutput(dst, rb);
    opts.setTag(g.tag);
    opts.setTimeout(options_.timeout);
    gloo::alltoallv(opts);
  });
}

void GlooCommunicator::broadcast(void* buf, int64_t count, DType dtype, int root, const Group& group) {
  const int64_t es = copy_size(dtype, "broadcast");
  check_count(count, "broadcast");
  if (root < 0 || root >= group.size())
    throw InternalError("broadcast: root " + std::to_string(root) + " is not a rank of group " + group.str());
  run("broadcast", group, [&](GroupContext& g) {
    if (!g.context || count == 0) return;
    gloo::BroadcastOptions opts(g.context);
    opts.setOutput(static_cast<uint8_t*>(buf), static_cast<size_t>(count * es));
    opts.setRoot(root);
    opts.setTag(g.tag);
    opts.setTimeout(options_.timeout);
    gloo::broadcast(opts);
  });
}

void GlooCommunicator::barrier(const Group& group) {
  run("barrier", group, [&](GroupContext& g) {
    if (!g.context) return;
    gloo::BarrierOptions opts(g.context);
    opts.setTag(g.tag);
    opts.setTimeout(options_.timeout);
    gloo::barrier(opts);
  });
}

}  // namespace tensoropt::comm::gloo_impl
