#include "planner/strategy_summary.h"

#include <array>
#include <cstdio>

namespace tensoropt::planner {

StrategyCounts count_strategy(const StrategySpace& space, const std::vector<int>& assignment) {
  const DeviceMesh& mesh = space.mesh();
  StrategyCounts out;
  // FLOPs per axis on: DP, TP, rep.
  std::vector<std::array<double, 3>> weight(static_cast<size_t>(mesh.ndim()), std::array<double, 3>{});
  const std::vector<NodeCost>& costs = space.node_costs();
  for (size_t i = 0; i < space.variables().size(); ++i) {
    const Variable& v = space.variables()[i];
    const VarConfig& c = v.configs[static_cast<size_t>(assignment[i])];
    if (v.kind == VarKind::Parameter) {
      ++out.parameters;
      out.zero2 += c.zero == 2;
      continue;
    }
    if (v.kind != VarKind::Op) continue;
    out.recomputed_ops += c.recompute;
    double flops = costs[static_cast<size_t>(v.node)].fwd_flops + 1;  // +1: ops without FLOPs still vote a little
    const OpConfig& oc = v.op_configs[static_cast<size_t>(c.op_config)];
    for (int a = 0; a < mesh.ndim(); ++a) {
      int d = oc.axis_dim[static_cast<size_t>(a)];
      size_t kind = d < 0 ? 2 : v.space.dims[static_cast<size_t>(d)].role == DimRole::Batch ? 0 : 1;
      weight[static_cast<size_t>(a)][kind] += flops;
    }
  }
  static const char* names[] = {"DP", "TP", "rep"};
  for (const auto& w : weight) {
    size_t best = 0;
    for (size_t k = 1; k < 3; ++k)
      if (w[k] > w[best]) best = k;
    out.axis_roles.push_back(names[best]);
    // Every other kind of split on the axis, with its share of the FLOPs: a point that is mostly
    // data parallel but splits some convolutions over channels says so.
    std::string minor;
    const double total = w[0] + w[1] + w[2];
    for (size_t k = 0; k < 2; ++k) {
      if (k == best || w[k] <= 0) continue;
      const double pct = 100 * w[k] / total;
      char buf[32];
      if (pct < 1) std::snprintf(buf, sizeof buf, "<1%%");
      else std::snprintf(buf, sizeof buf, "%.0f%%", pct);
      minor += std::string(minor.empty() ? "" : ", ") + names[k] + " " + buf;
    }
    out.axis_minor.push_back(minor);
  }
  return out;
}

std::string summarize_strategy(const StrategySpace& space, const std::vector<int>& assignment) {
  StrategyCounts c = count_strategy(space, assignment);
  const DeviceMesh& mesh = space.mesh();
  std::string s;
  if (mesh.size() == 1) {
    s = "1 GPU";
  } else {
    for (int a = 0; a < mesh.ndim(); ++a) {
      s += (a ? " x " : "") + c.axis_roles[static_cast<size_t>(a)] + std::to_string(mesh.axis(a).size);
      if (!c.axis_minor[static_cast<size_t>(a)].empty()) s += " (" + c.axis_minor[static_cast<size_t>(a)] + ")";
    }
  }
  if (c.recomputed_ops) s += ", recompute " + std::to_string(c.recomputed_ops) + " ops";
  auto zero = [&](int n, int level) {
    if (n == 0) return;
    s += ", ZeRO-" + std::to_string(level) + (n == c.parameters ? "" : " on " + std::to_string(n) + "/" + std::to_string(c.parameters) + " params");
  };
  zero(c.zero2, 2);
  return s;
}

}  // namespace tensoropt::planner
