// CUDA kernels of the indexed ops of graph/ops/movement.cc, host side, as cpu/movement_gather.cc:
// Gather, GatherElements, ScatterND and OneHot. Indices are int64 or int32, negative ones count
// from the end of their axis; Gather, GatherElements and ScatterND download them to check the
// range (an InputError naming the node, as the CPU kernel) and to build their lists, and every
// gradient is a segmented sum in index order (movement.h): deterministic, no atomics, the CPU
// kernels' order of additions.
//
// Shapes legend: data [outer, A, inner] around the axis, K = index elements, N = output elements.
#include <map>
#include <set>
#include <string>

#include "launcher/runtime/cpu/movement_kernels.h"
#include "launcher/runtime/cuda/device/movement.h"
#include "launcher/runtime/cuda/movement.h"

namespace tensoropt::runtime::cuda {
namespace {

using cpu::inner_of;
using cpu::kept;
using cpu::keep_inputs;
using cpu::norm_axis;
using cpu::outer_of;

// The indices in [0, dim), negative ones counted from the end; kernel_error for one out of range.
std::vector<int64_t> checked_indices(CudaBackend& be, const Node& node, const Array& indices, int64_t dim) {
  std::vector<int64_t> idx = host_ints(be, &indices);
  for (int64_t& v : idx) {
    if (v < -dim || v >= dim) {
      kernel_error(node, "index " + std::to_string(v) + " out of range for an axis of size " + std::to_string(dim));
    }
    if (v < 0) v += dim;
  }
  return idx;
}

// ---- Gather(data, indices; axis): out[o, k, i] = data[o, indices[k], i]; ddata[o, a, i] = the sum
// over k with indices[k] = a of dout[o, k, i], in k order (a segmented sum over the rows a).
// A table split along the gathered axis (kernel.h, ShardInfo): indices are checked against the
// whole axis, and those of rows another shard holds become -1 (zeros forward, nothing backward).
std::vector<int64_t> local_indices(CudaBackend& be, const Node& node, const Array& indices, const Shape& table, int axis,
                                   const ShardInfo* shard) {
  const auto a = static_cast<size_t>(axis);
  const bool split = shard && shard->global[0][a] != table[a];
  std::vector<int64_t> idx = checked_indices(be, node, indices, split ? shard->global[0][a] : table[a]);
  if (!split) return idx;
  const int64_t lo = shard->offset[0][a], hi = lo + table[a];
  for (int64_t& i : idx) i = i >= lo && i < hi ? i - lo : -1;
  return idx;
}

void gather_forward(CudaBackend& be, const OpCall& c) {
  Array holder;
  const Array& x = as_dtype(be, c.ctx, *c.in[0], c.out[0]->dtype(), holder);
  const int axis = norm_axis(c.node.attr_int("axis", 0), x.rank());
  std::vector<int64_t> idx = local_indices(be, c.node, *c.in[1], x.shape(), axis, c.shard);
  const int64_t outer = outer_of(x.shape(), axis), inner = inner_of(x.shape(), axis), A = x.dim(axis);
  std::vector<GatherAxis> axes = {GatherAxis::plain(outer, A * inner), GatherAxis::indexed(std::move(idx), inner),
                                  GatherAxis::plain(inner, 1)};
  gather(be, c.ctx, c.node, std::move(axes), x.raw(), c.out[0]->raw(), dtype_size(x.dtype()));
}

void gather_backward(CudaBackend& be, const GradCall& c) {
  Array& dx = *c.din[0];
  const int dy_dtype = require_float(c.node, *c.dout[0], "the output gradient");
  const int axis = norm_axis(c.node.attr_int("axis", 0), dx.rank());
  Segments s;
  s.target = local_indices(be, c.node, *c.in[1], dx.shape(), axis, c.shard);
  const auto K = static_cast<int64_t>(s.target.size());
  for (int64_t k = 0; k < K; ++k) s.src_row.push_back(k);
  segment_sum(be, c.ctx, s, c.dout[0]->raw(), dx.data<float>(), outer_of(dx.shape(), axis), dx.dim(axis), K,
              inner_of(dx.shape(), axis), c.node.op_type, dy_dtype);
}

// ---- GatherElements(data, indices; axis): out has the indices' shape, out[.., j, ..] =
// data[.., indices[.., j, ..], ..]; ddata[e] = the sum of dout over the index elements that read
// data element e, in index order.
void check_along(const Node& node, const Shape& data, const Shape& indices, int axis) {
  for (size_t a = 0; a < data.size(); ++a) {
    if (static_cast<int>(a) != axis && indices[a] > data[a]) {
      kernel_error(node, "indices " + shape_str(indices) + " exceed data " + shape_str(data) + " off the axis");
    }
  }
}

std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t a = s.size(); a-- > 1;) st[a - 1] = st[a] * s[a];
  return st;
}

void gather_elements_forward(CudaBackend& be, const OpCall& c) {
  Array holder;
  const Array& x = as_dtype(be, c.ctx, *c.in[0], c.out[0]->dtype(), holder);
  const Array& ind = *c.in[1];
  const int axis = norm_axis(c.node.attr_int("axis", 0), x.rank());
  check_along(c.node, x.shape(), ind.shape(), axis);
  checked_indices(be, c.node, ind, x.dim(axis));
  if (x.rank() > TO_MAX_RANK) kernel_error(c.node, "the CUDA kernel takes at most " + std::to_string(TO_MAX_RANK) + " axes");
  cuda_kernels::GatherElementsArgs a{};
  a.data = x.raw();
  a.indices = ind.raw();
  a.index_dtype = static_cast<int>(ind.dtype());
  a.out = c.out[0]->raw();
  a.esize = dtype_size(x.dtype());
  a.rank = x.rank();
  a.axis = axis;
  const std::vector<int64_t> st = strides_of(x.shape());
  for (int d = 0; d < x.rank(); ++d) {
    a.index_shape[d] = ind.dim(d);
    a.data_stride[d] = st[static_cast<size_t>(d)];
  }
  a.dim = x.dim(axis);
  if (ind.numel() > 0) be.launch("move_gather_elements", a, c.node.op_type);
}

void gather_elements_backward(CudaBackend& be, const GradCall& c) {
  Array& dx = *c.din[0];
  const Array& ind = *c.in[1];
  const int dy_dtype = require_float(c.node, *c.dout[0], "the output gradient");
  const int axis = norm_axis(c.node.attr_int("axis", 0), dx.rank());
  check_along(c.node, dx.shape(), ind.shape(), axis);
  const std::vector<int64_t> idx = checked_indices(be, c.node, ind, dx.dim(axis));
  const std::vector<int64_t> st = strides_of(dx.shape());
  Segments s;
  for (int64_t k = 0; k < ind.numel(); ++k) {
    int64_t rest = k, off = 0;
    for (int d = ind.rank() - 1; d >= 0; --d) {
      const int64_t coord = d == axis ? idx[static_cast<size_t>(k)] : rest % ind.dim(d);
      rest /= ind.dim(d);
      off += coord * st[static_cast<size_t>(d)];
    }
    s.src_row.push_back(k);
    s.target.push_back(off);
  }
  segment_sum(be, c.ctx, s, c.dout[0]->raw(), dx.data<float>(), 1, dx.numel(), ind.numel(), 1, c.node.op_type, dy_dtype);
}

// ---- ScatterND(data, indices, updates; reduction): indices [.., q] name T = K / q slices of data
// [A_0 .. A_q-1, S]; out = data with each slice written by its tuples in order (none: the last
// wins; add, mul: combined). Backward, none: ddata = dout with the written slices zeroed,
// dupdates[t] = dout[slice t] for the last write of each slice, 0 for the overwritten ones; add:
// ddata = dout, dupdates[t] = dout[slice t]; mul is refused (its gradient needs data and updates,
// which nothing saves). Forward keeps the indices for backward.
struct Slices {
  std::vector<int64_t> base;   // per tuple: the slice's first element
  int64_t size = 0;            // S
};

Slices slices_of(CudaBackend& be, const Node& node, const Shape& data, const Array& indices) {
  const int64_t q = indices.shape().back();
  const std::vector<int64_t> idx = host_ints(be, &indices);
  Slices s{{}, numel(Shape(data.begin() + q, data.end()))};
  for (int64_t t = 0; q > 0 && t < indices.numel() / q; ++t) {
    int64_t b = 0;
    for (int64_t a = 0; a < q; ++a) {
      const int64_t dim = data[static_cast<size_t>(a)], v = idx[static_cast<size_t>(t * q + a)];
      if (v < -dim || v >= dim) {
        kernel_error(node, "index " + std::to_string(v) + " out of range for an axis of size " + std::to_string(dim));
      }
      b = b * dim + (v < 0 ? v + dim : v);
    }
    s.base.push_back(b * s.size);
  }
  return s;
}

// The distinct slices in order of first write: [G bases, G + 1 offsets, T tuples], the tuples of
// each slice in order.
std::vector<int64_t> slice_groups(const Slices& s, int64_t* groups) {
  std::map<int64_t, size_t> group_of;
  std::vector<int64_t> bases;
  std::vector<std::vector<int64_t>> lists;
  for (size_t t = 0; t < s.base.size(); ++t) {
    auto [it, fresh] = group_of.emplace(s.base[t], bases.size());
    if (fresh) {
      bases.push_back(s.base[t]);
      lists.emplace_back();
    }
    lists[it->second].push_back(static_cast<int64_t>(t));
  }
  *groups = static_cast<int64_t>(bases.size());
  std::vector<int64_t> packed = bases;
  packed.push_back(0);
  for (const auto& l : lists) packed.push_back(packed.back() + static_cast<int64_t>(l.size()));
  for (const auto& l : lists) packed.insert(packed.end(), l.begin(), l.end());
  return packed;
}

void scatter_nd_forward(CudaBackend& be, const OpCall& c) {
  keep_inputs(c, {1});
  const Array& x = *c.in[0];
  Array& y = *c.out[0];
  const std::string red = c.node.attr_string("reduction", "none");
  if (red != "none" && red != "add" && red != "mul") kernel_error(c.node, "reduction '" + red + "' is not supported");
  const DType t = x.dtype();
  if (red != "none" && t != DType::F32 && t != DType::F64 && t != DType::I64 && t != DType::I32) {
    kernel_error(c.node, "reduction '" + red + "' of " + std::string(dtype_name(t)) + " is not supported");
  }
  const Slices s = slices_of(be, c.node, x.shape(), *c.in[1]);
  copy_all(be, x, y, c.node.op_type);
  if (s.base.empty() || s.size == 0) return;
  cuda_kernels::ScatterNdArgs a{};
  const std::vector<int64_t> packed = slice_groups(s, &a.groups);
  const Array lists = device_ints(be, c.ctx, packed);
  a.out = y.raw();
  a.updates = c.in[2]->raw();
  a.dtype = static_cast<int>(t);
  a.reduction = red == "add" ? cuda_kernels::TO_SCATTER_ADD : red == "mul" ? cuda_kernels::TO_SCATTER_MUL : cuda_kernels::TO_SCATTER_NONE;
  a.esize = dtype_size(t);
  a.slice = s.size;
  a.base = lists.data<int64_t>();
  a.offsets = a.base + a.groups;
  a.tuple = a.offsets + a.groups + 1;
  be.launch("move_scatter_nd", a, c.node.op_type);
}

void scatter_nd_backward(CudaBackend& be, const GradCall& c) {
  const std::string red = c.node.attr_string("reduction", "none");
  if (red != "none" && red != "add") kernel_error(c.node, "no gradient through ScatterND with reduction '" + red + "'");
  const Array& dy = *c.dout[0];
  require_f32(c.node, dy, "the output gradient");
  const Slices s = slices_of(be, c.node, dy.shape(), *kept(c, 0));
  if (c.din[0]) copy_all(be, dy, *c.din[0], c.node.op_type);
  if (s.base.empty() || s.size == 0) {
    if (c.din[2]) be.fill(*c.din[2], 0.0);
    return;
  }
  cuda_kernels::ScatterNdGradArgs a{};
  std::vector<int64_t> packed;
  std::set<int64_t> distinct(s.base.begin(), s.base.end());
  packed.assign(distinct.begin(), distinct.end());
  a.groups = static_cast<int64_t>(packed.size());
  a.tuples = static_cast<int64_t>(s.base.size());
  packed.insert(packed.end(), s.base.begin(), s.base.end());
  std::vector<int64_t> take(s.base.size(), 1);
  std::set<int64_t> written;  // slices a later tuple overwrites (reduction none)
  for (size_t t = s.base.size(); red == "none" && t-- > 0;) take[t] = written.insert(s.base[t]).second ? 1 : 0;
  packed.insert(packed.end(), take.begin(), take.end());
  const Array lists = device_ints(be, c.ctx, packed);
  a.dout = dy.data<float>();
  a.ddata = c.din[0] ? c.din[0]->data<float>() : nullptr;
  a.dupdates = c.din[2] ? c.din[2]->data<float>() : nullptr;
  a.slice = s.size;
  a.zero_written = red == "none";
  a.group_base = lists.data<int64_t>();
  a.tuple_base = a.group_base + a.groups;
  a.take = a.tuple_base + a.tuples;
  be.launch("move_scatter_nd_grad", a, c.node.op_type);
}

// ---- OneHot(indices, depth, values; axis): out = the indices' shape with an axis of depth
// inserted at `axis` (default -1); out[.., d, ..] = values[1] where d is the index (negative ones
// count from depth), values[0] elsewhere. Float indices are truncated. No gradient.
void one_hot_forward(CudaBackend& be, const OpCall& c) {
  const Array& ind = *c.in[0];
  Array& y = *c.out[0];
  const DType t = ind.dtype();
  if (t != DType::I64 && t != DType::I32 && t != DType::F32 && t != DType::F64) {
    kernel_error(c.node, "indices of type " + std::string(dtype_name(t)) + " are not supported");
  }
  TO_CHECK(c.in[2]->dtype() == y.dtype() && c.in[2]->numel() >= 2);
  const int axis = norm_axis(c.node.attr_int("axis", -1), y.rank());
  cuda_kernels::OneHotArgs a{};
  a.indices = ind.raw();
  a.index_dtype = static_cast<int>(t);
  a.values = c.in[2]->raw();
  a.out = y.raw();
  a.esize = dtype_size(y.dtype());
  a.n = y.numel();
  a.depth = y.dim(axis);
  a.post = inner_of(y.shape(), axis);
  if (a.n > 0) be.launch("move_one_hot", a, c.node.op_type);
}

}  // namespace

void register_movement_gather(CudaBackend& be, KernelTable& table) {
  auto op = [&be](void (*f)(CudaBackend&, const OpCall&), void (*b)(CudaBackend&, const GradCall&)) {
    OpKernel k{[&be, f](const OpCall& c) { f(be, c); }, nullptr};
    if (b) k.backward = [&be, b](const GradCall& c) { b(be, c); };
    return k;
  };
  // Gather and GatherElements take bfloat16 as stored (takes_bf16); ScatterND and OneHot read
  // float32 copies.
  table["Gather"] = op(gather_forward, gather_backward);
  table["Gather"].takes_bf16 = true;
  table["GatherElements"] = op(gather_elements_forward, gather_elements_backward);
  table["GatherElements"].takes_bf16 = true;
  table["ScatterND"] = op(scatter_nd_forward, scatter_nd_backward);
  table["OneHot"] = op(one_hot_forward, nullptr);
}

}  // namespace tensoropt::runtime::cuda
