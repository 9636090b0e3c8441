#include "planner/parallel/op_configs.h"

#include <algorithm>

namespace tensoropt::planner {
namespace {

bool splittable(DimRole r) {
  return r == DimRole::Batch || r == DimRole::Parallel || r == DimRole::Reduction;
}

// The layout of one operand whose axes map to dims by `axes`, under `axis_dim`; nullopt-like
// `ok = false` when an output would lose a split parallel dim.
Layout operand_layout(const std::vector<int>& axes, const std::vector<int>& axis_dim, const IterSpace& space,
                      bool is_output, bool additive, bool& ok) {
  std::vector<Placement> p;
  for (int d : axis_dim) {
    if (d < 0) {
      p.push_back(Placement::replicate());
      continue;
    }
    int tensor_axis = -1;
    for (size_t a = 0; a < axes.size(); ++a) {
      if (axes[a] == d) tensor_axis = static_cast<int>(a);
    }
    if (tensor_axis >= 0) {
      p.push_back(Placement::shard(tensor_axis));
    } else if (!is_output && !additive) {
      p.push_back(Placement::replicate());
    } else if (space.dims[static_cast<size_t>(d)].role == DimRole::Reduction) {
      p.push_back(Placement::partial());
    } else {
      ok = ok && !is_output;  // an output that loses a split parallel dim is no configuration
      p.push_back(Placement::replicate());
    }
  }
  return Layout(p);
}

}  // namespace

std::string OpConfig::str(const IterSpace& space) const {
  std::string s;
  for (size_t d = 0; d < space.dims.size(); ++d) {
    std::string axes;
    for (size_t m = 0; m < axis_dim.size(); ++m) {
      if (axis_dim[m] == static_cast<int>(d)) axes += std::to_string(m);
    }
    if (axes.empty()) continue;
    s += (s.empty() ? "" : " ") + space.dims[d].name + ":S" + axes;
  }
  return s.empty() ? "replicate" : s;
}

bool whole_shards(const OpConfig& c, const std::vector<Shape>& inputs, const std::vector<Shape>& outputs, const DeviceMesh& mesh) {
  auto whole = [&](const Layout& l, const Shape& shape) {
    std::vector<int64_t> parts(shape.size(), 1);
    for (int a = 0; a < l.size(); ++a)
      if (l[a].is_shard() && static_cast<size_t>(l[a].dim()) < shape.size()) parts[static_cast<size_t>(l[a].dim())] *= mesh.axis(a).size;
    for (size_t d = 0; d < shape.size(); ++d)
      if (shape[d] % parts[d] != 0) return false;
    return true;
  };
  for (size_t i = 0; i < inputs.size() && i < c.inputs.size(); ++i)
    if (!whole(c.inputs[i], inputs[i])) return false;
  for (size_t o = 0; o < outputs.size() && o < c.outputs.size(); ++o)
    if (!whole(c.outputs[o], outputs[o])) return false;
  return true;
}

std::vector<OpConfig> enumerate_configs(const IterSpace& space, const DeviceMesh& mesh,
                                        const std::vector<bool>& output_used) {
  std::vector<int> candidates;
  for (size_t d = 0; d < space.dims.size(); ++d) {
    if (splittable(space.dims[d].role)) candidates.push_back(static_cast<int>(d));
  }
  int axes = mesh.ndim();
  std::vector<OpConfig> out;
  // Odometer over (candidates + "none") per mesh axis; "none" (index 0) first, so the fully
  // replicated configuration comes first.
  std::vector<size_t> pick(static_cast<size_t>(axes), 0);
  for (;;) {
    OpConfig c;
    for (int m = 0; m < axes; ++m) {
      size_t k = pick[static_cast<size_t>(m)];
      c.axis_dim.push_back(k == 0 ? -1 : candidates[k - 1]);
    }
    bool ok = true;
    for (size_t d = 0; d < space.dims.size() && ok; ++d) {
      int64_t parts = 1;
      for (int m = 0; m < axes; ++m) {
        if (c.axis_dim[static_cast<size_t>(m)] == static_cast<int>(d)) parts *= mesh.axis(m).size;
      }
      ok = space.dims[d].size % parts == 0;
    }
    if (ok) {
      for (size_t i = 0; i < space.inputs.size(); ++i) {
        const bool additive = std::find(space.additive.begin(), space.additive.end(), static_cast<int>(i)) != space.additive.end();
        c.inputs.push_back(operand_layout(space.inputs[i], c.axis_dim, space, false, additive, ok));
      }
      for (size_t o = 0; o < space.outputs.size(); ++o) {
        if (o < output_used.size() && !output_used[o]) {
          // Nobody reads it: any configuration may drop a split dim from it (held replicated, each
          // device with its own values, as a BatchNormalization's running statistics under data
          // parallelism), but a dim it keeps stays split (its channel shard of them).
          bool unused_ok = true;
          c.outputs.push_back(operand_layout(space.outputs[o], c.axis_dim, space, true, false, unused_ok));
        } else {
          c.outputs.push_back(operand_layout(space.outputs[o], c.axis_dim, space, true, false, ok));
        }
      }
    }
    if (ok) out.push_back(std::move(c));
    int m = axes - 1;
    while (m >= 0 && ++pick[static_cast<size_t>(m)] > candidates.size()) pick[static_cast<size_t>(m--)] = 0;
    if (m < 0) break;
  }
  return out;
}

}  // namespace tensoropt::planner
