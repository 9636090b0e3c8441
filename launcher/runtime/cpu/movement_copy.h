// Data movement shared by the movement and resampling kernels (movement*.cc, resample.cc). Every
// function moves elements by their size in bytes, so one kernel serves float32, int64 and bool
// tensors alike; only scatter_add_axes, a gradient, is float32. Arrays are row-major and
// contiguous. `threads` bounds the OpenMP threads (parallel_for, util.h); every function is
// race-free for any thread count.
//
// Shapes legend: r = rank, N = output elements.
#pragma once

#include <cstdint>
#include <vector>

#include "graph/error.h"
#include "graph/ir.h"

namespace tensoropt::runtime::cpu {

// Calls fn(T{}) with T the unsigned integer type of `esize` bytes: a tensor element moved as bits.
// REQUIRES: esize is 1, 2, 4 or 8 (every dtype an Array holds).
template <typename Fn>
void by_element_size(int64_t esize, Fn&& fn) {
  switch (esize) {
    case 1: fn(uint8_t{}); break;
    case 2: fn(uint16_t{}); break;
    case 4: fn(uint32_t{}); break;
    case 8: fn(uint64_t{}); break;
    default: TO_CHECK(false && "element size is not 1, 2, 4 or 8");
  }
}

// Row r < rows (row_bytes long) of dst at dst + r * dst_stride is row r of src at
// src + r * src_stride (strides in bytes). Large single rows are split over the threads too.
void copy_rows(const void* src, int64_t src_stride, void* dst, int64_t dst_stride, int64_t rows, int64_t row_bytes,
               int threads);

// dst[0, n) = *value, elements of `esize` bytes.
void fill_elements(void* dst, int64_t n, const void* value, int64_t esize, int threads);

// dst = src with its axes permuted (Transpose): dst axis j is src axis perm[j]. Size-1 axes are
// dropped and axes that stay neighbours merged first; then rows are copied whole when the inner
// axis stays inner, else tiles of the two inner axes are transposed through a buffer (both
// sides touch whole cache lines).
void permute(const void* src, const Shape& src_shape, const std::vector<int64_t>& perm, void* dst, int64_t esize,
             int threads);

// Per-axis index maps (Slice, Pad, Tile, Expand, nearest Resize): output element (i0, .., ir-1) is
// source element (map[0][i0], .., map[r-1][ir-1]) of a row-major source of shape `src`; an entry
// -1 marks a position outside the source (Pad's constant border). map[a] holds one entry per
// output position of axis a, each in [-1, src[a]).
struct AxisMaps {
  Shape src;
  std::vector<std::vector<int64_t>> map;
  Shape out() const;
};

// Tile's maps (movement.cc; the CUDA Tile's backward too): out[i] = in[i mod in] axis by axis.
AxisMaps tile_maps(const Shape& in, const Shape& out);

// dst (shape m.out()) gathered from src; positions outside the source get *fill (which may be
// nullptr when no map entry is -1). Runs of consecutive source indices are copied with memcpy.
void gather_axes(const AxisMaps& m, const void* src, void* dst, int64_t esize, const void* fill, int threads);

// The transpose of gather_axes for a float32 gradient: dsrc (shape m.src, overwritten) is the sum
// of dout (shape m.out()) over the output positions that read each source element. Threads split
// the axes whose map is injective, so no two threads add into the same element.
void scatter_add_axes(const AxisMaps& m, const float* dout, float* dsrc, int threads);

}  // namespace tensoropt::runtime::cpu
