#include "launcher/runtime/cpu/linear_im2col.h"

#include "planner/parallel/kernel_workspace.h"

#include <algorithm>

namespace tensoropt::runtime::cpu {
namespace {

// Grain for loops over rows of `elems` floats: about 16K floats per chunk.
int64_t grain(int64_t elems) { return std::max<int64_t>(1, (1 << 14) / std::max<int64_t>(elems, 1)); }

}  // namespace

void im2col(const Window& w, const float* x, int64_t channels, float* col, int threads) {
  const int64_t k = w.kernel_size(), in = w.in_size(), out = w.out_size(), s = w.stride[2];
  parallel_for(channels * k, grain(out), threads, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      float* row = col + r * out;
      const float* xc = x + r / k * in;
      std::fill_n(row, out, 0.0f);
      for_rows(w, r % k, [&](int64_t orow, int64_t irow, int64_t a, int64_t b) {
        strided(xc + (irow + a * s), b - a, s, [&](auto&& v) { VectorMap(row + orow + a, b - a) = v; });
      });
    }
  });
}

void col2im(const Window& w, const float* col, int64_t channels, float* x, int threads) {
  const int64_t k = w.kernel_size(), in = w.in_size(), out = w.out_size(), s = w.stride[2];
  parallel_for(channels, grain(k * out), threads, [&](int64_t lo, int64_t hi) {
    for (int64_t ch = lo; ch < hi; ++ch) {
      float* xc = x + ch * in;
      std::fill_n(xc, in, 0.0f);
      for (int64_t j = 0; j < k; ++j) {
        const float* row = col + (ch * k + j) * out;
        for_rows(w, j, [&](int64_t orow, int64_t irow, int64_t a, int64_t b) {
          strided(xc + (irow + a * s), b - a, s, [&](auto&& v) { v += ConstVectorMap(row + orow + a, b - a); });
        });
      }
    }
  });
}

bool is_pointwise(const Window& w) {
  for (size_t a = 0; a < 3; ++a) {
    if (w.kernel[a] != 1 || w.stride[a] != 1 || w.pad[a] != 0 || w.in[a] != w.out[a]) return false;
  }
  return true;
}

ImageSplit split_images(int64_t n, int threads) {
  const planner::ImageParts p = planner::image_parts(n, threads);  // the planner costs the same split
  return {n, p.parts, p.inner};
}

PartSums::PartSums(float* dw, int64_t size, int64_t parts, const StepContext& ctx) : dw_(dw), size_(size) {
  std::fill_n(dw, size, 0.0f);
  for (int64_t p = 1; p < parts; ++p) {
    extra_.emplace_back(DType::F32, Shape{size}, *ctx.allocator, MemoryKind::Transients);
    std::fill_n(extra_.back().data<float>(), size, 0.0f);
  }
}

void PartSums::sum(int threads) {
  if (extra_.empty()) return;
  parallel_for(size_, 1 << 14, threads, [&](int64_t lo, int64_t hi) {
    for (const Array& e : extra_) {
      const float* pe = e.data<float>();
      for (int64_t i = lo; i < hi; ++i) dw_[i] += pe[i];
    }
  });
}

void fill_bias(const float* b, int64_t n, int64_t m, int64_t positions, float* y, int threads) {
  parallel_for(n * m, grain(positions), threads, [&](int64_t lo, int64_t hi) {
    for (int64_t p = lo; p < hi; ++p) std::fill_n(y + p * positions, positions, b[p % m]);
  });
}

void bias_grad(const float* dy, int64_t n, int64_t m, int64_t positions, float* db, int threads) {
  parallel_for(m, 1, threads, [&](int64_t lo, int64_t hi) {
    for (int64_t ch = lo; ch < hi; ++ch) {
      float s = 0;
      for (int64_t i = 0; i < n; ++i) s += ConstVectorMap(dy + (i * m + ch) * positions, positions).sum();
      db[ch] = s;
    }
  });
}

}  // namespace tensoropt::runtime::cpu
