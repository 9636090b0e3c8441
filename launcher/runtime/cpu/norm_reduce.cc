// Reductions (graph/ops/norm.cc): ReduceSum, ReduceMean, ReduceProd, ReduceMax, ReduceMin,
// ReduceL1, ReduceL2, ReduceSumSquare, ReduceLogSumExp over the axes the catalogue reads (the
// `axes` attribute, or the constant second input; none: all axes, or none with
// noop_with_empty_axes). Output element o reduces the group G(o) of the R input elements that share
// its kept coordinates; keepdims only changes the output's shape, never o.
//   Sum: s = sum x             dx = dy
//   Mean: s / R                dx = dy / R
//   SumSquare: sum x^2         dx = 2 x dy
//   L1: sum |x|                dx = sign(x) dy
//   L2: sqrt(sum x^2)          dx = x / y dy (0 where y = 0)
//   LogSumExp: m + log(sum exp(x - m)), m = max x      dx = exp(x - y) dy
//   Max, Min: y                dx = dy / t where x = y (t ties share it, as torch.amax), else 0
//   Prod: prod x               dx = prod of the other elements * dy (exact with zeros in the group)
// Reducing no axis (noop_with_empty_axes) makes every group one element: y = f(x) elementwise.
// Sums accumulate in double. Backward keeps a view of the constant axes input when there is one
// (keep_input); Sum and Mean read nothing else, the others X and Y (the catalogue saves them).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "launcher/runtime/cpu/norm_parts.h"
#include "launcher/runtime/cpu/util.h"

namespace tensoropt::runtime::cpu {
namespace {

enum class Op : uint8_t { Sum, Mean, Prod, Max, Min, L1, L2, SumSquare, LogSumExp };

// Reduced axes, exactly as the catalogue's reduced_axes reads them.
std::vector<bool> reduced_axes(const Node& node, const Array* axes_input, int rank) {
  std::vector<int64_t> axes;
  if (auto a = node.attr_ints("axes")) axes = *a;
  else if (axes_input) {
    for (int64_t k = 0; k < axes_input->numel(); ++k) axes.push_back(index_at(*axes_input, k));
  }
  std::vector<bool> red(static_cast<size_t>(rank), axes.empty() && node.attr_int("noop_with_empty_axes", 0) == 0);
  for (int64_t a : axes) {
    if (a < -rank || a >= rank) kernel_error(node, "axis " + std::to_string(a) + " is out of range for rank " + std::to_string(rank));
    red[static_cast<size_t>(a < 0 ? a + rank : a)] = true;
  }
  return red;
}

// The groups of a reduction. When the reduced axes (ignoring size-1 axes) are one run, group o is
// row o of rows_of (element j at start(o) + j * inner); otherwise element j is at base(o) + table[j]
// (a workspace of R offsets).
struct Groups {
  Rows rows;
  Array table;                                   // int64 offsets of a group's elements, when not one run
  std::vector<int64_t> kept_dims, kept_strides;  // to find base(o), when not one run
  int64_t count() const { return rows.count(); }
  int64_t size() const { return rows.n; }
  int64_t base(int64_t o) const {
    if (!table.defined()) return rows.start(o);
    int64_t b = 0;
    for (size_t a = kept_dims.size(); a-- > 0;) {
      b += (o % kept_dims[a]) * kept_strides[a];
      o /= kept_dims[a];
    }
    return b;
  }
};

Groups groups_of(const Shape& x, const std::vector<bool>& red, Allocator& alloc) {
  Groups g;
  int first = -1, last = -1;  // the reduced run, over axes of size > 1
  bool one_run = true;
  for (int a = 0; a < static_cast<int>(x.size()); ++a) {
    if (x[static_cast<size_t>(a)] == 1 || !red[static_cast<size_t>(a)]) continue;
    if (first < 0) first = a;
    for (int b = last + 1; last >= 0 && b < a; ++b) one_run = one_run && x[static_cast<size_t>(b)] == 1;
    last = a;
  }
  if (first < 0) {  // nothing reduced: groups of one element
    g.rows = rows_of(x, static_cast<int>(x.size()), static_cast<int>(x.size()));
    return g;
  }
  if (one_run) {
    g.rows = rows_of(x, first, last + 1);
    return g;
  }
  std::vector<int64_t> st = strides_of(x), red_dims, red_strides;
  g.rows.n = 1;
  g.rows.outer = 1;
  for (size_t a = 0; a < x.size(); ++a) {
    if (red[a]) {
      red_dims.push_back(x[a]);
      red_strides.push_back(st[a]);
      g.rows.n *= x[a];
    } else {
      g.kept_dims.push_back(x[a]);
      g.kept_strides.push_back(st[a]);
      g.rows.outer *= x[a];
    }
  }
  g.table = Array(DType::I64, {g.rows.n}, alloc, MemoryKind::Transients);
  auto* table = g.table.data<int64_t>();
  for (int64_t j = 0; j < g.rows.n; ++j) {
    int64_t k = j, off = 0;
    for (size_t a = red_dims.size(); a-- > 0;) {
      off += (k % red_dims[a]) * red_strides[a];
      k /= red_dims[a];
    }
    table[j] = off;
  }
  return g;
}

// Calls body(o, base, off) for every group, in parallel; off(j) is element j's offset from base.
template <class Body>
void for_groups(const Groups& g, int threads, Body&& body) {
  auto run = [&](auto off) {
    parallel_for(g.count(), row_grain(g.size()), threads, [&](int64_t lo, int64_t hi) {
      for (int64_t o = lo; o < hi; ++o) body(o, g.base(o), off);
    });
  };
  if (g.table.defined()) run([t = g.table.data<int64_t>()](int64_t j) { return t[j]; });
  else if (g.rows.inner == 1) run([](int64_t j) { return j; });
  else run([s = g.rows.inner](int64_t j) { return j * s; });
}

template <Op K>
void reduce_forward(const OpCall& c) {
  const Array& x = *c.in[0];
  require_f32(c.node, x, "data");
  const Array* axes = c.in.size() > 1 ? c.in[1] : nullptr;
  const std::vector<bool> red = reduced_axes(c.node, axes, x.rank());
  Groups g = groups_of(x.shape(), red, *c.ctx.allocator);
  const float* px = x.data<float>();
  float* py = c.out[0]->data<float>();
  const int64_t R = g.size(), count = mean_count(c.shard, 0, x.shape(), red);  // a mean divides by the whole count
  for_groups(g, c.ctx.threads, [&](int64_t o, int64_t base, auto off) {
    const float* xg = px + base;
    double acc = 0;
    if constexpr (K == Op::Max || K == Op::Min || K == Op::LogSumExp) {
      float m = K == Op::Min ? std::numeric_limits<float>::infinity() : -std::numeric_limits<float>::infinity();
      for (int64_t j = 0; j < R; ++j) m = K == Op::Min ? std::min(m, xg[off(j)]) : std::max(m, xg[off(j)]);
      if constexpr (K == Op::LogSumExp) {
        if (std::isinf(m)) {
          acc = m;  // all -inf: -inf; any +inf: +inf
        } else {
          for (int64_t j = 0; j < R; ++j) acc += std::exp(static_cast<double>(xg[off(j)]) - m);
          acc = m + std::log(acc);
        }
      } else {
        acc = m;
      }
    } else if constexpr (K == Op::Prod) {
      acc = 1;
      for (int64_t j = 0; j < R; ++j) acc *= xg[off(j)];
    } else {
      for (int64_t j = 0; j < R; ++j) {
        double v = xg[off(j)];
        acc += K == Op::SumSquare || K == Op::L2 ? v * v : K == Op::L1 ? std::abs(v) : v;
      }
      if (K == Op::Mean) acc /= static_cast<double>(count);
      if (K == Op::L2) acc = std::sqrt(acc);
    }
    py[o] = static_cast<float>(acc);
  });
  if (axes) c.state.saved = {keep_input(c, 1)};
}

// dx of one element for the ops whose gradient needs only x, y and dy (R: what a mean divides by).
template <Op K>
float local_grad(float x, float y, float dy, int64_t R) {
  if constexpr (K == Op::Mean) return dy / static_cast<float>(R);
  if constexpr (K == Op::SumSquare) return 2 * x * dy;
  if constexpr (K == Op::L1) return static_cast<float>((x > 0) - (x < 0)) * dy;
  if constexpr (K == Op::L2) return y == 0 ? 0.0f : x / y * dy;
  if constexpr (K == Op::LogSumExp) return std::exp(x - y) * dy;
  return dy;  // Sum
}

template <Op K>
void reduce_backward(const GradCall& c) {
  const Shape& xs = c.in_shapes[0];
  const Array* axes = c.state.saved.empty() ? nullptr : &c.state.saved[0];
  const std::vector<bool> red = reduced_axes(c.node, axes, static_cast<int>(xs.size()));
  Groups g = groups_of(xs, red, *c.ctx.allocator);
  const float* pdy = c.dout[0]->data<float>();
  float* pdx = c.din[0]->data<float>();
  const float* px = K == Op::Sum || K == Op::Mean ? nullptr : c.in[0]->data<float>();
  const float* py = K == Op::Sum || K == Op::Mean ? nullptr : c.out[0]->data<float>();
  // R: a group's local size; N: what a mean divides by (the whole count when an axis is split).
  const int64_t R = g.size(), N = K == Op::Mean ? mean_count(c.shard, 0, xs, red) : R;
  constexpr bool local = K != Op::Max && K != Op::Min && K != Op::Prod;
  if (local && !g.table.defined() && g.rows.inner > 1) {
    // Strided groups: walk X in memory order, lines of `inner` elements, element i of line
    // (outer o, j) belonging to group o * inner + i.
    const Rows& rw = g.rows;
    parallel_for(rw.outer * rw.n, row_grain(rw.inner), c.ctx.threads, [&](int64_t lo, int64_t hi) {
      for (int64_t line = lo; line < hi; ++line) {
        int64_t o0 = (line / rw.n) * rw.inner, k0 = line * rw.inner;
        for (int64_t i = 0; i < rw.inner; ++i) {
          pdx[k0 + i] = local_grad<K>(px ? px[k0 + i] : 0.0f, py ? py[o0 + i] : 0.0f, pdy[o0 + i], N);
        }
      }
    });
    return;
  }
  for_groups(g, c.ctx.threads, [&](int64_t o, int64_t base, auto off) {
    float* dxg = pdx + base;
    [[maybe_unused]] const float* xg = px ? px + base : nullptr;
    const float dy = pdy[o];
    if constexpr (K == Op::Max || K == Op::Min) {
      int64_t ties = 0;
      for (int64_t j = 0; j < R; ++j) ties += xg[off(j)] == py[o];
      float share = dy / static_cast<float>(std::max<int64_t>(ties, 1));
      for (int64_t j = 0; j < R; ++j) dxg[off(j)] = xg[off(j)] == py[o] ? share : 0.0f;
    } else if constexpr (K == Op::Prod) {
      int64_t zeros = 0, zero_at = -1;
      double rest = 1;  // product of the non-zero elements
      for (int64_t j = 0; j < R; ++j) {
        float v = xg[off(j)];
        if (v == 0) {
          ++zeros;
          zero_at = j;
        } else {
          rest *= v;
        }
      }
      for (int64_t j = 0; j < R; ++j) {
        float v = xg[off(j)];
        double others = zeros == 0 ? rest / v : zeros == 1 && j == zero_at ? rest : 0.0;
        dxg[off(j)] = static_cast<float>(others * dy);
      }
    } else {
      const float y = py ? py[o] : 0.0f;
      for (int64_t j = 0; j < R; ++j) dxg[off(j)] = local_grad<K>(xg ? xg[off(j)] : 0.0f, y, dy, N);
    }
  });
}

}  // namespace

void register_norm_reduce(KernelTable& table) {
  table["ReduceSum"] = {reduce_forward<Op::Sum>, reduce_backward<Op::Sum>};
  table["ReduceMean"] = {reduce_forward<Op::Mean>, reduce_backward<Op::Mean>};
  table["ReduceProd"] = {reduce_forward<Op::Prod>, reduce_backward<Op::Prod>};
  table["ReduceMax"] = {reduce_forward<Op::Max>, reduce_backward<Op::Max>};
  table["ReduceMin"] = {reduce_forward<Op::Min>, reduce_backward<Op::Min>};
  table["ReduceL1"] = {reduce_forward<Op::L1>, reduce_backward<Op::L1>};
  table["ReduceL2"] = {reduce_forward<Op::L2>, reduce_backward<Op::L2>};
  table["ReduceSumSquare"] = {reduce_forward<Op::SumSquare>, reduce_backward<Op::SumSquare>};
  table["ReduceLogSumExp"] = {reduce_forward<Op::LogSumExp>, reduce_backward<Op::LogSumExp>};
}

}  // namespace tensoropt::runtime::cpu
