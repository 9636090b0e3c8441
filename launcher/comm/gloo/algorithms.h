// The algorithms the Gloo communicator's sums run, and the choice between them.
//
// all_reduce is Gloo's allreduce (ring; gloo_all_reduce). reduce_scatter_v with equal counts over
// a power-of-two group and at most 256 KiB of input (use_halving_doubling): Gloo's
// ReduceScatterHalvingDoubling (an algorithm object of Gloo's older buffer API, built once per
// group, dtype and counts on a scratch copy of the input, and cached: 32 per group), on a third
// context of the group (members meet under "h" + the group's key): its registered buffers stall
// unbound-buffer collectives that share its connections. Otherwise one exchange like Gloo's
// alltoallv that brings each member every member's piece, then a local sum (direct_reduce_scatter:
// the same bytes as a ring, in one round). Gloo's halving-doubling copies between overlapping
// ranges for some uneven counts, hence the limits. (all_gather_v, all_to_all_v, broadcast and
// barrier are Gloo's own, called in collectives.cc.)
//
// Each function runs one collective on a context of the group; every member calls it with the
// same arguments but its own buffers. Errors: Gloo's exceptions, or std::runtime_error for an
// aborted send or receive; the communicator turns them into CommError. Thread-safety: none per
// context (the async lane runs gloo_all_reduce on contexts of its own).
#pragma once

#include <gloo/algorithm.h>
#include <gloo/context.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <numeric>
#include <utility>
#include <vector>

#include "launcher/comm/communicator.h"
#include "launcher/comm/gloo/groups.h"
#include "launcher/comm/gloo/sums.h"

namespace tensoropt::comm::gloo_impl {

inline int64_t total(const std::vector<int64_t>& counts) { return std::accumulate(counts.begin(), counts.end(), int64_t{0}); }

// Gloo's allreduce of buf[count] with `fn` (sum_fn(dtype)) under `tag`; Gloo moves elements of
// the dtype's size. REQUIRES: dtype has a sum.
void gloo_all_reduce(const std::shared_ptr<gloo::Context>& context, uint32_t tag, void* buf, int64_t count, DType dtype,
                     AddFn fn, std::chrono::milliseconds timeout);

struct HalvingDoubling {
  std::vector<uint8_t> scratch;  // the algorithm reduces in place here
  std::unique_ptr<gloo::Algorithm> algorithm;
};
// Every member builds the same entries in the same order (the same calls), so the Gloo slots that
// building takes agree across members.
using HalvingDoublingCache = std::map<std::pair<DType, std::vector<int64_t>>, HalvingDoubling>;

// Whether a reduce-scatter of `counts` (one per group member) moving `bytes` of input in `dtype`
// runs halving_doubling_reduce_scatter (else direct_reduce_scatter).
bool use_halving_doubling(const std::vector<int64_t>& counts, int64_t bytes, DType dtype);

// Gloo's ReduceScatterHalvingDoubling on `ctx` (the group's "h" context), from `cache`.
// REQUIRES: use_halving_doubling.
void halving_doubling_reduce_scatter(const std::shared_ptr<gloo::Context>& ctx, HalvingDoublingCache& cache,
                                     const void* in, void* out, const std::vector<int64_t>& counts, DType dtype);

// The direct reduce-scatter on the group's blocking context `g` (its tag names the messages);
// `scratch` holds the other members' pieces. REQUIRES: g.context is not null.
void direct_reduce_scatter(const GroupContext& g, const void* in, void* out, const std::vector<int64_t>& counts,
                           int64_t es, AddFn fn, std::vector<uint8_t>& scratch, std::chrono::milliseconds timeout);

}  // namespace tensoropt::comm::gloo_impl
