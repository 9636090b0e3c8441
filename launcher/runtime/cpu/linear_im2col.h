// The building blocks of the im2col convolutions (linear_conv.cc): the im2col matrix and its
// adjoint, the split of a batch over threads, and per-channel bias.
//
// col(x) [channels·K, O] of x [channels, I] over a Window (linear_window.h): row (c, j) holds
// x[c] at the position kernel offset j reads for each output position, 0 in the padding.
// col2im is its adjoint: a [channels·K, O] matrix summed back onto x's positions.
#pragma once

#include <cstdint>
#include <vector>

#include "launcher/runtime/array.h"
#include "launcher/runtime/cpu/linear_window.h"
#include "launcher/runtime/cpu/util.h"
#include "launcher/runtime/kernel.h"

namespace tensoropt::runtime::cpu {

// col [channels·K, O] = col(x [channels, I]), on `threads` threads.
void im2col(const Window& w, const float* x, int64_t channels, float* col, int threads);
// x [channels, I] = col2im(col [channels·K, O]) (overwrites x), on `threads` threads.
void col2im(const Window& w, const float* col, int64_t channels, float* x, int threads);
// 1x1, stride 1, unpadded: col(x) = x.
bool is_pointwise(const Window& w);

// A batch of n images over threads: with enough images to share evenly, one part of whole images
// per thread, each running its products alone (inner = 1): the threads meet once per call, not
// once per product. Otherwise one part, its products on every thread.
struct ImageSplit {
  int64_t n = 0, parts = 1;
  int inner = 1;
  int64_t begin(int64_t part) const { return part * n / parts; }
};
ImageSplit split_images(int64_t n, int threads);

// fn(part, first, end): the parts in parallel, part p covering images [first, end).
template <typename Fn>
void for_parts(const ImageSplit& s, int threads, Fn&& fn) {
  parallel_for(s.parts, 1, threads, [&](int64_t lo, int64_t hi) {
    for (int64_t p = lo; p < hi; ++p) fn(p, s.begin(p), s.begin(p + 1));
  });
}

// Weight-gradient accumulators, one per part: part 0 sums into dw itself, the others into
// transients that sum() adds to dw. All start at zero.
class PartSums {
 public:
  PartSums(float* dw, int64_t size, int64_t parts, const StepContext& ctx);
  float* part(int64_t p) { return p == 0 ? dw_ : extra_[static_cast<size_t>(p - 1)].data<float>(); }
  void sum(int threads);

 private:
  float* dw_;
  int64_t size_;
  std::vector<Array> extra_;
};

// y[n, m, :] = b[m] for every image n and channel m of y [N, M, positions].
void fill_bias(const float* b, int64_t n, int64_t m, int64_t positions, float* y, int threads);
// db[m] = Σ_{n, positions} dy[n, m, :].
void bias_grad(const float* dy, int64_t n, int64_t m, int64_t positions, float* db, int threads);

}  // namespace tensoropt::runtime::cpu
