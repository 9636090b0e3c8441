#include "launcher/runtime/cpu/linear_gemm.h"

#include <algorithm>
#include <numeric>

#include "launcher/runtime/cpu/util.h"

namespace tensoropt::runtime::cpu {
namespace {

template <typename OpA, typename OpB>
void product(MapRM& c, float alpha, const OpA& a, const OpB& b, float beta) {
  if (beta == 0.0f) {
    c.noalias() = (alpha * a) * b;
    return;
  }
  if (beta != 1.0f) c *= beta;
  c.noalias() += (alpha * a) * b;
}

}  // namespace

void gemm(const GemmDims& d, float alpha, const float* a, const float* b, float beta, float* c) {
  MapRM mc(c, d.m, d.n);
  if (d.m == 0 || d.n == 0) return;
  if (d.k == 0) {
    if (beta == 0.0f) mc.setZero();
    else mc *= beta;
    return;
  }
  ConstMapRM ma(a, d.ta ? d.k : d.m, d.ta ? d.m : d.k);
  ConstMapRM mb(b, d.tb ? d.n : d.k, d.tb ? d.k : d.n);
  if (d.ta && d.tb) product(mc, alpha, ma.transpose(), mb.transpose(), beta);
  else if (d.ta) product(mc, alpha, ma.transpose(), mb, beta);
  else if (d.tb) product(mc, alpha, ma, mb.transpose(), beta);
  else product(mc, alpha, ma, mb, beta);
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
  auto run = [&](int64_t lo, int64_t hi) {
    for (int64_t s = lo; s < hi; ++s) {
      for (size_t i = starts[static_cast<size_t>(s)]; i < starts[static_cast<size_t>(s) + 1]; ++i) {
        size_t p = order[i];
        gemm(d, 1.0f, a + batch.a[p] * sa, b + batch.b[p] * sb, i == starts[static_cast<size_t>(s)] ? 0.0f : 1.0f,
             c + batch.c[p] * sc);
      }
    }
  };
  // Whole products per thread when they divide evenly enough; else Eigen threads each product.
  bool across = threads > 1 && slots >= threads && (slots % threads == 0 || slots >= 4 * threads);
  if (across) parallel_for(slots, 1, threads, run);
  else run(0, slots);
}

}  // namespace tensoropt::runtime::cpu
