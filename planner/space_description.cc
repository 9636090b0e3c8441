#include "planner/space_description.h"

namespace tensoropt::planner {
namespace {

using nlohmann::ordered_json;

std::string axis_head(const DeviceMesh& mesh, int a) {
  return std::string("mesh axis ") + std::to_string(a) + " (" + std::to_string(mesh.axis(a).size) + "): ";
}

// Where op dim d shows: the first output axis that is d, and each weight's axes that are d.
std::string dim_places(const StrategySpace& space, const Variable& v, int d) {
  const Graph& g = space.graph();
  const Node& n = g.nodes[static_cast<size_t>(v.node)];
  std::string s;
  for (size_t o = 0; o < v.space.outputs.size() && s.empty(); ++o) {
    const auto& map = v.space.outputs[o];
    for (size_t ax = 0; ax < map.size(); ++ax)
      if (map[ax] == d) {
        s = (o ? std::string("output ") + std::to_string(o) + " axis " : std::string("output axis ")) + std::to_string(ax);
        break;
      }
  }
  for (size_t i = 0; i < v.space.inputs.size() && i < n.inputs.size(); ++i) {
    if (n.inputs[i] < 0 || g.tensors[static_cast<size_t>(n.inputs[i])].kind != TensorKind::Parameter) continue;
    const auto& map = v.space.inputs[i];
    for (size_t ax = 0; ax < map.size(); ++ax)
      if (map[ax] == d) s += (s.empty() ? "" : ", ") + ("weight '" + g.tensors[static_cast<size_t>(n.inputs[i])].name + "' axis " + std::to_string(ax));
  }
  return s;
}

ordered_json shape_json(const Shape& s) {
  ordered_json j = ordered_json::array();
  for (int64_t x : s) j.push_back(x);
  return j;
}

}  // namespace

std::string config_meaning(const StrategySpace& space, const Variable& v, size_t k) {
  const DeviceMesh& mesh = space.mesh();
  const VarConfig& c = v.configs.at(k);
  std::string s;
  for (int a = 0; a < mesh.ndim(); ++a) {
    s += a ? "; " : "";
    s += axis_head(mesh, a);
    if (v.kind == VarKind::Op) {
      const int d = v.op_configs[static_cast<size_t>(c.op_config)].axis_dim[static_cast<size_t>(a)];
      if (d < 0) {
        s += "replicates";
        continue;
      }
      const IterDim& dim = v.space.dims[static_cast<size_t>(d)];
      s += "splits " + dim.name + " (" + std::string(dim_role_name(dim.role)) + ", " + std::to_string(dim.size) + ")";
      const std::string places = dim_places(space, v, d);
      if (!places.empty()) s += " = " + places;
      if (dim.role == DimRole::Reduction) s += ", leaving partial sums";
      continue;
    }
    const Placement& p = c.layout[a];
    const int batch = space.graph().tensors[static_cast<size_t>(v.tensor)].batch_axis;
    if (p.is_replicate()) s += "whole";
    else if (p.is_partial()) s += "partial sums";
    else s += std::string("splits axis ") + std::to_string(p.dim()) + (p.dim() == batch ? " (batch)" : "");
  }
  if (c.recompute) s += "; recompute in backward";
  if (c.zero == 2) s += "; ZeRO-2: gradient and optimizer state split over the axes that keep it whole";
  return s;
}

void describe_variable(const StrategySpace& space, const Variable& v, ordered_json& out) {
  const Graph& g = space.graph();
  static const char* kinds[] = {"op", "param", "input", "tensor"};
  out["kind"] = kinds[static_cast<size_t>(v.kind)];
  if (v.kind == VarKind::Op) {
    const Node& n = g.nodes[static_cast<size_t>(v.node)];
    out["node"] = n.name.empty() ? std::string("#") + std::to_string(v.node) : n.name;  // std::string(...): "lit" + std::string&& trips GCC 12 -O3 -Wrestrict
    out["op"] = n.op_type;
    ordered_json outputs = ordered_json::array(), dims = ordered_json::array(), weights = ordered_json::array();
    for (int t : n.outputs) {
      if (t < 0) continue;
      const Tensor& x = g.tensors[static_cast<size_t>(t)];
      outputs.push_back({{"shape", shape_json(x.shape)}, {"batch_axis", x.batch_axis}});
    }
    for (const IterDim& d : v.space.dims) dims.push_back({{"name", d.name}, {"size", d.size}, {"role", dim_role_name(d.role)}});
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const int t = n.inputs[i];
      if (t < 0 || g.tensors[static_cast<size_t>(t)].kind != TensorKind::Parameter) continue;
      weights.push_back({{"name", g.tensors[static_cast<size_t>(t)].name}, {"shape", shape_json(g.tensors[static_cast<size_t>(t)].shape)}, {"input", i}});
    }
    out["outputs"] = outputs;
    out["dims"] = dims;
    out["weights"] = weights;
  } else {
    const Tensor& x = g.tensors[static_cast<size_t>(v.tensor)];
    out["tensor"] = x.name;
    out["shape"] = shape_json(x.shape);
    out["batch_axis"] = x.batch_axis;
  }
  ordered_json meaning = ordered_json::array();
  for (size_t k = 0; k < v.configs.size(); ++k) meaning.push_back(config_meaning(space, v, k));
  out["meaning"] = meaning;
}

}  // namespace tensoropt::planner
