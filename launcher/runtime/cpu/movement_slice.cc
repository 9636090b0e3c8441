// CPU kernels of Slice and Pad (graph/ops/movement.cc): each output axis reads its input axis through
// an index map (AxisMaps, movement_copy.h), and backward scatter-adds through the same maps.
//
// Shapes legend: r = rank, n = an axis' input size, i = an output position along it.
#include <algorithm>
#include <functional>
#include <cstring>
#include <string>

#include "launcher/runtime/cpu/movement_copy.h"
#include "launcher/runtime/cpu/movement_kernels.h"
#include "launcher/runtime/cpu/util.h"

namespace tensoropt::runtime::cpu {

std::vector<std::vector<int64_t>> slice_index_maps(const Node& node, const Shape& in,
                                                   const std::function<std::vector<int64_t>(const Array*)>& ints,
                                                   const Array* starts_in, const Array* ends_in, const Array* axes_in,
                                                   const Array* steps_in) {
  std::vector<int64_t> starts, ends, axes, steps;
  if (auto s = node.attr_ints("starts")) {
    starts = *s;
    ends = node.attr_ints("ends").value_or(std::vector<int64_t>{});
    axes = node.attr_ints("axes").value_or(std::vector<int64_t>{});
  } else {
    starts = ints(starts_in);
    ends = ints(ends_in);
    axes = ints(axes_in);
    steps = ints(steps_in);
  }
  const int r = static_cast<int>(in.size());
  std::vector<std::vector<int64_t>> m;
  for (int64_t n : in) {
    std::vector<int64_t> map(static_cast<size_t>(n));
    for (size_t i = 0; i < map.size(); ++i) map[i] = static_cast<int64_t>(i);
    m.push_back(std::move(map));
  }
  for (size_t k = 0; k < starts.size(); ++k) {
    auto a = static_cast<size_t>(norm_axis(axes.empty() ? static_cast<int64_t>(k) : axes[k], r));
    const int64_t n = in[a], step = steps.empty() ? 1 : steps[k];
    int64_t s = starts[k] < 0 ? starts[k] + n : starts[k];
    int64_t e = ends[k] < 0 ? ends[k] + n : ends[k];
    int64_t count;
    if (step > 0) {
      s = std::clamp<int64_t>(s, 0, n);
      e = std::clamp<int64_t>(e, 0, n);
      count = e > s ? (e - s + step - 1) / step : 0;
    } else {
      s = std::clamp<int64_t>(s, 0, n - 1);
      e = std::clamp<int64_t>(e, -1, n - 1);
      count = s > e ? (s - e - step - 1) / -step : 0;
    }
    std::vector<int64_t>& map = m[a];
    map.resize(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) map[static_cast<size_t>(i)] = s + i * step;
  }
  return m;
}

namespace {

// ---- Slice(x, starts, ends, axes?, steps?): out[i] = x[start + i * step] along each sliced axis
// (slice_index_maps, movement_kernels.h); dx = dout scattered back to those positions, 0 elsewhere.
AxisMaps slice_maps(const Node& node, const Shape& in, const Array* starts_in, const Array* ends_in,
                    const Array* axes_in, const Array* steps_in) {
  return {in, slice_index_maps(node, in, ints_of, starts_in, ends_in, axes_in, steps_in)};
}

void slice_forward(const OpCall& c) {
  keep_inputs(c, {1, 2, 3, 4});
  const Array& x = *c.in[0];
  AxisMaps m = slice_maps(c.node, x.shape(), optional_input(c, 1), optional_input(c, 2), optional_input(c, 3),
                          optional_input(c, 4));
  TO_CHECK(m.out() == c.out[0]->shape());
  gather_axes(m, x.raw(), c.out[0]->raw(), dtype_size(x.dtype()), /*fill=*/nullptr, c.ctx.threads);
}

void slice_backward(const GradCall& c) {
  Array& dx = *c.din[0];
  AxisMaps m = slice_maps(c.node, dx.shape(), kept(c, 0), kept(c, 1), kept(c, 2), kept(c, 3));
  scatter_add_axes(m, c.dout[0]->data<float>(), dx.data<float>(), c.ctx.threads);
}

// ---- Pad(x, pads, constant_value?, axes?; mode): out dims = n + pads[a] + pads[a + r] (a pad may
// be negative: a crop). Along axis a, out[i] reads x[j] with j = i - pads[a]: where j is outside
// [0, n), mode constant writes the constant, edge reads x[clamp(j)], reflect reads x mirrored
// about the end elements (numpy's 'reflect', period 2(n - 1)). Opset < 11 gives pads and the
// constant as attributes; opset 18's axes name the padded axes. dx = dout scatter-added through
// the same map (edge and reflect add several outputs into one input).
AxisMaps pad_maps(const Node& node, const Shape& in, const Array* pads_in, const Array* axes_in) {
  const int r = static_cast<int>(in.size());
  std::vector<int64_t> pads = node.attr_ints("pads").value_or(ints_of(pads_in));
  if (axes_in) {
    std::vector<int64_t> axes = ints_of(axes_in), full(2 * static_cast<size_t>(r), 0);
    for (size_t k = 0; k < axes.size(); ++k) {
      auto a = static_cast<size_t>(norm_axis(axes[k], r));
      full[a] = pads[k];
      full[a + static_cast<size_t>(r)] = pads[k + axes.size()];
    }
    pads = full;
  }
  const std::string mode = node.attr_string("mode", "constant");
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
        int64_t period = 2 * (n - 1);
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

void pad_forward(const OpCall& c) {
  keep_inputs(c, {1, 3});
  const Array& x = *c.in[0];
  AxisMaps m = pad_maps(c.node, x.shape(), optional_input(c, 1), optional_input(c, 3));
  TO_CHECK(m.out() == c.out[0]->shape());
  uint64_t fill = 0;
  const Array* value = optional_input(c, 2);
  if (value && value->numel() > 0) {
    if (value->dtype() != x.dtype()) kernel_error(c.node, "constant_value is not of the data's type");
    std::memcpy(&fill, value->raw(), static_cast<size_t>(dtype_size(x.dtype())));
  } else if (double v = c.node.attr_float("value", 0.0); !element_bits(x.dtype(), v, static_cast<int64_t>(v), fill)) {
    kernel_error(c.node, std::string("cannot pad ") + std::string(dtype_name(x.dtype())) + " data");
  }
  gather_axes(m, x.raw(), c.out[0]->raw(), dtype_size(x.dtype()), &fill, c.ctx.threads);
}

void pad_backward(const GradCall& c) {
  Array& dx = *c.din[0];
  AxisMaps m = pad_maps(c.node, dx.shape(), kept(c, 0), kept(c, 1));
  scatter_add_axes(m, c.dout[0]->data<float>(), dx.data<float>(), c.ctx.threads);
}

}  // namespace

void register_movement_slice(KernelTable& table) {
  table["Slice"] = {slice_forward, slice_backward};
  table["Pad"] = {pad_forward, pad_backward};
}

}  // namespace tensoropt::runtime::cpu
