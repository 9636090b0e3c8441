// The CUDA backend's data-movement kernels (host side: cuda/movement*.cc, cuda/resample.cc), for
// any executor (hd.h). Two kernels carry almost every op and its gradient:
//   move_gather_axes  out[i_0..i_r-1] = src[sum_a map_a(i_a) * stride_a]: a strided copy
//                     (Transpose, Expand, DepthToSpace), an index table per axis (Slice, Pad,
//                     nearest Resize, Gather), i mod n (Tile); a table entry -1 writes the fill
//                     element (Pad's constant, a Gather row another shard holds). Any dtype:
//                     elements move as bits of their size (1, 2, 4 or 8 bytes), or bfloat16
//                     widens into float32 (a gradient as stored under mixed precision).
//   move_segment_sum  dst[o, r, :] = sum over t in [offsets[r], offsets[r+1]) of
//                     weight[t] * src[o, item[t], :], float32 (src float32 or bfloat16), each
//                     sum in list order by one thread: the transposes of the gathers (the
//                     scatter-adds of Slice, Pad, Tile, Resize, Gather, GatherElements) and
//                     Resize's linear and cubic taps. The lists are built on the host, so
//                     gradients are deterministic and need no atomics.
// move_float_rows converts blocks of rows (Concat's and Split's bfloat16 gradients).
// The rest are one op each: GatherElements, Trilu, OneHot, Range, ScatterND and its gradient, a
// fill by bits (ConstantOfShape). movement_kernels() lists them for the driver (registry.h).
//
// Shapes legend: r = rank (<= TO_MAX_RANK), N = output elements, S = elements of a ScatterND slice.
#pragma once

#include <string.h>

#include <string>

#include "launcher/runtime/cuda/device/hd.h"
#include "launcher/runtime/cuda/device/primitives.h"
#include "launcher/runtime/cuda/device/registry.h"
#include "launcher/runtime/cuda/driver_abi.h"

namespace tensoropt::cuda_kernels {

// ---- move_gather_axes. Axis a of the output reads source index table[table_at[a] + i] when
// table_at[a] >= 0, else i % mod[a] when mod[a] > 0, else i; the source offset is the sum of
// index * src_stride[a] (elements; 0 along a broadcast axis).
struct GatherAxesArgs {
  const void* src;
  void* dst;
  int64_t esize;                     // bytes per element: 1, 2, 4 or 8
  int rank;
  int64_t out_shape[TO_MAX_RANK];
  int64_t src_stride[TO_MAX_RANK];
  int64_t mod[TO_MAX_RANK];
  int64_t table_at[TO_MAX_RANK];
  const int64_t* table;              // device; nullptr when no axis has a table
  uint64_t fill_bits;                // the element written for a -1 entry (low esize bytes) ...
  const void* fill_src;              // ... or, when non-null, the device element read here
  int widen;                         // 1: src bfloat16 into dst float32 (a gradient as stored; esize 2,
                                     // fill_bits a float32's, no fill_src); 0: elements move as bits
};

template <class T>
TO_HD T element_of_bits(uint64_t bits) {
  T v;
  memcpy(&v, &bits, sizeof(T));
  return v;
}

// A source element stored as D: the same bits, or (widen) a bfloat16 as the float32 it is.
template <class D, class T>
TO_HD D element_as(T v) {
  return v;
}
template <>
TO_HD float element_as<float, uint16_t>(uint16_t v) {
  return from_bf16(v);
}

template <class Exec, class T, class D = T>
int gather_axes_as(Exec& ex, const GatherAxesArgs& g) {
  int64_t n = 1;
  for (int a = 0; a < g.rank; ++a) n *= g.out_shape[a];
  const T* s = static_cast<const T*>(g.src);
  D* d = static_cast<D*>(g.dst);
  const D* fill_src = static_cast<const D*>(g.fill_src);
  const D fill = element_of_bits<D>(g.fill_bits);
  return ex.each(n, [=] TO_HD_LAMBDA(int64_t i) {
    int64_t rest = i, off = 0;
    bool outside = false;
    for (int a = g.rank - 1; a >= 0; --a) {
      const int64_t c = rest % g.out_shape[a];
      rest /= g.out_shape[a];
      const int64_t j = g.table_at[a] >= 0 ? g.table[g.table_at[a] + c] : g.mod[a] > 0 ? c % g.mod[a] : c;
      if (j < 0) outside = true;
      else off += j * g.src_stride[a];
    }
    d[i] = !outside ? element_as<D>(s[off]) : fill_src ? fill_src[0] : fill;
  });
}

template <class Exec>
int gather_axes(Exec& ex, const GatherAxesArgs& g) {
  if (g.rank < 0 || g.rank > TO_MAX_RANK) return ex.fail("move_gather_axes: rank above TO_MAX_RANK");
  if (g.widen) {
    if (g.esize != 2 || g.fill_src) return ex.fail("move_gather_axes: widening reads bfloat16 and fills from fill_bits");
    return gather_axes_as<Exec, uint16_t, float>(ex, g);
  }
  switch (g.esize) {
    case 1: return gather_axes_as<Exec, uint8_t>(ex, g);
    case 2: return gather_axes_as<Exec, uint16_t>(ex, g);
    case 4: return gather_axes_as<Exec, uint32_t>(ex, g);
    case 8: return gather_axes_as<Exec, uint64_t>(ex, g);
    default: return ex.fail("move_gather_axes: element size " + std::to_string(g.esize));
  }
}

// ---- move_segment_sum: dst [outer, rows, width], src [outer, items, width], every dst row
// written (0 for an empty list). A warp per row (lanes over the width) when rows are wide, else a
// thread per element.
struct SegmentSumArgs {
  const void* src;         // float32 or bfloat16 (src_dtype: a gradient as stored)
  int src_dtype;
  float* dst;
  int64_t outer, rows, items, width;
  const int64_t* offsets;  // [rows + 1], device
  const int64_t* item;     // [offsets[rows]]: rows of src, device
  const float* weight;     // [offsets[rows]], device; nullptr: every weight 1
};

TO_HD float segment_element(const SegmentSumArgs& g, int64_t o, int64_t r, int64_t c) {
  const int64_t s = o * g.items * g.width + c;
  float acc = 0;
  for (int64_t t = g.offsets[r]; t < g.offsets[r + 1]; ++t) {
    const float v = load_float(g.src, g.src_dtype, s + g.item[t] * g.width);
    acc += g.weight ? g.weight[t] * v : v;
  }
  return acc;
}

template <class Exec>
int segment_sum(Exec& ex, const SegmentSumArgs& args) {
  const SegmentSumArgs g = args;
  if (!float_or_bf16(g.src_dtype)) return ex.fail("move_segment_sum: float32 and bfloat16 only");
  if (g.width >= 32) {
    return ex.rows(g.outer * g.rows, [=] TO_HD_LAMBDA(const Lanes& l, int64_t row) {
      const int64_t o = row / g.rows, r = row % g.rows;
      for (int64_t c = l.lane; c < g.width; c += l.width) g.dst[row * g.width + c] = segment_element(g, o, r, c);
    });
  }
  return ex.each(g.outer * g.rows * g.width, [=] TO_HD_LAMBDA(int64_t i) {
    const int64_t c = i % g.width, row = i / g.width;
    g.dst[i] = segment_element(g, row / g.rows, row % g.rows, c);
  });
}

// ---- move_float_rows: dst[o * dst_pitch + j] = src[o * src_pitch + j] for o < rows, j < width
// (elements), float32 or bfloat16 each: a block of a bfloat16 gradient as stored into a float32
// one (Concat's and Split's backward), rounded once when dst is bfloat16.
struct RowsArgs {
  const void* src;
  void* dst;
  int src_dtype, dst_dtype;
  int64_t rows, width, src_pitch, dst_pitch;
};

template <class Exec>
int float_rows(Exec& ex, const RowsArgs& args) {
  const RowsArgs g = args;
  if (!float_or_bf16(g.src_dtype) || !float_or_bf16(g.dst_dtype)) return ex.fail("move_float_rows: float32 and bfloat16 only");
  return ex.each(g.rows * g.width, [=] TO_HD_LAMBDA(int64_t i) {
    const int64_t o = i / g.width, j = i % g.width;
    store_float(g.dst, g.dst_dtype, o * g.dst_pitch + j, load_float(g.src, g.src_dtype, o * g.src_pitch + j));
  });
}

// ---- move_gather_elements: out has the indices' shape; out[k] = data[the indices' coordinates
// of k with the one on `axis` replaced by index k] (negative indices count from dim; the host has
// checked them against [-dim, dim)).
struct GatherElementsArgs {
  const void* data;
  const void* indices;
  int index_dtype;                   // TO_DTYPE_I64 or TO_DTYPE_I32
  void* out;
  int64_t esize;
  int rank, axis;
  int64_t index_shape[TO_MAX_RANK];
  int64_t data_stride[TO_MAX_RANK];  // elements
  int64_t dim;                       // data's size along the axis
};

template <class Exec, class T>
int gather_elements_as(Exec& ex, const GatherElementsArgs& g) {
  int64_t n = 1;
  for (int a = 0; a < g.rank; ++a) n *= g.index_shape[a];
  const T* s = static_cast<const T*>(g.data);
  T* d = static_cast<T*>(g.out);
  return ex.each(n, [=] TO_HD_LAMBDA(int64_t k) {
    int64_t rest = k, off = 0;
    for (int a = g.rank - 1; a >= 0; --a) {
      int64_t c = rest % g.index_shape[a];
      rest /= g.index_shape[a];
      if (a == g.axis) {
        c = load_index(g.indices, g.index_dtype, k);
        if (c < 0) c += g.dim;
      }
      off += c * g.data_stride[a];
    }
    d[k] = s[off];
  });
}

template <class Exec>
int gather_elements(Exec& ex, const GatherElementsArgs& g) {
  if (g.rank < 1 || g.rank > TO_MAX_RANK) return ex.fail("move_gather_elements: rank above TO_MAX_RANK");
  switch (g.esize) {
    case 1: return gather_elements_as<Exec, uint8_t>(ex, g);
    case 2: return gather_elements_as<Exec, uint16_t>(ex, g);
    case 4: return gather_elements_as<Exec, uint32_t>(ex, g);
    case 8: return gather_elements_as<Exec, uint64_t>(ex, g);
    default: return ex.fail("move_gather_elements: element size " + std::to_string(g.esize));
  }
}

// ---- move_trilu: on each [R, C] matrix, out[i, j] = src[i, j] where j - i >= k (upper) or
// j - i <= k (lower), else 0; k read from the device (k_src, one integer) or 0.
struct TriluArgs {
  const void* src;
  void* dst;
  int64_t esize, n, rows, cols;      // n elements, matrices of rows x cols
  int upper;
  const void* k_src;                 // nullptr: k = 0
  int k_dtype;
};

template <class Exec, class T>
int trilu_as(Exec& ex, const TriluArgs& g) {
  const T* s = static_cast<const T*>(g.src);
  T* d = static_cast<T*>(g.dst);
  return ex.each(g.n, [=] TO_HD_LAMBDA(int64_t e) {
    const int64_t k = g.k_src ? load_index(g.k_src, g.k_dtype, 0) : 0;
    const int64_t j = e % g.cols, i = (e / g.cols) % g.rows;
    const bool keep = g.upper ? j - i >= k : j - i <= k;
    d[e] = keep ? s[e] : T(0);
  });
}

template <class Exec>
int trilu(Exec& ex, const TriluArgs& g) {
  switch (g.esize) {
    case 1: return trilu_as<Exec, uint8_t>(ex, g);
    case 2: return trilu_as<Exec, uint16_t>(ex, g);
    case 4: return trilu_as<Exec, uint32_t>(ex, g);
    case 8: return trilu_as<Exec, uint64_t>(ex, g);
    default: return ex.fail("move_trilu: element size " + std::to_string(g.esize));
  }
}

// ---- move_one_hot: out [pre, depth, post]; out[p, d, q] = values[1] where the index at (p, q)
// (truncated to an integer; negative counts from depth) is d, else values[0].
struct OneHotArgs {
  const void* indices;
  int index_dtype;                   // TO_DTYPE_I64, I32, F32 or F64
  const void* values;                // [2]: off, on (device)
  void* out;
  int64_t esize, n, depth, post;
};

TO_HD int64_t index_value(const void* p, int dtype, int64_t i) {
  switch (dtype) {
    case TO_DTYPE_F32: return static_cast<int64_t>(static_cast<const float*>(p)[i]);
    case TO_DTYPE_F64: return static_cast<int64_t>(static_cast<const double*>(p)[i]);
    default: return load_index(p, dtype, i);
  }
}

template <class Exec, class T>
int one_hot_as(Exec& ex, const OneHotArgs& g) {
  const T* v = static_cast<const T*>(g.values);
  T* d = static_cast<T*>(g.out);
  return ex.each(g.n, [=] TO_HD_LAMBDA(int64_t e) {
    const int64_t q = e % g.post, at = (e / g.post) % g.depth, p = e / (g.post * g.depth);
    int64_t x = index_value(g.indices, g.index_dtype, p * g.post + q);
    if (x < 0) x += g.depth;
    d[e] = v[x == at ? 1 : 0];
  });
}

template <class Exec>
int one_hot(Exec& ex, const OneHotArgs& g) {
  switch (g.esize) {
    case 1: return one_hot_as<Exec, uint8_t>(ex, g);
    case 2: return one_hot_as<Exec, uint16_t>(ex, g);
    case 4: return one_hot_as<Exec, uint32_t>(ex, g);
    case 8: return one_hot_as<Exec, uint64_t>(ex, g);
    default: return ex.fail("move_one_hot: element size " + std::to_string(g.esize));
  }
}

// ---- move_range: out[k] = start + k * delta (start and delta one element each on the device),
// floats in double rounded once, integers exactly.
struct RangeArgs {
  const void* start;
  const void* delta;
  void* out;
  int dtype;                         // TO_DTYPE_F32, F64, I64 or I32
  int64_t n;
};

template <class Exec, class T, class Wide>
int range_as(Exec& ex, const RangeArgs& g) {
  const T* s = static_cast<const T*>(g.start);
  const T* dl = static_cast<const T*>(g.delta);
  T* y = static_cast<T*>(g.out);
  return ex.each(g.n, [=] TO_HD_LAMBDA(int64_t k) {
    y[k] = static_cast<T>(static_cast<Wide>(s[0]) + static_cast<Wide>(k) * static_cast<Wide>(dl[0]));
  });
}

template <class Exec>
int range(Exec& ex, const RangeArgs& g) {
  switch (g.dtype) {
    case TO_DTYPE_F32: return range_as<Exec, float, double>(ex, g);
    case TO_DTYPE_F64: return range_as<Exec, double, double>(ex, g);
    case TO_DTYPE_I64: return range_as<Exec, int64_t, int64_t>(ex, g);
    case TO_DTYPE_I32: return range_as<Exec, int32_t, int32_t>(ex, g);
    default: return ex.fail("move_range: dtype " + std::to_string(g.dtype));
  }
}

// ---- move_fill_bits: dst[0, n) = the element whose bits are the low esize bytes of `bits`.
struct FillBitsArgs {
  void* dst;
  int64_t esize, n;
  uint64_t bits;
};

template <class Exec, class T>
int fill_bits_as(Exec& ex, const FillBitsArgs& g) {
  T* d = static_cast<T*>(g.dst);
  const T v = element_of_bits<T>(g.bits);
  return ex.each(g.n, [=] TO_HD_LAMBDA(int64_t i) { d[i] = v; });
}

template <class Exec>
int fill_bits(Exec& ex, const FillBitsArgs& g) {
  switch (g.esize) {
    case 1: return fill_bits_as<Exec, uint8_t>(ex, g);
    case 2: return fill_bits_as<Exec, uint16_t>(ex, g);
    case 4: return fill_bits_as<Exec, uint32_t>(ex, g);
    case 8: return fill_bits_as<Exec, uint64_t>(ex, g);
    default: return ex.fail("move_fill_bits: element size " + std::to_string(g.esize));
  }
}

// ---- move_scatter_nd: `out` already holds a copy of the data; G distinct slices of S elements
// are written, slice g at out[base[g]] combined with updates[t * S, +S) for its tuples t, in the
// tuples' order (offsets/tuple: a list per slice): none keeps the last tuple's update, add and mul
// combine them (float32, float64, int64, int32).
enum { TO_SCATTER_NONE = 0, TO_SCATTER_ADD = 1, TO_SCATTER_MUL = 2 };

struct ScatterNdArgs {
  void* out;
  const void* updates;
  int dtype, reduction;
  int64_t esize, groups, slice;      // esize, G, S
  const int64_t* base;               // [G] element offsets of the slices, device
  const int64_t* offsets;            // [G + 1], device
  const int64_t* tuple;              // [T], device
};

template <class Exec, class T>
int scatter_nd_as(Exec& ex, const ScatterNdArgs& g) {
  T* d = static_cast<T*>(g.out);
  const T* u = static_cast<const T*>(g.updates);
  return ex.each(g.groups * g.slice, [=] TO_HD_LAMBDA(int64_t i) {
    const int64_t grp = i / g.slice, e = i % g.slice;
    T v = d[g.base[grp] + e];
    for (int64_t t = g.offsets[grp]; t < g.offsets[grp + 1]; ++t) {
      const T x = u[g.tuple[t] * g.slice + e];
      v = g.reduction == TO_SCATTER_ADD ? T(v + x) : g.reduction == TO_SCATTER_MUL ? T(v * x) : x;
    }
    d[g.base[grp] + e] = v;
  });
}

template <class Exec>
int scatter_nd(Exec& ex, const ScatterNdArgs& g) {
  if (g.reduction == TO_SCATTER_NONE) {
    switch (g.esize) {
      case 1: return scatter_nd_as<Exec, uint8_t>(ex, g);
      case 2: return scatter_nd_as<Exec, uint16_t>(ex, g);
      case 4: return scatter_nd_as<Exec, uint32_t>(ex, g);
      case 8: return scatter_nd_as<Exec, uint64_t>(ex, g);
      default: return ex.fail("move_scatter_nd: element size " + std::to_string(g.esize));
    }
  }
  switch (g.dtype) {
    case TO_DTYPE_F32: return scatter_nd_as<Exec, float>(ex, g);
    case TO_DTYPE_F64: return scatter_nd_as<Exec, double>(ex, g);
    case TO_DTYPE_I64: return scatter_nd_as<Exec, int64_t>(ex, g);
    case TO_DTYPE_I32: return scatter_nd_as<Exec, int32_t>(ex, g);
    default: return ex.fail("move_scatter_nd: reduction of dtype " + std::to_string(g.dtype));
  }
}

// ---- move_scatter_nd_grad (float32): ddata (already a copy of dout) with the G written slices
// zeroed when `zero_written` (reduction none); dupdates[t] = dout[slice of tuple t] where take[t],
// else 0 (an update a later tuple overwrote).
struct ScatterNdGradArgs {
  const float* dout;
  float* ddata;                      // nullptr: not wanted
  float* dupdates;                   // nullptr: not wanted
  int64_t groups, tuples, slice;     // G, T, S
  int zero_written;
  const int64_t* group_base;         // [G], device
  const int64_t* tuple_base;         // [T], device
  const int64_t* take;               // [T], device
};

template <class Exec>
int scatter_nd_grad(Exec& ex, const ScatterNdGradArgs& args) {
  const ScatterNdGradArgs g = args;
  if (g.ddata && g.zero_written) {
    if (int s = ex.each(g.groups * g.slice, [=] TO_HD_LAMBDA(int64_t i) { g.ddata[g.group_base[i / g.slice] + i % g.slice] = 0.0f; }))
      return s;
  }
  if (!g.dupdates) return TO_CUDA_OK;
  return ex.each(g.tuples * g.slice, [=] TO_HD_LAMBDA(int64_t i) {
    const int64_t t = i / g.slice;
    g.dupdates[i] = g.take[t] ? g.dout[g.tuple_base[t] + i % g.slice] : 0.0f;
  });
}

template <class Exec>
void movement_kernels(KernelList<Exec>& out) {
  out.push_back(kernel<Exec, GatherAxesArgs, gather_axes<Exec>>("move_gather_axes"));
  out.push_back(kernel<Exec, SegmentSumArgs, segment_sum<Exec>>("move_segment_sum"));
  out.push_back(kernel<Exec, RowsArgs, float_rows<Exec>>("move_float_rows"));
  out.push_back(kernel<Exec, GatherElementsArgs, gather_elements<Exec>>("move_gather_elements"));
  out.push_back(kernel<Exec, TriluArgs, trilu<Exec>>("move_trilu"));
  out.push_back(kernel<Exec, OneHotArgs, one_hot<Exec>>("move_one_hot"));
  out.push_back(kernel<Exec, RangeArgs, range<Exec>>("move_range"));
  out.push_back(kernel<Exec, FillBitsArgs, fill_bits<Exec>>("move_fill_bits"));
  out.push_back(kernel<Exec, ScatterNdArgs, scatter_nd<Exec>>("move_scatter_nd"));
  out.push_back(kernel<Exec, ScatterNdGradArgs, scatter_nd_grad<Exec>>("move_scatter_nd_grad"));
}

}  // namespace tensoropt::cuda_kernels
