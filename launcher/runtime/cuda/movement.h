// What the CUDA data-movement, resampling and shape kernels share (movement*.cc, resample.cc,
// shape.cc), host side: their operands, the index maps the host builds, and the two launches that
// carry most of them (device/movement.h): a gather through per-axis maps (any dtype) and its
// transpose, a deterministic segmented sum (float32). Under mixed precision the movement ops read
// bfloat16 as stored (OpKernel::takes_bf16): forward moves the stored elements, backward reads
// bfloat16 output gradients and writes float32 input gradients.
//
// Host and device: the integer operands that decide shapes and maps (Slice's starts, Pad's pads,
// Split's sizes, Resize's scales, the indices of Gather, GatherElements and ScatterND) are
// downloaded (a wait on the stream) and the maps and lists uploaded (another); the data itself never
// leaves the device. Index lists the host builds are in index order, so every gradient sums in the
// CPU kernels' order and is deterministic. Refusals (kernel_error) name the node: a gather of more
// than TO_MAX_RANK axes after merging, an index out of range.
//
// Shapes legend: r = rank, N = output elements, [outer, rows, width] for a segmented sum.
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "launcher/runtime/cpu/movement_copy.h"
#include "launcher/runtime/cuda/backend.h"
#include "launcher/runtime/cuda/shapes.h"

namespace tensoropt::runtime::cuda {

void register_movement_slice(CudaBackend& be, KernelTable& table);   // movement_slice.cc: Slice, Pad
void register_movement_gather(CudaBackend& be, KernelTable& table);  // movement_gather.cc: Gather ... OneHot

// An integer operand's values (int64 or int32), downloaded; empty for nullptr or no elements.
std::vector<int64_t> host_ints(CudaBackend& be, const Array* a);
// A float operand's values (float32 or float64), downloaded.
std::vector<double> host_reals(CudaBackend& be, const Array* a);
// `v` as a transient device array (at least one element, so an empty list still has an address).
Array device_ints(CudaBackend& be, const StepContext& ctx, const std::vector<int64_t>& v);

// One output axis of a gather (device/movement.h, move_gather_axes): the source index of output
// position i is table[i] when `table` is given (-1: outside, the fill element), else i % mod when
// mod > 0, else i; it advances the source by `stride` elements.
struct GatherAxis {
  int64_t out = 1, stride = 0, mod = 0;
  bool tabled = false;
  std::vector<int64_t> table;

  static GatherAxis plain(int64_t out, int64_t stride, int64_t mod = 0) { return {out, stride, mod, false, {}}; }
  static GatherAxis indexed(std::vector<int64_t> table, int64_t stride) {
    const auto out = static_cast<int64_t>(table.size());
    return {out, stride, 0, true, std::move(table)};
  }
};

// dst (N = the product of the axes' sizes elements of esize bytes) gathered from src. Size-1 axes
// without a table are dropped and neighbouring plain axes merged first; kernel_error when more
// than TO_MAX_RANK remain. The fill element: fill_src (a device element) when non-null, else the
// low bytes of fill_bits. `widen`: src is bfloat16 (esize 2) and dst float32.
void gather(CudaBackend& be, const StepContext& ctx, const Node& node, std::vector<GatherAxis> axes, const void* src,
            void* dst, int64_t esize, uint64_t fill_bits = 0, const void* fill_src = nullptr, bool widen = false);

// Per-axis index maps: cpu/movement_copy.h's, which both backends build the same way.
using AxisMaps = cpu::AxisMaps;

// dst (shape m.out()) = src gathered through m, any dtype.
void gather_maps(CudaBackend& be, const StepContext& ctx, const Node& node, const AxisMaps& m, const Array& src, Array& dst,
                 uint64_t fill_bits = 0, const void* fill_src = nullptr);
// The transpose for a gradient: dsrc (float32, shape m.src, overwritten) = dout (float32 or
// bfloat16 as stored, shape m.out())
// summed over the positions that read each source element; one segmented sum per axis whose map is
// not the identity (a copy when none), through transient intermediates.
void scatter_maps(CudaBackend& be, const StepContext& ctx, const Node& node, const AxisMaps& m, const Array& dout, Array& dsrc);

// dst = src (shape src_shape) with its axes permuted: dst axis j is src axis perm[j]. Any dtype,
// the same for both, or a bfloat16 src (a gradient as stored) into a float32 dst.
void permute(CudaBackend& be, const StepContext& ctx, const Node& node, const Array& src, const Shape& src_shape,
             const std::vector<int64_t>& perm, Array& dst);

// A segmented sum's entries: entry e adds weight[e] (1 when `weight` is empty) times source row
// src_row[e] into destination row target[e] (skipped when -1), entries of a row in index order.
struct Segments {
  std::vector<int64_t> src_row, target;
  std::vector<float> weight;
};
// dst [outer, rows, width] (every element written, float32) from src [outer, items, width], float32
// or (src_dtype) bfloat16.
void segment_sum(CudaBackend& be, const StepContext& ctx, const Segments& s, const void* src, float* dst, int64_t outer,
                 int64_t rows, int64_t items, int64_t width, std::string_view what, int src_dtype = TO_DTYPE_F32);

// dst = src, byte for byte (same bytes).
void copy_all(CudaBackend& be, const Array& src, Array& dst, std::string_view what);
// dst = src: byte for byte when their dtypes agree, else converted (float32 and bfloat16: a
// gradient as stored into a float32 one).
void copy_converted(CudaBackend& be, const Array& src, Array& dst, std::string_view what);

// Under mixed precision (OpKernel::takes_bf16) a movement op reads its inputs as stored and writes
// its output in the storage dtype `t`: a float input of the other float dtype (a float32 constant
// beside bfloat16 activations) is converted into `holder`, a transient (moving, then rounding, is
// rounding, then moving). Any other input is returned as it is.
const Array& as_dtype(CudaBackend& be, const StepContext& ctx, const Array& x, DType t, Array& holder);

}  // namespace tensoropt::runtime::cuda
