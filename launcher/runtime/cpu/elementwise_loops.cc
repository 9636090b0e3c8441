#include "launcher/runtime/cpu/elementwise_loops.h"

#include <cmath>
#include <limits>
#include <type_traits>

#include <Eigen/Core>

#include "graph/error.h"

namespace tensoropt::runtime::cpu {

Broadcast::Broadcast(const std::vector<Shape>& operands, const Shape& out) : numel_(tensoropt::numel(out)) {
  const size_t m = operands.size();
  std::vector<std::vector<int64_t>> full(m);
  for (size_t k = 0; k < m; ++k) {
    full[k] = broadcast_strides(operands[k], out);
    operand_numel_.push_back(tensoropt::numel(operands[k]));
  }
  Shape dims;
  std::vector<std::vector<int64_t>> st(m);
  for (size_t a = 0; a < out.size(); ++a) {
    if (out[a] == 1) continue;
    bool merge = !dims.empty();
    for (size_t k = 0; k < m && merge; ++k) merge = st[k].back() == full[k][a] * out[a];
    if (merge) {
      dims.back() *= out[a];
      for (size_t k = 0; k < m; ++k) st[k].back() = full[k][a];
    } else {
      dims.push_back(out[a]);
      for (size_t k = 0; k < m; ++k) st[k].push_back(full[k][a]);
    }
  }
  step_.assign(m, 0);
  if (!dims.empty()) {
    inner_ = dims.back();
    dims.pop_back();
    for (size_t k = 0; k < m; ++k) {
      step_[k] = st[k].back();
      st[k].pop_back();
      TO_CHECK(step_[k] == 0 || step_[k] == 1);
    }
  }
  outer_ = std::move(dims);
  stride_ = std::move(st);
}

bool Broadcast::shared_rows(int k) const {
  for (int64_t s : stride_[static_cast<size_t>(k)]) {
    if (s == 0) return true;
  }
  return false;
}

namespace detail {

void add_terms(const float* t, float* d, bool contiguous, int64_t len) {
  if (contiguous) {
#pragma omp simd
    for (int64_t i = 0; i < len; ++i) d[i] += t[i];
    return;
  }
  float s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < len; ++i) s += t[i];
  *d += s;
}

void split_rows(const Broadcast& b, int k, float* d, int threads, Allocator& allocator,
                const std::function<void(float* target, int64_t r0, int64_t r1)>& add_rows) {
  const int64_t n = b.operand_numel(k), rows = b.rows();
  std::fill(d, d + n, 0.0f);
  if (rows == 0) return;
  if (!b.shared_rows(k)) {
    // Every row lands on its own elements: split the rows among threads.
    parallel_for(rows, std::max<int64_t>(1, kElementwiseGrain / b.inner()), threads,
                 [&](int64_t r0, int64_t r1) { add_rows(d, r0, r1); });
    return;
  }
  // Rows share elements: each part of the rows sums into its own copy, then the copies add up.
  int64_t parts = std::min<int64_t>({std::max(threads, 1), rows, std::max<int64_t>(1, b.numel() / kElementwiseGrain)});
  if (parts <= 1) {
    add_rows(d, 0, rows);
    return;
  }
  Array copies(DType::F32, {parts - 1, n}, allocator, MemoryKind::Transients);
  float* pc = copies.data<float>();
  std::fill(pc, pc + (parts - 1) * n, 0.0f);
  parallel_for(parts, 1, threads, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) add_rows(p == 0 ? d : pc + (p - 1) * n, p * rows / parts, (p + 1) * rows / parts);
  });
  parallel_for(n, kElementwiseGrain, threads, [&](int64_t lo, int64_t hi) {
    for (int64_t p = 1; p < parts; ++p) add_terms(pc + (p - 1) * n + lo, d + lo, true, hi - lo);
  });
}

}  // namespace detail

void reduce_to_operand(const Broadcast& b, int k, const float* g, float* d, int threads, Allocator& allocator) {
  reduce_terms(b, k, d, threads, allocator, [g](const int64_t*, int64_t pos, int64_t, float*) { return g + pos; });
}

namespace {

template <class T>
constexpr bool is_half_v = std::is_same_v<T, Eigen::half> || std::is_same_v<T, Eigen::bfloat16>;

template <class D, class S>
D convert_value(S s) {
  if constexpr (is_half_v<S>) {
    return convert_value<D>(static_cast<float>(s));
  } else if constexpr (is_half_v<D>) {
    return D(static_cast<float>(s));
  } else if constexpr (std::is_floating_point_v<S> && std::is_integral_v<D>) {
    if (std::isnan(s)) return D{0};
    if (s <= static_cast<S>(std::numeric_limits<D>::min())) return std::numeric_limits<D>::min();
    if (s >= static_cast<S>(std::numeric_limits<D>::max())) return std::numeric_limits<D>::max();
    return static_cast<D>(s);
  } else {
    return static_cast<D>(s);
  }
}

template <class S>
bool nonzero(S s) {
  if constexpr (is_half_v<S>) return static_cast<float>(s) != 0.0f;
  else return s != S{0};
}

// fn(T{}) with T the storage type of `t` (bool as uint8_t).
template <class Fn>
void dispatch_storage(DType t, const Node& node, Fn&& fn) {
  switch (t) {
    case DType::F32: fn(float{}); return;
    case DType::F64: fn(double{}); return;
    case DType::F16: fn(Eigen::half{}); return;
    case DType::BF16: fn(Eigen::bfloat16{}); return;
    case DType::I8: fn(int8_t{}); return;
    case DType::I16: fn(int16_t{}); return;
    case DType::I32: fn(int32_t{}); return;
    case DType::I64: fn(int64_t{}); return;
    case DType::U8: case DType::Bool: fn(uint8_t{}); return;
    case DType::U16: fn(uint16_t{}); return;
    case DType::U32: fn(uint32_t{}); return;
    case DType::U64: fn(uint64_t{}); return;
    case DType::Undefined: case DType::String: break;
  }
  kernel_error(node, "no CPU conversion for " + std::string(dtype_name(t)));
}

}  // namespace

void convert(const Node& node, const Array& src, Array& dst, int threads) {
  TO_CHECK(src.numel() == dst.numel());
  dispatch_storage(src.dtype(), node, [&](auto s_tag) {
    using S = decltype(s_tag);
    const S* s = static_cast<const S*>(src.raw());
    if (dst.dtype() == DType::Bool) {
      uint8_t* d = dst.data<uint8_t>();
      parallel_for(src.numel(), kElementwiseGrain, threads, [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) d[i] = nonzero(s[i]);
      });
      return;
    }
    dispatch_storage(dst.dtype(), node, [&](auto d_tag) {
      using D = decltype(d_tag);
      D* d = static_cast<D*>(dst.raw());
      parallel_for(src.numel(), kElementwiseGrain, threads, [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) d[i] = convert_value<D>(s[i]);
      });
    });
  });
}

}  // namespace tensoropt::runtime::cpu
