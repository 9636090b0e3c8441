// How Resize and Upsample (graph/ops/resample.cc) map output positions to input positions, for
// both backends' kernels (cpu/resample.cc, cuda/resample.cc, which move the data). Resize
// (opset 11-17) maps output position x of each axis to a source coordinate
//   half_pixel (default)  (x + 0.5) / s - 0.5     pytorch_half_pixel  the same, 0 when out = 1
//   align_corners         x (in - 1) / (out - 1)  asymmetric          x / s
//   tf_half_pixel_for_nn  (x + 0.5) / s
// with s the axis' scale (the `scales` input, or out / in when `sizes` is given), then
//   nearest  reads the source rounded by nearest_mode (round_prefer_floor, round_prefer_ceil,
//            floor, ceil), clamped to [0, in);
//   linear   weights the 2 neighbours floor(c), floor(c) + 1 by 1 - f, f (f = c - floor(c)),
//   cubic    the 4 neighbours floor(c) - 1 .. floor(c) + 2 by Keys' cubic with a = cubic_coeff_a;
//            exclude_outside zeroes the weights of neighbours outside the axis and renormalises;
//            neighbours outside read the edge element (the ONNX reference pads by 'edge'), one
//            axis at a time (separable).
// Upsample (opset 7-9) is Resize with asymmetric coordinates; nearest rounds down (scales >= 1).
// tf_crop_and_resize, antialias, axes and keep_aspect_ratio_policy other than stretch (opset 18)
// are refused (kernel_error naming the node), and so are scales of another rank than the input's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "launcher/runtime/kernel.h"

namespace tensoropt::runtime::resample {

struct ResizeSpec {
  std::string mode, coord, nearest;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  std::vector<double> scales;  // per axis
};

// The node's attributes, and the scales: out / in per axis when `sizes` is given, else `scales`
// (the input's values), else the Upsample-7 attribute.
ResizeSpec resize_spec(const Node& n, const Shape& in, const Shape& out, const std::vector<double>* scales, bool sizes);

// nearest: per axis, the source index of each output position.
std::vector<std::vector<int64_t>> nearest_maps(const ResizeSpec& r, const Shape& in, const Shape& out);

// linear and cubic: per axis, `taps` source indices and weights for each output position.
struct AxisTaps {
  int axis = 0;
  int64_t taps = 0, in = 0, out = 0;
  std::vector<int64_t> index;  // [out, taps], clamped to [0, in)
  std::vector<float> weight;   // [out, taps]
};

// The axes whose output is not a plain copy of the input, with their taps (weights from double).
std::vector<AxisTaps> interp_taps(const ResizeSpec& r, const Shape& in, const Shape& out);

}  // namespace tensoropt::runtime::resample
