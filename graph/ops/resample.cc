// Resampling: Resize and its predecessor Upsample (nearest, linear, cubic), DepthToSpace and
// SpaceToDepth. N = output elements, S = spatial axes interpolated.
#include <cmath>

#include "graph/ops/helpers.h"

namespace tensoropt::ops {
namespace {

// Resize(X, roi?, scales?, sizes?) from opset 11; Upsample(X, scales) before. Output sizes come
// from `sizes` when given, else floor(input · scale) per axis.
Shape resize_shape(const OpView& v) {
  const Shape& x = v.in_shape(0);
  int scales_input = v.node.op_type == "Upsample" ? 1 : 2;
  if (v.node.op_type == "Resize" && v.has_input(3)) {
    auto sizes = v.in_ints(3, "sizes");
    if (sizes.size() != x.size()) throw OpError("sizes has " + std::to_string(sizes.size()) + " values for rank " + std::to_string(x.size()));
    for (int64_t s : sizes) {
      if (s < 0) throw OpError("negative size");
    }
    return sizes;
  }
  const Value* sc = v.in_value(scales_input);
  std::vector<double> scales;
  if (sc) {
    for (int64_t i = 0; i < sc->size(); ++i) scales.push_back(sc->real(i));
  } else if (const Attribute* a = v.node.attr("scales")) {
    scales = a->floats;
  } else {
    throw OpError("scales input is not a constant the importer could compute");
  }
  if (scales.size() != x.size()) throw OpError("scales has " + std::to_string(scales.size()) + " values for rank " + std::to_string(x.size()));
  Shape out;
  for (size_t a = 0; a < x.size(); ++a) {
    if (!(scales[a] > 0) || scales[a] > 1e6) throw OpError("scale must be positive");
    double o = std::floor(static_cast<double>(x[a]) * scales[a]);
    if (o >= 4e18) throw OpError("output too large");
    out.push_back(static_cast<int64_t>(o));
  }
  return out;
}

double interp_flops_per_output(const OpView& v) {
  std::string mode = v.node.attr_string("mode", "nearest");
  const Shape& x = v.in_shape(0);
  const Shape& y = v.out(0).shape;
  int resized = 0;
  for (size_t a = 0; a < x.size(); ++a) resized += x[a] != y[a];
  if (mode == "nearest") return 0;
  double taps = mode == "cubic" ? 4 : 2;
  return 2 * std::pow(taps, resized);  // a multiply and an add per tap
}

OpDef resize(const std::string& type) {
  OpDef d;
  d.type = type;
  d.family = "resampling";
  d.flops_doc = "nearest: 0 / 0; linear: 2·2^S·N / the same; cubic: 2·4^S·N / the same";
  d.saves_doc = "nothing (backward needs only shapes)";
  d.nondiff_inputs = {1, 2, 3};
  d.infer = [](const OpView& v) {
    if (!v.has_input(0)) throw OpError("missing input");
    return std::vector<OutType>{{v.in(0).dtype, resize_shape(v)}};
  };
  d.space = [](const OpView& v) {
    const Shape& x = v.in_shape(0);
    const Shape& y = v.out(0).shape;
    std::vector<DimRole> roles(y.size(), DimRole::Parallel);
    std::vector<int> xa(x.size());
    for (size_t a = 0; a < x.size(); ++a) {
      xa[a] = x[a] == y[a] ? static_cast<int>(a) : -1;
      if (x[a] != y[a]) roles[a] = DimRole::Fixed;
    }
    return axes_space(y, roles, {xa, {}, {}, {}});
  };
  d.fwd_flops = [](const OpView& v) { return interp_flops_per_output(v) * out_elems(v); };
  d.bwd_flops = [](const OpView& v, const std::vector<bool>& g) {
    return g[0] ? std::max(1.0, interp_flops_per_output(v)) * out_elems(v) : 0.0;
  };
  d.saved = [](const OpView&, const std::vector<bool>&) { return std::vector<Saved>{}; };
  return d;
}

// DepthToSpace [N,C,H,W] -> [N,C/b²,H·b,W·b]; SpaceToDepth the inverse.
OpDef depth_space(const std::string& type) {
  bool to_space = type == "DepthToSpace";
  OpDef d;
  d.type = type;
  d.family = "data movement";
  d.flops_doc = "0 / 0";
  d.saves_doc = "nothing";
  d.infer = [to_space](const OpView& v) {
    const Shape& x = v.in_shape(0);
    int64_t b = v.node.attr_int("blocksize", 0);
    if (x.size() != 4 || b <= 0) throw OpError("needs a rank-4 input and a positive blocksize");
    Shape out = x;
    if (to_space) {
      if (x[1] % (b * b) != 0) throw OpError("channels not divisible by blocksize²");
      out = {x[0], x[1] / (b * b), x[2] * b, x[3] * b};
    } else {
      if (x[2] % b != 0 || x[3] % b != 0) throw OpError("spatial size not divisible by blocksize");
      out = {x[0], x[1] * b * b, x[2] / b, x[3] / b};
    }
    return std::vector<OutType>{{v.in(0).dtype, out}};
  };
  d.space = [](const OpView& v) {
    const Shape& y = v.out(0).shape;
    return axes_space(y, {DimRole::Parallel, DimRole::Fixed, DimRole::Fixed, DimRole::Fixed}, {{0, -1, -1, -1}});
  };
  d.fwd_flops = [](const OpView&) { return 0.0; };
  d.bwd_flops = [](const OpView&, const std::vector<bool>&) { return 0.0; };
  d.saved = [](const OpView&, const std::vector<bool>&) { return std::vector<Saved>{}; };
  return d;
}

}  // namespace

void register_resample(std::vector<OpDef>& ops) {
  ops.push_back(resize("Resize"));
  ops.push_back(resize("Upsample"));
  ops.push_back(depth_space("DepthToSpace"));
  ops.push_back(depth_space("SpaceToDepth"));
}

}  // namespace tensoropt::ops
