// How the elementwise kernels (elementwise*.cc) loop: dtype dispatch, iteration over a broadcast
// output in contiguous segments, the sum of per-element gradient terms back onto a broadcast
// operand, and dtype conversion (Cast). Family-private: only elementwise*.cc include it.
//
// Inner loops carry `#pragma omp simd` (at -O2 GCC vectorises nothing else) and make their float
// selects with pick(): GCC sinks arithmetic into the arm of a ?: that uses it and then, under
// -ftrapping-math, will not if-convert it, leaving a branch that mispredicts on random signs.
//
// Broadcast (numpy rules, operands aligned right): the output's axes are collapsed (size-1 axes
// dropped, neighbours merged wherever every operand's strides run on) so the output is `rows`
// rows of `inner` contiguous elements, and within a row each operand is read either contiguously
// (step 1) or as one repeated element (step 0). Segments never cross a row, so the inner loops
// never divide: [B,T,C] + [C] is rows B·T, inner C, the bias contiguous; [B,H,T,T] masked by
// [1,1,T,T] is rows B·H, inner T·T; [B,C,H,W] · [C,1,1] is rows B·C, inner H·W, the scale repeated.
//
// Thread-safety: a Broadcast is immutable; segments() may run on several threads at once.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "launcher/runtime/allocator.h"
#include "launcher/runtime/array.h"
#include "launcher/runtime/cpu/util.h"
#include "launcher/runtime/kernel.h"

namespace tensoropt::runtime::cpu {

// Elements per thread chunk: below this an op runs on one thread.
constexpr int64_t kElementwiseGrain = 1 << 14;
// Gradient terms computed at a time before they are summed (a stack buffer).
constexpr int64_t kTermBlock = 1024;

// Calls fn(T{}) with T the C++ element type of `t` among float, double, int64_t, int32_t (and
// uint8_t for bool and uint8 when kWithBytes); any other dtype is a kernel_error naming the node.
template <bool kWithBytes, class Fn>
void dispatch_numeric(DType t, const Node& node, Fn&& fn) {
  switch (t) {
    case DType::F32: fn(float{}); return;
    case DType::F64: fn(double{}); return;
    case DType::I64: fn(int64_t{}); return;
    case DType::I32: fn(int32_t{}); return;
    case DType::Bool: case DType::U8:
      if constexpr (kWithBytes) {
        fn(uint8_t{});
        return;
      }
      break;
    default: break;
  }
  kernel_error(node, "no CPU kernel for " + std::string(dtype_name(t)) + " operands");
}

// c ? a : b with both sides evaluated, as a bitwise blend for floats, so that it vectorises.
// Combine conditions with & and |, not && and || (short-circuits are branches too).
template <class T>
inline T pick(bool c, T a, T b) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    using Bits = std::conditional_t<std::is_same_v<T, float>, uint32_t, uint64_t>;
    const Bits m = Bits{0} - static_cast<Bits>(c);
    return std::bit_cast<T>(static_cast<Bits>((std::bit_cast<Bits>(a) & m) | (std::bit_cast<Bits>(b) & ~m)));
  } else {
    return c ? a : b;
  }
}


class Broadcast {
 public:
  // REQUIRES: every operand broadcasts to `out`.
  Broadcast(const std::vector<Shape>& operands, const Shape& out);

  int operands() const { return static_cast<int>(step_.size()); }
  int64_t numel() const { return numel_; }
  int64_t rows() const { return inner_ == 0 ? 0 : numel_ / inner_; }
  int64_t inner() const { return inner_; }
  // Operand k is read element by element within a row (else one element repeats along it).
  bool contiguous(int k) const { return step_[static_cast<size_t>(k)] == 1; }
  // Operand k has as many elements as the output (it is the output's shape up to size-1 axes).
  bool full(int k) const { return operand_numel_[static_cast<size_t>(k)] == numel_; }
  // Several rows read the same elements of operand k.
  bool shared_rows(int k) const;
  int64_t operand_numel(int k) const { return operand_numel_[static_cast<size_t>(k)]; }

  // Calls fn(off, pos, len) for consecutive segments covering output elements [lo, hi), each
  // inside one row: output elements [pos, pos + len), operand k from element off[k] on.
  template <class Fn>
  void segments(int64_t lo, int64_t hi, Fn&& fn) const;

 private:
  Shape outer_;                               // collapsed outer axes (rows = their product)
  std::vector<std::vector<int64_t>> stride_;  // [operand][outer axis], 0 where broadcast
  std::vector<int64_t> step_;                 // [operand]: 1 or 0 within a row
  std::vector<int64_t> operand_numel_;
  int64_t inner_ = 1, numel_ = 0;
};

// Runs fn(off, pos, len) over every segment of `b`, on up to `threads` threads.
template <class Fn>
void for_each_segment(const Broadcast& b, int threads, Fn&& fn) {
  parallel_for(b.numel(), kElementwiseGrain, threads, [&](int64_t lo, int64_t hi) { b.segments(lo, hi, fn); });
}

// d[operand k's shape] = the terms of every output element summed over the axes operand k is
// broadcast along (overwrites d). terms(off, pos, len, buf) gives the terms of output elements
// [pos, pos + len), operand j read from element off[j] on: a pointer to them, into a stored
// gradient or into buf after writing them there (len <= kTermBlock, except when operand k is
// full and buf is d + pos itself). Rows that share operand elements sum into per-thread
// Transients copies from `allocator`, added up at the end: no races, no output-sized workspace.
template <class Terms>
void reduce_terms(const Broadcast& b, int k, float* d, int threads, Allocator& allocator, const Terms& terms);

// reduce_terms of a stored gradient g [output shape].
void reduce_to_operand(const Broadcast& b, int k, const float* g, float* d, int threads, Allocator& allocator);

// y = op(a, b) broadcast, a and b of type T, y of type TY (y may be a itself: the variadic ops
// accumulate in place).
template <class T, class TY, class Op>
void apply2(const Array& a, const Array& b, Array& y, int threads, const Op& op);

// dx = f(a, b, dy) at every output element, summed onto the shape of bc's operand k (0: a, 1: b;
// overwrites dx). `bc` has two operands, a and b, as the forward broadcast them; a null one (a
// tensor backward was not given because f does not read it) reads as T{}.
template <class TA, class TB, class F>
void operand_gradient(const GradCall& c, Array& dx, int k, const Broadcast& bc, const TA* a, const TB* b, F f);

// dst = src converted element by element (same shape): integers wrap as C++ converts them; a float
// into an integer truncates toward zero, NaN gives 0 and the range saturates; into bool, nonzero
// (NaN included) gives 1. float16 and bfloat16 round to nearest even. Unsupported dtypes (string)
// are a kernel_error naming the node.
void convert(const Node& node, const Array& src, Array& dst, int threads);

template <class Fn>
void Broadcast::segments(int64_t lo, int64_t hi, Fn&& fn) const {
  const size_t m = step_.size(), r = outer_.size();
  std::vector<int64_t> idx(r, 0), base(m, 0), off(m, 0);
  int64_t row = lo / inner_, col = lo % inner_;
  for (size_t a = r; a-- > 0;) {
    idx[a] = row % outer_[a];
    row /= outer_[a];
    for (size_t k = 0; k < m; ++k) base[k] += idx[a] * stride_[k][a];
  }
  for (int64_t pos = lo; pos < hi;) {
    int64_t len = std::min(inner_ - col, hi - pos);
    for (size_t k = 0; k < m; ++k) off[k] = base[k] + col * step_[k];
    fn(static_cast<const int64_t*>(off.data()), pos, len);
    pos += len;
    col = 0;
    for (size_t a = r; a-- > 0;) {
      ++idx[a];
      for (size_t k = 0; k < m; ++k) base[k] += stride_[k][a];
      if (idx[a] < outer_[a]) break;
      for (size_t k = 0; k < m; ++k) base[k] -= stride_[k][a] * outer_[a];
      idx[a] = 0;
    }
  }
}

namespace detail {
// y[i] = op(a[i·sa], b[i·sb]) over one segment of apply2, the steps known at compile time.
template <bool SA, bool SB, class T, class TY, class Op>
void apply_segment(const T* a, const T* b, TY* y, int64_t n, const Op& op) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = op(a[SA ? i : 0], b[SB ? i : 0]);
}

// t[i] = f(a[i·sa], b[i·sb], dy[i]): a block of operand_gradient's terms.
template <bool SA, bool SB, class TA, class TB, class F>
void gradient_segment(const TA* a, const TB* b, const float* dy, float* t, int64_t n, const F& f) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) t[i] = f(a[SA ? i : 0], b[SB ? i : 0], dy[i]);
}

// d[0, len) += t (contiguous) or d[0] += sum of t.
void add_terms(const float* t, float* d, bool contiguous, int64_t len);

// Calls add_rows(target, r0, r1) over row ranges covering every row of `b` once, with target d
// (zeroed first) or a per-thread copy that is added into d afterwards.
void split_rows(const Broadcast& b, int k, float* d, int threads, Allocator& allocator,
                const std::function<void(float* target, int64_t r0, int64_t r1)>& add_rows);
}  // namespace detail

template <class Terms>
void reduce_terms(const Broadcast& b, int k, float* d, int threads, Allocator& allocator, const Terms& terms) {
  if (b.full(k)) {
    for_each_segment(b, threads, [&](const int64_t* off, int64_t pos, int64_t len) {
      const float* t = terms(off, pos, len, d + pos);
      if (t != d + pos) std::copy(t, t + len, d + pos);
    });
    return;
  }
  const bool contiguous = b.contiguous(k);
  detail::split_rows(b, k, d, threads, allocator, [&](float* target, int64_t r0, int64_t r1) {
    float buf[kTermBlock];
    std::vector<int64_t> block(static_cast<size_t>(b.operands()));
    b.segments(r0 * b.inner(), r1 * b.inner(), [&](const int64_t* off, int64_t pos, int64_t len) {
      for (int64_t s = 0; s < len; s += kTermBlock) {
        const int64_t m = std::min(kTermBlock, len - s);
        for (int j = 0; j < b.operands(); ++j) block[static_cast<size_t>(j)] = off[j] + (b.contiguous(j) ? s : 0);
        detail::add_terms(terms(block.data(), pos + s, m, buf), target + block[static_cast<size_t>(k)], contiguous, m);
      }
    });
  });
}

template <class T, class TY, class Op>
void apply2(const Array& a, const Array& b, Array& y, int threads, const Op& op) {
  Broadcast bc({a.shape(), b.shape()}, y.shape());
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  TY* py = y.data<TY>();
  for_each_segment(bc, threads, [&](const int64_t* off, int64_t pos, int64_t len) {
    const T* sa = pa + off[0];
    const T* sb = pb + off[1];
    if (bc.contiguous(0) && bc.contiguous(1)) detail::apply_segment<true, true>(sa, sb, py + pos, len, op);
    else if (bc.contiguous(0)) detail::apply_segment<true, false>(sa, sb, py + pos, len, op);
    else if (bc.contiguous(1)) detail::apply_segment<false, true>(sa, sb, py + pos, len, op);
    else detail::apply_segment<false, false>(sa, sb, py + pos, len, op);
  });
}

template <class TA, class TB, class F>
void operand_gradient(const GradCall& c, Array& dx, int k, const Broadcast& bc, const TA* a, const TB* b, F f) {
  const float* dy = c.dout[0]->data<float>();
  const TA zero_a{};
  const TB zero_b{};
  reduce_terms(bc, k, dx.data<float>(), c.ctx.threads, *c.ctx.allocator,
               [&](const int64_t* off, int64_t pos, int64_t len, float* t) -> const float* {
                 const TA* pa = a ? a + off[0] : &zero_a;
                 const TB* pb = b ? b + off[1] : &zero_b;
                 const bool sa = a && bc.contiguous(0), sb = b && bc.contiguous(1);
                 if (sa && sb) detail::gradient_segment<true, true>(pa, pb, dy + pos, t, len, f);
                 else if (sa) detail::gradient_segment<true, false>(pa, pb, dy + pos, t, len, f);
                 else if (sb) detail::gradient_segment<false, true>(pa, pb, dy + pos, t, len, f);
                 else detail::gradient_segment<false, false>(pa, pb, dy + pos, t, len, f);
                 return t;
               });
}

}  // namespace tensoropt::runtime::cpu
