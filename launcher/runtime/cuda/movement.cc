// CUDA kernels of graph/ops/movement.cc, host side (the CPU's are cpu/movement*.cc): the views
// (Reshape, Flatten, Squeeze, Unsqueeze, Identity), Transpose, Concat, Split, Expand, Tile and
// Trilu here; Slice and Pad in movement_slice.cc; Gather, GatherElements, ScatterND and OneHot in
// movement_gather.cc. Forward moves any dtype by element size; backward writes float32. Under
// mixed precision (takes_bf16) forward moves bfloat16 as stored and backward reads bfloat16
// output gradients (movement.h).
//
// Shapes legend: r = rank, outer/inner = elements before/after an axis.
#include <algorithm>
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
using cpu::optional_input;
using cpu::outer_of;

// Rows of `len` elements: row o of dst from `dst_at` (rows dst_pitch elements apart) = row o of
// src from `src_at` (src_pitch apart), o < outer; byte for byte when the dtypes agree, else
// converted (a bfloat16 gradient as stored into a float32 one: move_float_rows).
void copy_block(CudaBackend& be, const Array& src, int64_t src_at, int64_t src_pitch, Array& dst, int64_t dst_at, int64_t dst_pitch,
                int64_t len, int64_t outer, const Node& node) {
  const int64_t ss = dtype_size(src.dtype()), ds = dtype_size(dst.dtype());
  const char* from = static_cast<const char*>(src.raw()) + src_at * ss;
  char* to = static_cast<char*>(dst.raw()) + dst_at * ds;
  if (src.dtype() == dst.dtype()) {
    be.check(be.driver().copy_rows(be.device(), to, dst_pitch * ds, from, src_pitch * ss, len * ss, outer), node.op_type);
    return;
  }
  cuda_kernels::RowsArgs a{from, to, static_cast<int>(src.dtype()), static_cast<int>(dst.dtype()), outer, len, src_pitch, dst_pitch};
  if (outer * len > 0) be.launch("move_float_rows", a, node.op_type);
}

// ---- Reshape, Flatten, Squeeze, Unsqueeze, Identity: out is a view of x (aliases_input: the
// executor makes it), so forward has nothing to do; dx = dout.
void view_forward(const OpCall&) {}

void view_backward(CudaBackend& be, const GradCall& c) { copy_converted(be, *c.dout[0], *c.din[0], c.node.op_type); }

// ---- Transpose: out axis j is x axis perm[j] (perm defaults to reversed); dx = dout permuted by
// the inverse.
std::vector<int64_t> perm_of(const Node& n, int rank) {
  if (auto p = n.attr_ints("perm")) return *p;
  std::vector<int64_t> perm(static_cast<size_t>(rank));
  for (int a = 0; a < rank; ++a) perm[static_cast<size_t>(a)] = rank - 1 - a;
  return perm;
}

void transpose_forward(CudaBackend& be, const OpCall& c) {
  Array holder;
  const Array& x = as_dtype(be, c.ctx, *c.in[0], c.out[0]->dtype(), holder);
  permute(be, c.ctx, c.node, x, x.shape(), perm_of(c.node, x.rank()), *c.out[0]);
}

void transpose_backward(CudaBackend& be, const GradCall& c) {
  const Array& dy = *c.dout[0];
  const std::vector<int64_t> perm = perm_of(c.node, dy.rank());
  std::vector<int64_t> inv(perm.size());
  for (size_t j = 0; j < perm.size(); ++j) inv[static_cast<size_t>(perm[j])] = static_cast<int64_t>(j);
  permute(be, c.ctx, c.node, dy, dy.shape(), inv, *c.din[0]);
}

// ---- Concat(x_0, .., x_k-1; axis): input i is the block at offset sum_{j<i} A_j of each outer
// row of out (a pitched copy each); dx_i = that block of dout.
void concat_forward(CudaBackend& be, const OpCall& c) {
  Array& y = *c.out[0];
  const int axis = norm_axis(c.node.attr_int("axis", 0), y.rank());
  const int64_t outer = outer_of(y.shape(), axis), row = y.dim(axis) * inner_of(y.shape(), axis);
  int64_t off = 0;
  for (const Array* in : c.in) {
    Array holder;
    const Array& x = as_dtype(be, c.ctx, *in, y.dtype(), holder);
    const int64_t len = x.dim(axis) * inner_of(x.shape(), axis);
    copy_block(be, x, 0, len, y, off, row, len, outer, c.node);
    off += len;
  }
}

void concat_backward(CudaBackend& be, const GradCall& c) {
  const Array& dy = *c.dout[0];
  const int axis = norm_axis(c.node.attr_int("axis", 0), dy.rank());
  const int64_t outer = outer_of(dy.shape(), axis), inner = inner_of(dy.shape(), axis), row = dy.dim(axis) * inner;
  int64_t off = 0;
  for (size_t i = 0; i < c.din.size(); ++i) {
    const int64_t len = c.in_shapes[i][static_cast<size_t>(axis)] * inner;
    if (c.din[i]) copy_block(be, dy, off, row, *c.din[i], 0, len, len, outer, c.node);
    off += len;
  }
}

// ---- Split(x, split?; axis): output k is the block of S_k at offset sum_{j<k} S_j along the axis;
// dx = the douts concatenated (zeros where an output takes no gradient). The sizes are the
// outputs' when every output is there, else as the CPU kernel finds them (attribute, input,
// num_outputs), the input downloaded.
std::vector<int64_t> split_sizes(CudaBackend& be, const Node& n, int64_t dim, const Array* split) {
  if (auto s = n.attr_ints("split")) return *s;
  std::vector<int64_t> sizes = host_ints(be, split);
  if (!sizes.empty()) return sizes;
  const int64_t parts = n.attr_int("num_outputs", static_cast<int64_t>(n.outputs.size()));
  const int64_t each = (dim + parts - 1) / parts;
  for (int64_t k = 0; k < parts; ++k) sizes.push_back(std::max<int64_t>(0, std::min(each, dim - k * each)));
  return sizes;
}

template <class Arrays>
std::vector<int64_t> sizes_of(CudaBackend& be, const Node& n, const Arrays& parts, int axis, int64_t dim, const Array* split) {
  std::vector<int64_t> sizes;
  for (const auto* p : parts) {
    if (!p) return split_sizes(be, n, dim, split);
    sizes.push_back(p->dim(axis));
  }
  return sizes;
}

void split_forward(CudaBackend& be, const OpCall& c) {
  keep_inputs(c, {1});
  const Array* first = nullptr;  // the outputs' dtype: the input's as stored
  for (const Array* o : c.out) first = first ? first : o;
  Array holder;
  const Array& x = first ? as_dtype(be, c.ctx, *c.in[0], first->dtype(), holder) : *c.in[0];
  const int axis = norm_axis(c.node.attr_int("axis", 0), x.rank());
  const int64_t outer = outer_of(x.shape(), axis), inner = inner_of(x.shape(), axis), row = x.dim(axis) * inner;
  const std::vector<int64_t> sizes = sizes_of(be, c.node, c.out, axis, x.dim(axis), optional_input(c, 1));
  int64_t off = 0;
  for (size_t k = 0; k < sizes.size(); ++k) {
    const int64_t len = sizes[k] * inner;
    if (c.out[k]) copy_block(be, x, off, row, *c.out[k], 0, len, len, outer, c.node);
    off += len;
  }
}

void split_backward(CudaBackend& be, const GradCall& c) {
  Array& dx = *c.din[0];
  const int axis = norm_axis(c.node.attr_int("axis", 0), dx.rank());
  const int64_t outer = outer_of(dx.shape(), axis), inner = inner_of(dx.shape(), axis), row = dx.dim(axis) * inner;
  const std::vector<int64_t> sizes = sizes_of(be, c.node, c.dout, axis, dx.dim(axis), kept(c, 0));
  if (std::find(c.dout.begin(), c.dout.end(), nullptr) != c.dout.end()) be.fill(dx, 0.0);
  int64_t off = 0;
  for (size_t k = 0; k < sizes.size(); ++k) {
    const int64_t len = sizes[k] * inner;
    if (c.dout[k]) copy_block(be, *c.dout[k], 0, len, dx, off, row, len, outer, c.node);
    off += len;
  }
}

// ---- Expand(x, shape): out = x broadcast (numpy rules, aligned right), a strided copy with stride
// 0 along the broadcast axes; dx = dout summed over them (sum_onto).
void expand_forward(CudaBackend& be, const OpCall& c) {
  Array holder;
  const Array& x = as_dtype(be, c.ctx, *c.in[0], c.out[0]->dtype(), holder);
  const Shape& out = c.out[0]->shape();
  const size_t skip = out.size() - x.shape().size();
  std::vector<GatherAxis> axes(out.size());
  int64_t stride = 1;
  for (size_t a = out.size(); a-- > 0;) {
    axes[a].out = out[a];
    const int64_t in = a < skip ? 1 : x.shape()[a - skip];
    axes[a].stride = in == 1 ? 0 : stride;
    stride *= in;
  }
  gather(be, c.ctx, c.node, std::move(axes), x.raw(), c.out[0]->raw(), dtype_size(x.dtype()));
}

void expand_backward(CudaBackend& be, const GradCall& c) {
  if (c.dout[0]->shape() == c.din[0]->shape()) return copy_converted(be, *c.dout[0], *c.din[0], c.node.op_type);
  sum_onto(be, c.node, *c.dout[0], *c.din[0]);
}

// ---- Tile(x, repeats): out[i] = x[i mod x.shape] axis by axis; dx[j] = the sum of dout over the
// repeats of j (a segmented sum per repeated axis).
void tile_forward(CudaBackend& be, const OpCall& c) {
  Array holder;
  const Array& x = as_dtype(be, c.ctx, *c.in[0], c.out[0]->dtype(), holder);
  const Shape& out = c.out[0]->shape();
  std::vector<GatherAxis> axes(out.size());
  int64_t stride = 1;
  for (size_t a = out.size(); a-- > 0;) {
    axes[a] = GatherAxis::plain(out[a], stride, x.dim(static_cast<int>(a)));
    stride *= x.dim(static_cast<int>(a));
  }
  gather(be, c.ctx, c.node, std::move(axes), x.raw(), c.out[0]->raw(), dtype_size(x.dtype()));
}

void tile_backward(CudaBackend& be, const GradCall& c) {
  scatter_maps(be, c.ctx, c.node, cpu::tile_maps(c.din[0]->shape(), c.dout[0]->shape()), *c.dout[0], *c.din[0]);
}

// ---- Trilu(x, k?; upper): on each matrix of the two inner axes, out[i, j] = x[i, j] where
// j - i >= k (upper, the default) or j - i <= k (lower), else 0; k is read on the device.
// dx = dout masked the same way.
void trilu(CudaBackend& be, const Node& n, const Array* k, const Array& src, Array& dst) {
  cuda_kernels::TriluArgs a{};
  a.src = src.raw();
  a.dst = dst.raw();
  a.esize = dtype_size(src.dtype());
  a.n = src.numel();
  a.rows = src.dim(src.rank() - 2);
  a.cols = src.dim(src.rank() - 1);
  a.upper = n.attr_int("upper", 1) != 0;
  if (k && k->numel() > 0) {
    a.k_src = k->raw();
    a.k_dtype = static_cast<int>(k->dtype());
  }
  if (a.n > 0) be.launch("move_trilu", a, n.op_type);
}

void trilu_forward(CudaBackend& be, const OpCall& c) {
  keep_inputs(c, {1});
  trilu(be, c.node, optional_input(c, 1), *c.in[0], *c.out[0]);
}

void trilu_backward(CudaBackend& be, const GradCall& c) { trilu(be, c.node, kept(c, 0), *c.dout[0], *c.din[0]); }

}  // namespace

void register_movement(CudaBackend& be, KernelTable& table) {
  // Every op here but Trilu takes bfloat16 as stored (OpKernel::takes_bf16).
  for (const char* view : {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"}) {
    table[view] = {view_forward, [&be](const GradCall& c) { view_backward(be, c); }, /*aliases_input=*/true};
    table[view].takes_bf16 = true;
  }
  auto op = [&be](void (*f)(CudaBackend&, const OpCall&), void (*b)(CudaBackend&, const GradCall&), bool bf16 = true) {
    OpKernel k{[&be, f](const OpCall& c) { f(be, c); }, [&be, b](const GradCall& c) { b(be, c); }};
    k.takes_bf16 = bf16;
    return k;
  };
  table["Transpose"] = op(transpose_forward, transpose_backward);
  table["Concat"] = op(concat_forward, concat_backward);
  table["Split"] = op(split_forward, split_backward);
  table["Expand"] = op(expand_forward, expand_backward);
  table["Tile"] = op(tile_forward, tile_backward);
  table["Trilu"] = op(trilu_forward, trilu_backward, false);  // its backward moves bits: float32 copies
  register_movement_slice(be, table);
  register_movement_gather(be, table);
}

}  // namespace tensoropt::runtime::cuda
