#include "launcher/runtime/resample_plan.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>

namespace tensoropt::runtime::resample {
namespace {

double source_coord(const ResizeSpec& r, int64_t x, double scale, int64_t in, int64_t out) {
  const auto xd = static_cast<double>(x);
  if (r.coord == "align_corners") {
    return out == 1 ? 0.0 : xd * static_cast<double>(in - 1) / static_cast<double>(out - 1);
  }
  if (r.coord == "asymmetric") return xd / scale;
  if (r.coord == "tf_half_pixel_for_nn") return (xd + 0.5) / scale;
  if (r.coord == "pytorch_half_pixel" && out == 1) return 0.0;
  return (xd + 0.5) / scale - 0.5;
}

int64_t nearest_index(const ResizeSpec& r, double c, int64_t in) {
  double f = std::floor(c), frac = c - f;
  double v = r.nearest == "floor" ? f
           : r.nearest == "ceil" ? std::ceil(c)
           : r.nearest == "round_prefer_ceil" ? (frac < 0.5 ? f : f + 1)
           : (frac <= 0.5 ? f : f + 1);
  return std::clamp<int64_t>(static_cast<int64_t>(v), 0, in - 1);
}

std::vector<double> tap_weights(const ResizeSpec& r, double f) {
  if (r.mode == "linear") return {1 - f, f};
  const double A = r.cubic_a, g = 1 - f;
  return {((A * (f + 1) - 5 * A) * (f + 1) + 8 * A) * (f + 1) - 4 * A, ((A + 2) * f - (A + 3)) * f * f + 1,
          ((A + 2) * g - (A + 3)) * g * g + 1, ((A * (g + 1) - 5 * A) * (g + 1) + 8 * A) * (g + 1) - 4 * A};
}

}  // namespace

ResizeSpec resize_spec(const Node& n, const Shape& in, const Shape& out, const std::vector<double>* scales, bool sizes) {
  ResizeSpec r;
  const bool upsample = n.op_type == "Upsample";
  r.mode = n.attr_string("mode", "nearest");
  r.coord = upsample ? "asymmetric" : n.attr_string("coordinate_transformation_mode", "half_pixel");
  r.nearest = upsample ? "floor" : n.attr_string("nearest_mode", "round_prefer_floor");
  r.cubic_a = n.attr_float("cubic_coeff_a", -0.75);
  r.exclude_outside = n.attr_int("exclude_outside", 0) != 0;
  auto one_of = [](const std::string& v, std::initializer_list<const char*> allowed) {
    return std::find(allowed.begin(), allowed.end(), v) != allowed.end();
  };
  if (!one_of(r.mode, {"nearest", "linear", "cubic"}) || (upsample && r.mode == "cubic")) {
    kernel_error(n, "mode '" + r.mode + "' is not supported");
  }
  if (!one_of(r.coord, {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn"})) {
    kernel_error(n, "coordinate_transformation_mode '" + r.coord + "' is not supported");
  }
  if (!one_of(r.nearest, {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"})) {
    kernel_error(n, "nearest_mode '" + r.nearest + "' is not supported");
  }
  if (n.attr_int("antialias", 0) != 0 || n.attr("axes") ||
      n.attr_string("keep_aspect_ratio_policy", "stretch") != "stretch") {
    kernel_error(n, "antialias, axes and keep_aspect_ratio_policy (opset 18) are not supported");
  }
  if (sizes) {
    for (size_t a = 0; a < in.size(); ++a) r.scales.push_back(static_cast<double>(out[a]) / static_cast<double>(in[a]));
  } else if (scales) {
    r.scales = *scales;
  } else if (const Attribute* a = n.attr("scales")) {
    r.scales = a->floats;  // Upsample-7
  } else {
    kernel_error(n, "no scales");
  }
  if (r.scales.size() != in.size()) {
    kernel_error(n, "scales has " + std::to_string(r.scales.size()) + " values for " + std::to_string(in.size()) + " axes");
  }
  for (size_t a = 0; a < in.size(); ++a) {
    if (upsample && r.mode == "nearest" && r.scales[a] < 1) {
      kernel_error(n, "Upsample nearest with a scale below 1 is not supported");
    }
  }
  return r;
}

std::vector<std::vector<int64_t>> nearest_maps(const ResizeSpec& r, const Shape& in, const Shape& out) {
  std::vector<std::vector<int64_t>> m;
  for (size_t a = 0; a < in.size(); ++a) {
    std::vector<int64_t> map(static_cast<size_t>(out[a]));
    for (int64_t x = 0; x < out[a]; ++x) {
      map[static_cast<size_t>(x)] = nearest_index(r, source_coord(r, x, r.scales[a], in[a], out[a]), in[a]);
    }
    m.push_back(std::move(map));
  }
  return m;
}


// The axes whose output is not a plain copy of the input, with their taps.
std::vector<AxisTaps> interp_taps(const ResizeSpec& r, const Shape& in, const Shape& out) {
  std::vector<AxisTaps> axes;
  for (size_t a = 0; a < in.size(); ++a) {
    AxisTaps t{static_cast<int>(a), r.mode == "linear" ? 2 : 4, in[a], out[a], {}, {}};
    bool identity = in[a] == out[a];
    for (int64_t x = 0; x < out[a]; ++x) {
      double c = source_coord(r, x, r.scales[a], in[a], out[a]), fl = std::floor(c);
      std::vector<double> w = tap_weights(r, c - fl);
      auto first = static_cast<int64_t>(fl) - (t.taps == 4 ? 1 : 0);
      double total = 0;
      for (int64_t k = 0; k < t.taps; ++k) {
        int64_t i = first + k;
        if (r.exclude_outside && (i < 0 || i >= in[a])) w[static_cast<size_t>(k)] = 0;
        total += w[static_cast<size_t>(k)];
      }
      for (int64_t k = 0; k < t.taps; ++k) {
        double wk = r.exclude_outside ? w[static_cast<size_t>(k)] / total : w[static_cast<size_t>(k)];
        int64_t i = std::clamp<int64_t>(first + k, 0, in[a] - 1);
        t.index.push_back(i);
        t.weight.push_back(static_cast<float>(wk));
        identity = identity && (wk == 0 || (wk == 1 && i == x));
      }
    }
    if (!identity) axes.push_back(std::move(t));
  }
  return axes;
}

}  // namespace tensoropt::runtime::resample
