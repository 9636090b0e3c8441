// Selections and running sums along one axis (graph/ops/norm.cc): ArgMax, ArgMin, TopK, CumSum.
// X viewed as rows along the axis (norm_parts.h): n = the axis's size.
//   ArgMax/ArgMin(X; axis = 0, keepdims, select_last_index) -> int64 index of the first (last)
//     extreme of each row; NaN counts as the extreme, as in PyTorch and numpy. No gradient.
//   TopK(X, K; axis = -1, largest, sorted) -> the K largest (smallest) of each row and their int64
//     indices, ordered from the extreme, equal values by index (as ONNX asks; sorted = 0 allows
//     any order, this one too); NaN counts as the largest. dx = dValues scattered to Indices (the
//     catalogue saves them), 0 elsewhere.
//   CumSum(X, axis; exclusive, reverse) -> running sums along the axis (float32, int64, int32);
//     dx = the running sums of dy in the other direction with the same exclusive flag.
#include <algorithm>
#include <cmath>
#include <string>

#include "launcher/runtime/cpu/norm_parts.h"
#include "launcher/runtime/cpu/util.h"

namespace tensoropt::runtime::cpu {
namespace {

// ---- ArgMax, ArgMin.
template <bool Max>
void arg_forward(const OpCall& c) {
  const Array& x = *c.in[0];
  require_f32(c.node, x, "data");
  int axis = node_axis(c.node, "axis", 0, x.rank());
  bool last = c.node.attr_int("select_last_index", 0) != 0;
  Rows rows = rows_of(x.shape(), axis, axis + 1);
  const float* px = x.data<float>();
  auto* py = c.out[0]->data<int64_t>();
  parallel_for(rows.count(), row_grain(rows.n), c.ctx.threads, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const float* xr = px + rows.start(r);
      int64_t best = 0;
      for (int64_t k = 1; k < rows.n; ++k) {
        float v = xr[k * rows.inner], b = xr[best * rows.inner];
        bool take = std::isnan(v) ? !std::isnan(b) || last
                                  : !std::isnan(b) && ((Max ? v > b : v < b) || (last && v == b));
        if (take) best = k;
      }
      py[r] = best;
    }
  });
}

// ---- TopK.
struct TopKDims {
  int axis;
  bool largest;
};

TopKDims topk_dims(const Node& node, int rank) {
  return {node_axis(node, "axis", -1, rank), node.attr_int("largest", 1) != 0};
}

void topk_forward(const OpCall& c) {
  const Array& x = *c.in[0];
  require_f32(c.node, x, "X");
  TopKDims d = topk_dims(c.node, x.rank());
  Rows rows = rows_of(x.shape(), d.axis, d.axis + 1);
  const int64_t k_out = c.out[0]->dim(d.axis);
  const float* px = x.data<float>();
  float* pv = c.out[0]->data<float>();
  auto* pi = c.out[1] ? c.out[1]->data<int64_t>() : nullptr;
  parallel_for(rows.count(), row_grain(rows.n), c.ctx.threads, [&](int64_t lo, int64_t hi) {
    Array order(DType::I64, {rows.n}, *c.ctx.allocator, MemoryKind::Transients);
    int64_t* idx = order.data<int64_t>();
    for (int64_t r = lo; r < hi; ++r) {
      const float* xr = px + rows.start(r);
      auto before = [&](int64_t a, int64_t b) {  // a strict order: NaN class, value, index
        float va = xr[a * rows.inner], vb = xr[b * rows.inner];
        bool na = std::isnan(va), nb = std::isnan(vb);
        if (na != nb) return d.largest ? na : nb;
        if (!na && va != vb) return d.largest ? va > vb : va < vb;
        return a < b;
      };
      for (int64_t k = 0; k < rows.n; ++k) idx[k] = k;
      std::partial_sort(idx, idx + k_out, idx + rows.n, before);
      int64_t out = (r / rows.inner) * k_out * rows.inner + r % rows.inner;
      for (int64_t k = 0; k < k_out; ++k) {
        pv[out + k * rows.inner] = xr[idx[k] * rows.inner];
        if (pi) pi[out + k * rows.inner] = idx[k];
      }
    }
  });
}

void topk_backward(const GradCall& c) {
  const Shape& xs = c.in_shapes[0];
  TopKDims d = topk_dims(c.node, static_cast<int>(xs.size()));
  Rows rows = rows_of(xs, d.axis, d.axis + 1);
  const Array& indices = *c.out[1];
  const int64_t k_out = indices.dim(d.axis);
  const float* pdy = c.dout[0]->data<float>();
  float* pdx = c.din[0]->data<float>();
  parallel_for(rows.count(), row_grain(rows.n), c.ctx.threads, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      float* dxr = pdx + rows.start(r);
      for (int64_t k = 0; k < rows.n; ++k) dxr[k * rows.inner] = 0;
      int64_t out = (r / rows.inner) * k_out * rows.inner + r % rows.inner;
      for (int64_t k = 0; k < k_out; ++k) dxr[index_at(indices, out + k * rows.inner) * rows.inner] = pdy[out + k * rows.inner];
    }
  });
}

// ---- CumSum.
int cumsum_axis(const Node& node, const Array& axis, int rank) {
  int64_t a = index_at(axis, 0);
  if (a < -rank || a >= rank) kernel_error(node, "axis " + std::to_string(a) + " is out of range for rank " + std::to_string(rank));
  return static_cast<int>(a < 0 ? a + rank : a);
}

// y = running sums of x along `rows` (Acc: the accumulator type).
template <class T, class Acc>
void running_sums(const T* x, T* y, const Rows& rows, bool exclusive, bool reverse, int threads) {
  parallel_for(rows.count(), row_grain(rows.n), threads, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      int64_t s = rows.start(r);
      Acc acc = 0;
      for (int64_t k = 0; k < rows.n; ++k) {
        int64_t at = s + (reverse ? rows.n - 1 - k : k) * rows.inner;
        T v = x[at];
        if (!exclusive) acc += v;
        y[at] = static_cast<T>(acc);
        if (exclusive) acc += v;
      }
    }
  });
}

void cumsum_forward(const OpCall& c) {
  const Array& x = *c.in[0];
  int axis = cumsum_axis(c.node, *c.in[1], x.rank());
  Rows rows = rows_of(x.shape(), axis, axis + 1);
  bool exclusive = c.node.attr_int("exclusive", 0) != 0, reverse = c.node.attr_int("reverse", 0) != 0;
  Array& y = *c.out[0];
  switch (x.dtype()) {
    case DType::F32: running_sums<float, double>(x.data<float>(), y.data<float>(), rows, exclusive, reverse, c.ctx.threads); break;
    case DType::I64: running_sums<int64_t, int64_t>(x.data<int64_t>(), y.data<int64_t>(), rows, exclusive, reverse, c.ctx.threads); break;
    case DType::I32: running_sums<int32_t, int64_t>(x.data<int32_t>(), y.data<int32_t>(), rows, exclusive, reverse, c.ctx.threads); break;
    default: kernel_error(c.node, "x is " + x.str() + "; the CPU kernel takes float32, int64 or int32");
  }
  c.state.saved = {keep_input(c, 1)};
}

void cumsum_backward(const GradCall& c) {
  const Shape& xs = c.in_shapes[0];
  int axis = cumsum_axis(c.node, c.state.saved[0], static_cast<int>(xs.size()));
  Rows rows = rows_of(xs, axis, axis + 1);
  bool exclusive = c.node.attr_int("exclusive", 0) != 0, reverse = c.node.attr_int("reverse", 0) != 0;
  running_sums<float, double>(c.dout[0]->data<float>(), c.din[0]->data<float>(), rows, exclusive, !reverse, c.ctx.threads);
}

}  // namespace

void register_norm_select(KernelTable& table) {
  table["ArgMax"] = {arg_forward<true>, {}};
  table["ArgMin"] = {arg_forward<false>, {}};
  table["TopK"] = {topk_forward, topk_backward};
  table["CumSum"] = {cumsum_forward, cumsum_backward};
}

}  // namespace tensoropt::runtime::cpu
