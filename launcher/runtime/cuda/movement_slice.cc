// CUDA kernels of Slice and Pad (graph/ops/movement.cc), host side, as cpu/movement_slice.cc:
// each output axis reads its input axis through an index map the host builds from the downloaded
// operands (movement.h's gather_maps, any dtype), and backward sums through the same maps
// (scatter_maps, float32, deterministic).
//
// Shapes legend: r = rank, n = an axis' input size, i = an output position along it.
#include <algorithm>
#include <string>

#include "launcher/runtime/cpu/movement_kernels.h"
#include "launcher/runtime/cuda/movement.h"

namespace tensoropt::runtime::cuda {
namespace {

using cpu::kept;
using cpu::keep_inputs;
using cpu::norm_axis;
using cpu::optional_input;

// ---- Slice(x, starts, ends, axes?, steps?): cpu::slice_index_maps's positions (the operands
// downloaded); dx = dout summed back to those positions, 0 elsewhere.
AxisMaps slice_maps(CudaBackend& be, const Node& node, const Shape& in, const Array* starts_in, const Array* ends_in,
                    const Array* axes_in, const Array* steps_in) {
  const auto ints = [&be](const Array* a) { return host_ints(be, a); };
  return {in, cpu::slice_index_maps(node, in, ints, starts_in, ends_in, axes_in, steps_in)};
}

void slice_forward(CudaBackend& be, const OpCall& c) {
  keep_inputs(c, {1, 2, 3, 4});
  Array holder;
  const Array& x = as_dtype(be, c.ctx, *c.in[0], c.out[0]->dtype(), holder);
  const AxisMaps m = slice_maps(be, c.node, x.shape(), optional_input(c, 1), optional_input(c, 2), optional_input(c, 3),
                                optional_input(c, 4));
  TO_CHECK(m.out() == c.out[0]->shape());
  gather_maps(be, c.ctx, c.node, m, x, *c.out[0]);
}

void slice_backward(CudaBackend& be, const GradCall& c) {
  Array& dx = *c.din[0];
  const AxisMaps m = slice_maps(be, c.node, dx.shape(), kept(c, 0), kept(c, 1), kept(c, 2), kept(c, 3));
  scatter_maps(be, c.ctx, c.node, m, *c.dout[0], dx);
}

// ---- Pad(x, pads, constant_value?, axes?; mode): out dims = n + pads[a] + pads[a + r] (a pad may
// be negative: a crop). Along axis a, out[i] reads x[j] with j = i - pads[a]: where j is outside
// [0, n), mode constant writes the constant (read on the device from constant_value, or the
// attribute's bits), edge reads x[clamp(j)], reflect reads x mirrored about the end elements
// (numpy's 'reflect', period 2(n - 1)). dx = dout summed through the same map.
AxisMaps pad_maps(CudaBackend& be, const Node& node, const Shape& in, const Array* pads_in, const Array* axes_in) {
  const int r = static_cast<int>(in.size());
  std::vector<int64_t> pads = node.attr_ints("pads").value_or(host_ints(be, pads_in));
  if (axes_in) {
    const std::vector<int64_t> axes = host_ints(be, axes_in);
    std::vector<int64_t> full(2 * static_cast<size_t>(r), 0);
    for (size_t k = 0; k < axes.size(); ++k) {
      auto a = static_cast<size_t>(norm_axis(axes[k], r));
      full[a] = pads[k];
      full[a + static_cast<size_t>(r)] = pads[k + axes.size()];
    }
    pads = full;
  }
  const std::string mode = node.attr_string("mode", "constant");
  if (mode != "constant" && mode != "edge" && mode != "reflect") kernel_error(node, "mode '" + mode + "' is not supported");
  AxisMaps m{in, {}};
  for (size_t a = 0; a < in.size(); ++a) {
    const int64_t n = in[a], begin = pads[a], out = n + begin + pads[a + in.size()];
    if (n == 0 && out > 0 && mode != "constant") kernel_error(node, "mode '" + mode + "' cannot pad an empty axis");
    std::vector<int64_t> map(static_cast<size_t>(out));
    for (int64_t i = 0; i < out; ++i) {
      int64_t j = i - begin;
      if (mode == "edge") {
        j = std::clamp<int64_t>(j, 0, n - 1);
      } else if (mode == "reflect") {
        const int64_t period = 2 * (n - 1);
        j = period == 0 ? 0 : ((j % period) + period) % period;
        if (j >= n) j = period - j;
      } else if (j < 0 || j >= n) {
        j = -1;
      }
      map[static_cast<size_t>(i)] = j;
    }
    m.map.push_back(std::move(map));
  }
  return m;
}

void pad_forward(CudaBackend& be, const OpCall& c) {
  keep_inputs(c, {1, 3});
  const Array& x = *c.in[0];
  const AxisMaps m = pad_maps(be, c.node, x.shape(), optional_input(c, 1), optional_input(c, 3));
  TO_CHECK(m.out() == c.out[0]->shape());
  uint64_t fill = 0;
  const void* fill_src = nullptr;
  const Array* value = optional_input(c, 2);
  if (value && value->numel() > 0) {
    if (value->dtype() != x.dtype()) kernel_error(c.node, "constant_value is not of the data's type");
    fill_src = value->raw();
  } else if (double v = c.node.attr_float("value", 0.0); !cpu::element_bits(x.dtype(), v, static_cast<int64_t>(v), fill)) {
    kernel_error(c.node, std::string("cannot pad ") + std::string(dtype_name(x.dtype())) + " data");
  }
  gather_maps(be, c.ctx, c.node, m, x, *c.out[0], fill, fill_src);
}

void pad_backward(CudaBackend& be, const GradCall& c) {
  Array& dx = *c.din[0];
  const AxisMaps m = pad_maps(be, c.node, dx.shape(), kept(c, 0), kept(c, 1));
  scatter_maps(be, c.ctx, c.node, m, *c.dout[0], dx);
}

}  // namespace

void register_movement_slice(CudaBackend& be, KernelTable& table) {
  table["Slice"] = {[&be](const OpCall& c) { slice_forward(be, c); }, [&be](const GradCall& c) { slice_backward(be, c); }};
  table["Slice"].takes_bf16 = true;  // bfloat16 as stored; Pad (a constant of the data's dtype) reads float32 copies
  table["Pad"] = {[&be](const OpCall& c) { pad_forward(be, c); }, [&be](const GradCall& c) { pad_backward(be, c); }};
}

}  // namespace tensoropt::runtime::cuda
