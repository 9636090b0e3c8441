// CPU kernels of the indexed ops of graph/ops/movement.cc: Gather, GatherElements, ScatterND and
// OneHot. Indices are int64 or int32, negative ones count from the end of their axis; one out of
// range is an InputError naming the node (checked before any thread starts).
//
// Shapes legend: data [outer, A, inner] around the axis, K = index elements, N = output elements.
#include <cstring>
#include <string>
#include <unordered_set>

#include "launcher/runtime/cpu/movement_copy.h"
#include "launcher/runtime/cpu/movement_kernels.h"
#include "launcher/runtime/cpu/util.h"

namespace tensoropt::runtime::cpu {
namespace {

// Index i of `indices` in [0, dim), counting negative ones from the end.
int64_t checked_index(const Node& node, const Array& indices, int64_t i, int64_t dim) {
  int64_t v = index_at(indices, i);
  if (v < -dim || v >= dim) {
    kernel_error(node, "index " + std::to_string(v) + " out of range for an axis of size " + std::to_string(dim));
  }
  return v < 0 ? v + dim : v;
}

std::vector<int64_t> checked_indices(const Node& node, const Array& indices, int64_t dim) {
  std::vector<int64_t> idx(static_cast<size_t>(indices.numel()));
  for (int64_t i = 0; i < indices.numel(); ++i) idx[static_cast<size_t>(i)] = checked_index(node, indices, i, dim);
  return idx;
}

// ---- Gather(data, indices; axis): out[o, k, i] = data[o, indices[k], i], out = [outer, K, inner];
// ddata[o, a, i] = sum over k with indices[k] = a of dout[o, k, i] (an embedding's table
// gradient). Backward zeroes ddata once, then threads split the outer rows, or the inner columns
// when there are few rows, so repeated indices never race.
// A table split along the gathered axis (kernel.h, ShardInfo): indices are checked against the
// whole axis, and those of rows another shard holds become -1 (zeros forward, nothing backward).
std::vector<int64_t> local_indices(const Node& node, const Array& indices, const Array& table, int axis, const ShardInfo* shard) {
  const bool split = shard && shard->global[0][static_cast<size_t>(axis)] != table.dim(axis);
  if (!split) return checked_indices(node, indices, table.dim(axis));
  std::vector<int64_t> idx = checked_indices(node, indices, shard->global[0][static_cast<size_t>(axis)]);
  const int64_t lo = shard->offset[0][static_cast<size_t>(axis)], hi = lo + table.dim(axis);
  for (int64_t& i : idx) i = i >= lo && i < hi ? i - lo : -1;
  return idx;
}

void gather_forward(const OpCall& c) {
  const Array& x = *c.in[0];
  int axis = norm_axis(c.node.attr_int("axis", 0), x.rank());
  std::vector<int64_t> idx = local_indices(c.node, *c.in[1], x, axis, c.shard);
  const int64_t outer = outer_of(x.shape(), axis), inner = inner_of(x.shape(), axis), A = x.dim(axis);
  const auto K = static_cast<int64_t>(idx.size());
  const int64_t row = inner * dtype_size(x.dtype());
  const char* src = static_cast<const char*>(x.raw());
  char* dst = static_cast<char*>(c.out[0]->raw());
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(row, 1));
  parallel_for(outer * K, grain, c.ctx.threads, [&](int64_t lo, int64_t hi) {
    for (int64_t it = lo; it < hi; ++it) {
      int64_t o = it / K, k = it % K;
      if (idx[static_cast<size_t>(k)] < 0) std::memset(dst + it * row, 0, static_cast<size_t>(row));
      else std::memcpy(dst + it * row, src + (o * A + idx[static_cast<size_t>(k)]) * row, static_cast<size_t>(row));
    }
  });
}

void gather_backward(const GradCall& c) {
  Array& dx = *c.din[0];
  int axis = norm_axis(c.node.attr_int("axis", 0), dx.rank());
  std::vector<int64_t> idx = local_indices(c.node, *c.in[1], dx, axis, c.shard);
  const int64_t outer = outer_of(dx.shape(), axis), inner = inner_of(dx.shape(), axis), A = dx.dim(axis);
  const auto K = static_cast<int64_t>(idx.size());
  const float zero = 0;
  fill_elements(dx.raw(), dx.numel(), &zero, sizeof(float), c.ctx.threads);
  const float* dy = c.dout[0]->data<float>();
  float* g = dx.data<float>();
  const int64_t chunks = outer >= c.ctx.threads || inner < 128 ? 1 : c.ctx.threads;
  const int64_t width = (inner + chunks - 1) / chunks;
  parallel_for(outer * chunks, 1, c.ctx.threads, [&](int64_t lo, int64_t hi) {
    for (int64_t it = lo; it < hi; ++it) {
      int64_t o = it / chunks, i0 = (it % chunks) * width, i1 = std::min(inner, i0 + width);
      for (int64_t k = 0; k < K; ++k) {
        if (idx[static_cast<size_t>(k)] < 0) continue;
        float* d = g + (o * A + idx[static_cast<size_t>(k)]) * inner;
        const float* s = dy + (o * K + k) * inner;
        for (int64_t i = i0; i < i1; ++i) d[i] += s[i];
      }
    }
  });
}

// ---- GatherElements(data, indices; axis): out has the indices' shape and
// out[.., j, ..] = data[.., indices[.., j, ..], ..] (j on the axis, the other coordinates kept);
// ddata[.., a, ..] = sum of dout where the index is a. Threads split the positions off the axis,
// which never share a data element.
struct AlongAxis {
  int axis;
  int64_t pre, len, post;            // indices as [pre, len, post] around the axis
  std::vector<int64_t> pre_dims, post_dims, pre_st, post_st;  // data strides of those axes
  int64_t axis_st, dim;              // data stride and size of the axis
};

AlongAxis along_axis(const Node& node, const Shape& data, const Shape& indices) {
  AlongAxis w;
  const int r = static_cast<int>(data.size());
  w.axis = norm_axis(node.attr_int("axis", 0), r);
  std::vector<int64_t> st = strides_of(data);
  for (int a = 0; a < r; ++a) {
    auto k = static_cast<size_t>(a);
    if (a < w.axis) {
      w.pre_dims.push_back(indices[k]);
      w.pre_st.push_back(st[k]);
    } else if (a > w.axis) {
      w.post_dims.push_back(indices[k]);
      w.post_st.push_back(st[k]);
    }
  }
  for (int a = 0; a < r; ++a) {
    if (a != w.axis && indices[static_cast<size_t>(a)] > data[static_cast<size_t>(a)]) {
      kernel_error(node, "indices " + shape_str(indices) + " exceed data " + shape_str(data) + " off the axis");
    }
  }
  w.pre = numel(w.pre_dims);
  w.post = numel(w.post_dims);
  w.len = indices[static_cast<size_t>(w.axis)];
  w.axis_st = st[static_cast<size_t>(w.axis)];
  w.dim = data[static_cast<size_t>(w.axis)];
  return w;
}

// Calls fn(index_offset, data_offset_of_index_0) for every index element, threads split over
// the positions off the axis.
template <typename Fn>
void for_each_along(const AlongAxis& w, int threads, Fn&& fn) {
  const int64_t grain = std::max<int64_t>(1, 4096 / std::max<int64_t>(w.len, 1));
  parallel_for(w.pre * w.post, grain, threads, [&](int64_t lo, int64_t hi) {
    for (int64_t m = lo; m < hi; ++m) {
      const int64_t p = m / w.post, q = m % w.post;
      int64_t base = 0, rest = p;
      for (size_t a = w.pre_dims.size(); a-- > 0; rest /= w.pre_dims[a]) base += rest % w.pre_dims[a] * w.pre_st[a];
      rest = q;
      for (size_t a = w.post_dims.size(); a-- > 0; rest /= w.post_dims[a]) base += rest % w.post_dims[a] * w.post_st[a];
      for (int64_t j = 0; j < w.len; ++j) fn((p * w.len + j) * w.post + q, base);
    }
  });
}

void gather_elements_forward(const OpCall& c) {
  const Array& x = *c.in[0];
  const Array& ind = *c.in[1];
  AlongAxis w = along_axis(c.node, x.shape(), ind.shape());
  std::vector<int64_t> idx = checked_indices(c.node, ind, w.dim);
  by_element_size(dtype_size(x.dtype()), [&](auto t) {
    using T = decltype(t);
    const T* s = static_cast<const T*>(x.raw());
    T* d = static_cast<T*>(c.out[0]->raw());
    for_each_along(w, c.ctx.threads, [&](int64_t k, int64_t base) {
      d[k] = s[base + idx[static_cast<size_t>(k)] * w.axis_st];
    });
  });
}

void gather_elements_backward(const GradCall& c) {
  Array& dx = *c.din[0];
  const Array& ind = *c.in[1];
  AlongAxis w = along_axis(c.node, dx.shape(), ind.shape());
  std::vector<int64_t> idx = checked_indices(c.node, ind, w.dim);
  const float zero = 0;
  fill_elements(dx.raw(), dx.numel(), &zero, sizeof(float), c.ctx.threads);
  const float* dy = c.dout[0]->data<float>();
  float* g = dx.data<float>();
  for_each_along(w, c.ctx.threads, [&](int64_t k, int64_t base) {
    g[base + idx[static_cast<size_t>(k)] * w.axis_st] += dy[k];
  });
}

// ---- ScatterND(data, indices, updates; reduction): indices [.., q] name T = K / q slices of data
// [A_0 .. A_q-1, S] (S elements each); out = data with slice t replaced by updates[t] (reduction
// none, the last write wins), or combined with it (add, mul), tuple by tuple in order.
// Backward, none: ddata = dout with the written slices zeroed, dupdates[t] = dout[slice t] for
// the last write of each slice and 0 for the overwritten ones; add: ddata = dout,
// dupdates[t] = dout[slice t]; mul is refused (its gradient needs data and updates, which
// nothing saves). The catalogue saves nothing for ScatterND, so forward keeps the indices.
struct Slices {
  std::vector<int64_t> base;  // per tuple: the slice's first element
  int64_t size;               // S
};

Slices slices_of(const Node& node, const Shape& data, const Array& indices) {
  const int64_t q = indices.shape().back();
  Slices s{{}, numel(Shape(data.begin() + q, data.end()))};
  for (int64_t t = 0; t < indices.numel() / q; ++t) {
    int64_t b = 0;
    for (int64_t a = 0; a < q; ++a) {
      const int64_t dim = data[static_cast<size_t>(a)];
      b = b * dim + checked_index(node, indices, t * q + a, dim);
    }
    s.base.push_back(b * s.size);
  }
  return s;
}

template <typename T>
void scatter_combine(const Slices& s, const T* updates, T* out, bool add) {
  for (size_t t = 0; t < s.base.size(); ++t) {
    T* d = out + s.base[t];
    const T* u = updates + static_cast<int64_t>(t) * s.size;
    for (int64_t e = 0; e < s.size; ++e) d[e] = add ? d[e] + u[e] : d[e] * u[e];
  }
}

void scatter_nd_forward(const OpCall& c) {
  keep_inputs(c, {1});
  const Array& x = *c.in[0];
  const Array& upd = *c.in[2];
  Array& y = *c.out[0];
  const std::string red = c.node.attr_string("reduction", "none");
  Slices s = slices_of(c.node, x.shape(), *c.in[1]);
  copy_rows(x.raw(), 0, y.raw(), 0, 1, x.bytes(), c.ctx.threads);
  if (red == "none") {
    const int64_t es = dtype_size(x.dtype());
    for (size_t t = 0; t < s.base.size(); ++t) {
      const char* u = static_cast<const char*>(upd.raw()) + static_cast<int64_t>(t) * s.size * es;
      std::memcpy(static_cast<char*>(y.raw()) + s.base[t] * es, u, static_cast<size_t>(s.size * es));
    }
    return;
  }
  if (red != "add" && red != "mul") kernel_error(c.node, "reduction '" + red + "' is not supported");
  const bool add = red == "add";
  switch (x.dtype()) {
    case DType::F32: scatter_combine(s, upd.data<float>(), y.data<float>(), add); break;
    case DType::F64: scatter_combine(s, upd.data<double>(), y.data<double>(), add); break;
    case DType::I64: scatter_combine(s, upd.data<int64_t>(), y.data<int64_t>(), add); break;
    case DType::I32: scatter_combine(s, upd.data<int32_t>(), y.data<int32_t>(), add); break;
    default: kernel_error(c.node, "reduction '" + red + "' of " + std::string(dtype_name(x.dtype())) + " is not supported");
  }
}

void scatter_nd_backward(const GradCall& c) {
  const std::string red = c.node.attr_string("reduction", "none");
  if (red != "none" && red != "add") kernel_error(c.node, "no gradient through ScatterND with reduction '" + red + "'");
  const Array& dy = *c.dout[0];
  Slices s = slices_of(c.node, dy.shape(), *kept(c, 0));
  const auto bytes = static_cast<size_t>(s.size) * sizeof(float);
  if (c.din[0]) {
    float* dx = c.din[0]->data<float>();
    copy_rows(dy.raw(), 0, dx, 0, 1, dy.bytes(), c.ctx.threads);
    if (red == "none") {
      for (int64_t b : s.base) std::memset(dx + b, 0, bytes);
    }
  }
  if (c.din[2]) {
    float* du = c.din[2]->data<float>();
    std::unordered_set<int64_t> written;  // slices a later tuple overwrites (reduction none)
    for (size_t t = s.base.size(); t-- > 0;) {
      float* d = du + static_cast<int64_t>(t) * s.size;
      bool overwritten = red == "none" && !written.insert(s.base[t]).second;
      if (overwritten) std::memset(d, 0, bytes);
      else std::memcpy(d, dy.data<float>() + s.base[t], bytes);
    }
  }
}

// ---- OneHot(indices, depth, values; axis): out = indices' shape with an axis of size depth
// inserted at `axis` (default -1, last); out[.., d, ..] = values[1] where d = the index (negative
// ones count from depth), values[0] elsewhere: an index outside [-depth, depth) gives a row of
// values[0]. Float indices are truncated to integers. No gradient.
int64_t index_value(const Node& node, const Array& a, int64_t i) {
  switch (a.dtype()) {
    case DType::I64: case DType::I32: return index_at(a, i);
    case DType::F32: return static_cast<int64_t>(a.data<float>()[i]);
    case DType::F64: return static_cast<int64_t>(a.data<double>()[i]);
    default: kernel_error(node, "indices of type " + std::string(dtype_name(a.dtype())) + " are not supported");
  }
}

void one_hot_forward(const OpCall& c) {
  const Array& ind = *c.in[0];
  const Array& values = *c.in[2];
  Array& y = *c.out[0];
  int axis = norm_axis(c.node.attr_int("axis", -1), y.rank());
  const int64_t depth = y.dim(axis), post = inner_of(y.shape(), axis), es = dtype_size(y.dtype());
  const char* off_on = static_cast<const char*>(values.raw());
  fill_elements(y.raw(), y.numel(), off_on, es, c.ctx.threads);
  char* d = static_cast<char*>(y.raw());
  for (int64_t e = 0; e < ind.numel(); ++e) {
    int64_t v = index_value(c.node, ind, e);
    if (v < 0) v += depth;
    if (v < 0 || v >= depth) continue;
    int64_t p = e / post, q = e % post;
    std::memcpy(d + ((p * depth + v) * post + q) * es, off_on + es, static_cast<size_t>(es));
  }
}

}  // namespace

void register_movement_gather(KernelTable& table) {
  table["Gather"] = {gather_forward, gather_backward};
  table["GatherElements"] = {gather_elements_forward, gather_elements_backward};
  table["ScatterND"] = {scatter_nd_forward, scatter_nd_backward};
  table["OneHot"] = {one_hot_forward, {}};
}

}  // namespace tensoropt::runtime::cpu
