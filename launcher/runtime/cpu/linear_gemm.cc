#include "launcher/runtime/cpu/linear_gemm.h"

#include <algorithm>
#include <numeric>

#include "launcher/runtime/cpu/linear_block_gemm.h"
#include "launcher/runtime/cpu/util.h"

namespace tensoropt::runtime::cpu {
void gemm(const GemmDims& d, float alpha, const float* a, const float* b, float beta, float* c, int threads) {
  if (d.m == 0 || d.n == 0) return;
  const int64_t lda = d.ta ? d.m : d.k, ldb = d.tb ? d.k : d.n;
  // Each thread takes a slab of C's columns (or rows, when C is taller than wide), slabs a multiple
  // of Eigen's micro-kernel width, and multiplies it alone: no synchronisation but the join.
  constexpr int64_t kSlab = 16;
  const double macs = static_cast<double>(d.m) * static_cast<double>(d.n) * static_cast<double>(d.k);
  const bool by_cols = d.n >= d.m;
  const int64_t slabs = ((by_cols ? d.n : d.m) + kSlab - 1) / kSlab;
  if (threads <= 1 || slabs < 2 || macs < (1 << 18)) return block_gemm(d, alpha, a, lda, b, ldb, beta, c, d.n);
  parallel_for(slabs, 1, threads, [&](int64_t lo, int64_t hi) {
    const int64_t begin = lo * kSlab, end = std::min(hi * kSlab, by_cols ? d.n : d.m);
    GemmDims part = d;
    if (by_cols) {
      part.n = end - begin;
      block_gemm(part, alpha, a, lda, b + (d.tb ? begin * ldb : begin), ldb, beta, c + begin, d.n);
    } else {
      part.m = end - begin;
      block_gemm(part, alpha, a + (d.ta ? begin : begin * lda), lda, b, ldb, beta, c + begin * d.n, d.n);
    }
  });
}

void batched_gemm(const GemmDims& d, const float* a, const float* b, float* c, const GemmBatch& batch, int threads) {
  const int64_t sa = d.m * d.k, sb = d.k * d.n, sc = d.m * d.n;
  // Products ordered by their C matrix; `starts` delimits the runs that share one.
  std::vector<size_t> order(batch.c.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return batch.c[x] < batch.c[y]; });
  std::vector<size_t> starts;
  for (size_t i = 0; i < order.size(); ++i) {
    if (i == 0 || batch.c[order[i]] != batch.c[order[i - 1]]) starts.push_back(i);
  }
  starts.push_back(order.size());
  const auto slots = static_cast<int64_t>(starts.size()) - 1;
  // Whole products per thread when they divide evenly enough; else each product split by gemm.
  const bool across = threads > 1 && slots >= threads && (slots % threads == 0 || slots >= 4 * threads);
  const int inner = across ? 1 : threads;
  auto run = [&](int64_t lo, int64_t hi) {
    for (int64_t s = lo; s < hi; ++s) {
      for (size_t i = starts[static_cast<size_t>(s)]; i < starts[static_cast<size_t>(s) + 1]; ++i) {
        size_t p = order[i];
        gemm(d, 1.0f, a + batch.a[p] * sa, b + batch.b[p] * sb, i == starts[static_cast<size_t>(s)] ? 0.0f : 1.0f,
             c + batch.c[p] * sc, inner);
      }
    }
  };
  if (across) parallel_for(slots, 1, threads, run);
  else run(0, slots);
}

}  // namespace tensoropt::runtime::cpu
