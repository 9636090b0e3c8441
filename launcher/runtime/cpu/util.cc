#include "launcher/runtime/cpu/util.h"

#include <algorithm>

#include <omp.h>

#include "graph/error.h"
#include "launcher/runtime/cpu/denormals.h"

namespace tensoropt::runtime::cpu {

void parallel_for(int64_t n, int64_t grain, int threads, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  int64_t chunks = std::min<int64_t>(std::max(threads, 1), (n + grain - 1) / grain);
  if (chunks <= 1) {
    flush_denormals_here();
    fn(0, n);
    return;
  }
  int64_t per = (n + chunks - 1) / chunks;
#pragma omp parallel for num_threads(static_cast<int>(chunks)) schedule(static, 1)
  for (int64_t c = 0; c < chunks; ++c) {
    flush_denormals_here();
    int64_t lo = c * per, hi = std::min(n, lo + per);
    if (lo < hi) fn(lo, hi);
  }
}

std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t a = s.size(); a-- > 1;) st[a - 1] = st[a] * s[a];
  return st;
}

std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out) {
  TO_CHECK(in.size() <= out.size());
  std::vector<int64_t> in_st = strides_of(in);
  std::vector<int64_t> st(out.size(), 0);
  size_t shift = out.size() - in.size();
  for (size_t a = 0; a < in.size(); ++a) {
    TO_CHECK(in[a] == out[a + shift] || in[a] == 1);
    st[a + shift] = in[a] == 1 ? 0 : in_st[a];
  }
  return st;
}

int64_t broadcast_offset(int64_t k, const Shape& out, const std::vector<int64_t>& bstrides) {
  int64_t off = 0;
  for (size_t a = out.size(); a-- > 0;) {
    int64_t i = k % out[a];
    k /= out[a];
    off += i * bstrides[a];
  }
  return off;
}

void sum_to_shape(const float* grad_out, const Shape& out, float* grad_in, const Shape& in, int threads) {
  int64_t n_in = numel(in), n_out = numel(out);
  std::fill(grad_in, grad_in + n_in, 0.0f);
  if (n_in == n_out) {
    std::copy(grad_out, grad_out + n_out, grad_in);
    return;
  }
  std::vector<int64_t> bst = broadcast_strides(in, out);
  // Common fast path: `in` is a suffix of `out` (a bias [C] against [B, T, C]): sum rows.
  Shape padded(out.size() - in.size(), 1);
  padded.insert(padded.end(), in.begin(), in.end());
  size_t lead = 0;
  while (lead < out.size() && padded[lead] == 1) ++lead;
  bool suffix = true;
  for (size_t a = lead; a < out.size(); ++a) suffix = suffix && padded[a] == out[a];
  if (suffix) {
    int64_t rows = n_out / n_in;
    // Each thread sums a slice of columns over all rows: no races.
    parallel_for(n_in, 1024, threads, [&](int64_t lo, int64_t hi) {
      for (int64_t r = 0; r < rows; ++r) {
        const float* g = grad_out + r * n_in;
        for (int64_t c = lo; c < hi; ++c) grad_in[c] += g[c];
      }
    });
    return;
  }
  for (int64_t k = 0; k < n_out; ++k) grad_in[broadcast_offset(k, out, bst)] += grad_out[k];
}

void require_f32(const Node& node, const Array& a, const char* what) {
  if (a.dtype() != DType::F32) kernel_error(node, std::string(what) + " is " + a.str() + "; the CPU kernel takes float32");
}

int64_t index_at(const Array& a, int64_t i) {
  if (a.dtype() == DType::I64) return a.data<int64_t>()[i];
  if (a.dtype() == DType::I32) return a.data<int32_t>()[i];
  TO_CHECK(false && "index tensor is not int64 or int32");
  return 0;
}

}  // namespace tensoropt::runtime::cpu
