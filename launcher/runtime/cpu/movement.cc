// CPU kernels of graph/ops/movement.cc (see kernels.h): the views (Reshape, Flatten, Squeeze,
// Unsqueeze), Transpose, Concat, Split, Expand, Tile and Trilu here; Slice and Pad in
// movement_slice.cc; Gather, GatherElements, ScatterND and OneHot in movement_gather.cc; first the
// helpers movement_kernels.h declares. Forward moves any dtype by element size; backward is float32.
//
// Shapes legend: r = rank, N = output elements, outer/inner = elements before/after an axis.
#include <algorithm>
#include <cstring>
#include <numeric>

#include "launcher/runtime/cpu/kernels.h"
#include "launcher/runtime/cpu/movement_copy.h"
#include "launcher/runtime/cpu/movement_kernels.h"
#include "launcher/runtime/cpu/util.h"

namespace tensoropt::runtime::cpu {

AxisMaps tile_maps(const Shape& in, const Shape& out) {
  AxisMaps m{in, {}};
  for (size_t a = 0; a < out.size(); ++a) {
    std::vector<int64_t> map(static_cast<size_t>(out[a]));
    for (size_t i = 0; i < map.size(); ++i) map[i] = static_cast<int64_t>(i) % in[a];
    m.map.push_back(std::move(map));
  }
  return m;
}

void keep_inputs(const OpCall& c, std::initializer_list<int> which) {
  for (int k : which) {
    const Array* a = optional_input(c, k);
    c.state.saved.push_back(a ? *a : Array());
  }
}

const Array* optional_input(const OpCall& c, int k) {
  auto i = static_cast<size_t>(k);
  return i < c.in.size() ? c.in[i] : nullptr;
}

const Array* kept(const GradCall& c, int k) {
  const Array& a = c.state.saved.at(static_cast<size_t>(k));
  return a.defined() ? &a : nullptr;
}

std::vector<int64_t> ints_of(const Array* a) {
  std::vector<int64_t> v;
  if (!a) return v;
  for (int64_t i = 0; i < a->numel(); ++i) v.push_back(index_at(*a, i));
  return v;
}

bool element_bits(DType t, double real, int64_t integer, uint64_t& bits) {
  bits = 0;
  if (t == DType::F32) {
    auto f = static_cast<float>(real);
    std::memcpy(&bits, &f, sizeof f);
  } else if (t == DType::F64) {
    std::memcpy(&bits, &real, sizeof real);
  } else if (t == DType::Bool) {
    bits = integer != 0;
  } else if (dtype_is_integral(t)) {
    // Two's complement, little-endian: the low bytes of the int64 are the narrower integer.
    std::memcpy(&bits, &integer, sizeof integer);
  } else {
    return false;
  }
  return true;
}

int norm_axis(int64_t axis, int rank) { return static_cast<int>(axis < 0 ? axis + rank : axis); }

namespace {

// ---- Reshape, Flatten, Squeeze, Unsqueeze: out = x under another shape. The executor makes the
// output a view of the input (aliases_input), so forward has nothing to do; dx = dout.
void view_forward(const OpCall&) {}

void view_backward(const GradCall& c) {
  copy_rows(c.dout[0]->raw(), 0, c.din[0]->raw(), 0, 1, c.din[0]->bytes(), c.ctx.threads);
}

// ---- Transpose: out[i_perm[0], .., i_perm[r-1]] = x[i_0, .., i_r-1] (perm defaults to reversed);
// dx = dout transposed by the inverse permutation.
std::vector<int64_t> perm_of(const Node& n, int rank) {
  if (auto p = n.attr_ints("perm")) return *p;
  std::vector<int64_t> perm(static_cast<size_t>(rank));
  for (int a = 0; a < rank; ++a) perm[static_cast<size_t>(a)] = rank - 1 - a;
  return perm;
}

void transpose_forward(const OpCall& c) {
  const Array& x = *c.in[0];
  permute(x.raw(), x.shape(), perm_of(c.node, x.rank()), c.out[0]->raw(), dtype_size(x.dtype()), c.ctx.threads);
}

void transpose_backward(const GradCall& c) {
  const Array& dy = *c.dout[0];
  std::vector<int64_t> perm = perm_of(c.node, dy.rank()), inv(perm.size());
  for (size_t j = 0; j < perm.size(); ++j) inv[static_cast<size_t>(perm[j])] = static_cast<int64_t>(j);
  permute(dy.raw(), dy.shape(), inv, c.din[0]->raw(), dtype_size(dy.dtype()), c.ctx.threads);
}

// ---- Concat(x_0, .., x_k-1; axis): out = [outer, sum_i A_i, inner], input i at offset
// sum_{j<i} A_j along the axis; dx_i = that block of dout.
void concat_forward(const OpCall& c) {
  Array& y = *c.out[0];
  int axis = norm_axis(c.node.attr_int("axis", 0), y.rank());
  const int64_t es = dtype_size(y.dtype()), outer = outer_of(y.shape(), axis);
  const int64_t row = y.dim(axis) * inner_of(y.shape(), axis) * es;
  int64_t off = 0;
  for (const Array* x : c.in) {
    int64_t len = x->dim(axis) * inner_of(x->shape(), axis) * es;
    copy_rows(x->raw(), len, static_cast<char*>(y.raw()) + off, row, outer, len, c.ctx.threads);
    off += len;
  }
}

void concat_backward(const GradCall& c) {
  const Array& dy = *c.dout[0];
  int axis = norm_axis(c.node.attr_int("axis", 0), dy.rank());
  const int64_t outer = outer_of(dy.shape(), axis), inner = inner_of(dy.shape(), axis);
  const int64_t es = dtype_size(dy.dtype()), row = dy.dim(axis) * inner * es;
  int64_t off = 0;
  for (size_t i = 0; i < c.din.size(); ++i) {
    int64_t len = c.in_shapes[i][static_cast<size_t>(axis)] * inner * es;
    const char* block = static_cast<const char*>(dy.raw()) + off;
    if (c.din[i]) copy_rows(block, row, c.din[i]->raw(), len, outer, len, c.ctx.threads);
    off += len;
  }
}

// ---- Split(x, split?; axis): output k = [outer, S_k, inner], rows of x from offset sum_{j<k} S_j;
// dx = the douts concatenated (zero where an output takes no gradient). Sizes from the `split`
// attribute (opset < 13) or input, else num_outputs (opset 18) or the output count, as equal
// parts of ceil(A / parts) with a smaller last one.
std::vector<int64_t> split_sizes(const Node& n, int64_t dim, const Array* split) {
  std::vector<int64_t> sizes = n.attr_ints("split").value_or(ints_of(split));
  if (!sizes.empty()) return sizes;
  int64_t parts = n.attr_int("num_outputs", static_cast<int64_t>(n.outputs.size()));
  int64_t each = (dim + parts - 1) / parts;
  for (int64_t k = 0; k < parts; ++k) sizes.push_back(std::max<int64_t>(0, std::min(each, dim - k * each)));
  return sizes;
}

void split_forward(const OpCall& c) {
  keep_inputs(c, {1});
  const Array& x = *c.in[0];
  int axis = norm_axis(c.node.attr_int("axis", 0), x.rank());
  const int64_t es = dtype_size(x.dtype()), outer = outer_of(x.shape(), axis), inner = inner_of(x.shape(), axis);
  const int64_t row = x.dim(axis) * inner * es;
  std::vector<int64_t> sizes = split_sizes(c.node, x.dim(axis), optional_input(c, 1));
  int64_t off = 0;
  for (size_t k = 0; k < sizes.size(); ++k) {
    int64_t len = sizes[k] * inner * es;
    const char* block = static_cast<const char*>(x.raw()) + off;
    if (c.out[k]) copy_rows(block, row, c.out[k]->raw(), len, outer, len, c.ctx.threads);
    off += len;
  }
}

void split_backward(const GradCall& c) {
  Array& dx = *c.din[0];
  int axis = norm_axis(c.node.attr_int("axis", 0), dx.rank());
  const int64_t outer = outer_of(dx.shape(), axis), inner = inner_of(dx.shape(), axis);
  const int64_t es = dtype_size(dx.dtype()), row = dx.dim(axis) * inner * es;
  std::vector<int64_t> sizes = split_sizes(c.node, dx.dim(axis), kept(c, 0));
  if (std::find(c.dout.begin(), c.dout.end(), nullptr) != c.dout.end()) {
    const float zero = 0;
    fill_elements(dx.raw(), dx.numel(), &zero, es, c.ctx.threads);
  }
  int64_t off = 0;
  for (size_t k = 0; k < sizes.size(); ++k) {
    int64_t len = sizes[k] * inner * es;
    if (c.dout[k]) copy_rows(c.dout[k]->raw(), len, static_cast<char*>(dx.raw()) + off, row, outer, len, c.ctx.threads);
    off += len;
  }
}

// ---- Expand(x, shape): out = x broadcast (numpy rules) to the output shape; dx = dout summed over
// the broadcast axes (sum_to_shape).
void expand_forward(const OpCall& c) {
  const Array& x = *c.in[0];
  const Shape& out = c.out[0]->shape();
  AxisMaps m;
  m.src = Shape(out.size() - x.shape().size(), 1);
  m.src.insert(m.src.end(), x.shape().begin(), x.shape().end());
  for (size_t a = 0; a < out.size(); ++a) {
    std::vector<int64_t> map(static_cast<size_t>(out[a]), 0);
    if (m.src[a] != 1) std::iota(map.begin(), map.end(), 0);
    m.map.push_back(std::move(map));
  }
  gather_axes(m, x.raw(), c.out[0]->raw(), dtype_size(x.dtype()), /*fill=*/nullptr, c.ctx.threads);
}

void expand_backward(const GradCall& c) {
  const Array& dy = *c.dout[0];
  sum_to_shape(dy.data<float>(), dy.shape(), c.din[0]->data<float>(), c.din[0]->shape(), c.ctx.threads);
}

// ---- Tile(x, repeats): out[i] = x[i mod x.shape] axis by axis, out dims = x dims * repeats;
// dx[j] = sum of dout over the repeats of j.
void tile_forward(const OpCall& c) {
  const Array& x = *c.in[0];
  gather_axes(tile_maps(x.shape(), c.out[0]->shape()), x.raw(), c.out[0]->raw(), dtype_size(x.dtype()),
              /*fill=*/nullptr, c.ctx.threads);
}

void tile_backward(const GradCall& c) {
  const Array& dy = *c.dout[0];
  scatter_add_axes(tile_maps(c.din[0]->shape(), dy.shape()), dy.data<float>(), c.din[0]->data<float>(), c.ctx.threads);
}

// ---- Trilu(x, k?; upper): on each [R, C] matrix of the two inner axes, out[i, j] = x[i, j] where
// j - i >= k (upper, the default) or j - i <= k (lower), else 0; dx = dout masked the same way.
void trilu(const Node& n, const Array* k_input, const void* src, void* dst, const Shape& shape, int64_t es,
           int threads) {
  std::vector<int64_t> kv = ints_of(k_input);
  const int64_t k = kv.empty() ? 0 : kv[0];
  const bool upper = n.attr_int("upper", 1) != 0;
  const int64_t rows_per = shape[shape.size() - 2], cols = shape.back();
  const int64_t rows = numel(shape) / std::max<int64_t>(cols, 1);
  parallel_for(rows, std::max<int64_t>(1, 8192 / std::max<int64_t>(cols, 1)), threads, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      int64_t i = r % rows_per;
      int64_t j0 = upper ? std::clamp(i + k, int64_t{0}, cols) : 0;
      int64_t j1 = upper ? cols : std::clamp(i + k + 1, int64_t{0}, cols);
      j1 = std::max(j0, j1);
      const char* s = static_cast<const char*>(src) + r * cols * es;
      char* d = static_cast<char*>(dst) + r * cols * es;
      std::memset(d, 0, static_cast<size_t>(j0 * es));
      std::memcpy(d + j0 * es, s + j0 * es, static_cast<size_t>((j1 - j0) * es));
      std::memset(d + j1 * es, 0, static_cast<size_t>((cols - j1) * es));
    }
  });
}

void trilu_forward(const OpCall& c) {
  keep_inputs(c, {1});
  const Array& x = *c.in[0];
  trilu(c.node, optional_input(c, 1), x.raw(), c.out[0]->raw(), x.shape(), dtype_size(x.dtype()),
        c.ctx.threads);
}

void trilu_backward(const GradCall& c) {
  const Array& dx = *c.din[0];
  trilu(c.node, kept(c, 0), c.dout[0]->raw(), dx.raw(), dx.shape(), dtype_size(dx.dtype()), c.ctx.threads);
}

}  // namespace

void register_movement(KernelTable& table) {
  for (const char* view : {"Reshape", "Flatten", "Squeeze", "Unsqueeze"}) {
    table[view] = {view_forward, view_backward, /*aliases_input=*/true};
  }
  table["Transpose"] = {transpose_forward, transpose_backward};
  table["Concat"] = {concat_forward, concat_backward};
  table["Split"] = {split_forward, split_backward};
  table["Expand"] = {expand_forward, expand_backward};
  table["Tile"] = {tile_forward, tile_backward};
  table["Trilu"] = {trilu_forward, trilu_backward};
  register_movement_slice(table);
  register_movement_gather(table);
}

}  // namespace tensoropt::runtime::cpu
