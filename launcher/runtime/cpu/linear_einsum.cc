// Einsum (graph/ops/linear.cc) on the CPU: any equation the catalogue accepts, planned by
// ../einsum_plan.h (which says how), as gathers (permute, diagonal, sum) and one batched GEMM
// (linear_gemm.h) per pair of operands.
#include "launcher/runtime/cpu/linear_einsum.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "launcher/runtime/cpu/linear_gemm.h"
#include "launcher/runtime/cpu/util.h"
#include "launcher/runtime/einsum_plan.h"

namespace tensoropt::runtime::cpu {
namespace {

using namespace einsum;

// fn(offset) for the multi-indices lo..hi-1 (row-major) of `sizes`, offset = Σ index·stride.
template <typename Fn>
void walk(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides, int64_t lo, int64_t hi, Fn&& fn) {
  if (lo >= hi) return;
  const size_t r = sizes.size();
  std::vector<int64_t> idx(r);
  int64_t off = 0;
  for (size_t a = r, rem = static_cast<size_t>(lo); a-- > 0;) {
    idx[a] = static_cast<int64_t>(rem) % sizes[a];
    rem /= static_cast<size_t>(sizes[a]);
    off += idx[a] * strides[a];
  }
  for (int64_t i = lo; i < hi; ++i) {
    fn(off);
    for (size_t a = r; a-- > 0;) {
      off += strides[a];
      if (++idx[a] < sizes[a]) break;
      off -= strides[a] * sizes[a];
      idx[a] = 0;
    }
  }
}

// y [keep...] = gather(x, keep).
void gather(const float* x, const Shape& xs, const Labels& labels, const Labels& keep, const std::vector<int64_t>& size,
            float* y, int threads) {
  GatherSpace g = gather_space(xs, labels, keep, size);
  parallel_for(g.kept, std::max<int64_t>(1, 4096 / std::max<int64_t>(g.summed, 1)), threads, [&](int64_t lo, int64_t hi) {
    int64_t i = lo;
    walk(g.keep_size, g.keep_stride, lo, hi, [&](int64_t base) {
      float s = 0;
      walk(g.sum_size, g.sum_stride, 0, g.summed, [&](int64_t off) { s += x[base + off]; });
      y[i++] = s;
    });
  });
}

// dx = scatter(d [keep...]) onto x's shape.
void scatter(const float* d, const Shape& xs, const Labels& labels, const Labels& keep, const std::vector<int64_t>& size,
             float* dx, int threads) {
  GatherSpace g = gather_space(xs, labels, keep, size);
  std::fill_n(dx, numel(xs), 0.0f);
  parallel_for(g.kept, std::max<int64_t>(1, 4096 / std::max<int64_t>(g.summed, 1)), threads, [&](int64_t lo, int64_t hi) {
    int64_t i = lo;
    walk(g.keep_size, g.keep_stride, lo, hi, [&](int64_t base) {
      const float v = d[i++];
      walk(g.sum_size, g.sum_stride, 0, g.summed, [&](int64_t off) { dx[base + off] = v; });
    });
  });
}

GemmBatch diagonal_batch(int64_t nb) {
  GemmBatch b;
  for (int64_t i = 0; i < nb; ++i) {
    b.a.push_back(i);
    b.b.push_back(i);
    b.c.push_back(i);
  }
  return b;
}


class CpuOps final : public Ops {
 public:
  explicit CpuOps(int threads) : threads_(threads) {}
  void gather(const float* x, const Shape& xs, const Labels& labels, const Labels& keep, const std::vector<int64_t>& size,
              float* y) override {
    cpu::gather(x, xs, labels, keep, size, y, threads_);
  }
  void scatter(const float* d, const Shape& xs, const Labels& labels, const Labels& keep, const std::vector<int64_t>& size,
               float* dx) override {
    cpu::scatter(d, xs, labels, keep, size, dx, threads_);
  }
  void batched_gemm(const EinsumGemm& d, const float* a, const float* b, float* c, int64_t batch) override {
    cpu::batched_gemm({d.m, d.n, d.k, d.ta, d.tb}, a, b, c, diagonal_batch(batch), threads_);
  }

 private:
  int threads_;
};

}  // namespace

void register_einsum(KernelTable& table) {
  table["Einsum"] = {[](const OpCall& c) {
                       CpuOps ops(c.ctx.threads);
                       einsum_forward(c, ops);
                     },
                     [](const GradCall& c) {
                       CpuOps ops(c.ctx.threads);
                       einsum_backward(c, ops);
                     }};
}

}  // namespace tensoropt::runtime::cpu
