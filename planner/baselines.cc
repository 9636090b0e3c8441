#include "planner/baselines.h"

#include <algorithm>

#include "graph/summary.h"

#include "planner/search/restricted.h"

namespace tensoropt::planner {

std::optional<std::vector<int>> fastest_restricted(const StrategySpace& space,
                                                   const std::vector<std::vector<int>>& allowed) {
  Approximation approximation;
  FtResult r = solve_with_fallback(space, allowed, {}, approximation, /*time_only=*/true);
  if (r.points.empty()) return std::nullopt;
  return std::move(r.points.front().assignment);
}

namespace {

// The dims of op variable v that some parameter input of the op also has.
std::vector<bool> parameter_dims(const StrategySpace& space, const Variable& v) {
  const Graph& g = space.graph();
  const Node& node = g.nodes[static_cast<size_t>(v.node)];
  std::vector<bool> out(v.space.dims.size(), false);
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    int t = node.inputs[i];
    if (t < 0 || g.tensors[static_cast<size_t>(t)].kind != TensorKind::Parameter) continue;
    for (int d : v.space.inputs[i])
      if (d >= 0) out[static_cast<size_t>(d)] = true;
  }
  return out;
}

}  // namespace

bool is_batch(const Variable& v, int d) { return d >= 0 && v.space.dims[static_cast<size_t>(d)].role == DimRole::Batch; }

namespace {

// Allowed configurations per variable for a baseline. `op_rule(v, config)` filters op configs
// (recompute never); `zero` is the one ZeRO level parameters may take (-1: any); with
// `replicated_params` every parameter is stored whole on every device, as DDP keeps it.
template <typename Rule>
std::vector<std::vector<int>> restriction(const StrategySpace& space, Rule op_rule, int zero, bool replicated_params) {
  std::vector<std::vector<int>> allowed(space.variables().size());
  for (size_t i = 0; i < space.variables().size(); ++i) {
    const Variable& v = space.variables()[i];
    for (size_t k = 0; k < v.configs.size(); ++k) {
      const VarConfig& c = v.configs[k];
      bool ok = true;
      if (v.kind == VarKind::Op) ok = !c.recompute && op_rule(v, v.op_configs[static_cast<size_t>(c.op_config)]);
      if (v.kind == VarKind::Parameter && zero >= 0) {
        // The level asked for where the space offers it (not for scalars or sharded storage).
        bool offered = std::any_of(v.configs.begin(), v.configs.end(), [&](const VarConfig& o) {
          return o.layout == c.layout && o.zero == zero;
        });
        ok = c.zero == (offered ? zero : 0);
      }
      if (v.kind == VarKind::Parameter && replicated_params)
        for (int a = 0; a < c.layout.size(); ++a) ok = ok && c.layout[a].is_replicate();
      if (ok) allowed[i].push_back(static_cast<int>(k));
    }
    if (allowed[i].empty()) return {};
  }
  return allowed;
}

// Ops of a data-parallel baseline that compute per-sample values but have no batch dim to split
// (so they run whole on every device): one line naming how many and the first, or "".
std::string unsplit_batch_caveat(const StrategySpace& space) {
  const Graph& g = space.graph();
  const std::vector<bool> per_sample = data_dependent(g);
  int count = 0;
  std::string first;
  for (const Variable& v : space.variables()) {
    if (v.kind != VarKind::Op) continue;
    const Node& n = g.nodes[static_cast<size_t>(v.node)];
    const bool has_batch = std::any_of(v.space.dims.begin(), v.space.dims.end(), [](const IterDim& d) { return d.role == DimRole::Batch; });
    const bool sampled = std::any_of(n.outputs.begin(), n.outputs.end(), [&](int t) { return t >= 0 && per_sample[static_cast<size_t>(t)]; });
    if (has_batch || !sampled || space.node_costs()[static_cast<size_t>(v.node)].fwd_flops <= 0) continue;
    if (count++ == 0) first = n.name;
  }
  if (count == 0) return "";
  std::string s = std::to_string(count) + (count == 1 ? " op" : " ops");
  s += " with no batch axis the planner can split ('";
  s += first;
  s += "': the batch is not an axis of its own there, e.g. an inner factor of an axis a Reshape merged) run whole on every GPU here, with the "
       "communication that takes; real DDP splits them";
  return s;
}

}  // namespace

bool data_parallel(const Variable& v, const OpConfig& c) {
  bool has_batch = std::any_of(v.space.dims.begin(), v.space.dims.end(), [](const IterDim& d) { return d.role == DimRole::Batch; });
  for (int d : c.axis_dim) {
    if (has_batch ? !is_batch(v, d) : d >= 0) return false;
  }
  return true;
}

std::vector<Baseline> find_baselines(const Graph& graph, const Cluster& cluster, int gpus, const ComputeModel& compute,
                                     const PlanOptions& options) {
  std::vector<Baseline> out;
  auto add = [&](std::string name, std::unique_ptr<StrategySpace> space, const std::vector<std::vector<int>>& allowed) {
    if (allowed.empty()) return;
    auto best = fastest_restricted(*space, allowed);
    if (!best) return;
    Baseline b;
    b.name = std::move(name);
    b.cost = space->cost(*best);
    b.assignment = std::move(*best);
    b.space = std::move(space);
    out.push_back(std::move(b));
  };
  const DeviceMesh dp_mesh = DeviceMesh::for_cluster(cluster, gpus);
  {
    auto space = std::make_unique<StrategySpace>(graph, dp_mesh, compute, options.space);
    auto allowed = restriction(*space, data_parallel, 0, true);
    const std::string caveat = unsplit_batch_caveat(*space);
    add("data parallel", std::move(space), allowed);
    if (!out.empty() && out.back().name == "data parallel") out.back().caveat = caveat;
  }
  if (options.space.zero && gpus > 1) {
    auto space = std::make_unique<StrategySpace>(graph, dp_mesh, compute, options.space);
    auto allowed = restriction(*space, data_parallel, 2, true);
    const std::string caveat = unsplit_batch_caveat(*space);
    add("ZeRO-2", std::move(space), allowed);
    if (!out.empty() && out.back().name == "ZeRO-2") out.back().caveat = caveat;
  }
  if (gpus > 1) {
    int g = cluster.gpus_per_node;
    std::vector<int> shape = gpus <= g || gpus % g != 0 ? std::vector<int>{gpus} : std::vector<int>{gpus / g, g};
    if (shape.size() == 2 && shape[0] == 1) shape = {g};
    auto space = std::make_unique<StrategySpace>(graph, DeviceMesh::with_shape(cluster, shape), compute, options.space);
    const int tp = static_cast<int>(shape.size()) - 1;
    auto megatron = [&](const Variable& v, const OpConfig& c) {
      std::vector<bool> pdims = parameter_dims(*space, v);
      bool has_param_split = false;
      for (const OpConfig& o : v.op_configs) {
        int d = o.axis_dim[static_cast<size_t>(tp)];
        has_param_split = has_param_split || (d >= 0 && pdims[static_cast<size_t>(d)]);
      }
      int d = c.axis_dim[static_cast<size_t>(tp)];
      if (has_param_split ? !(d >= 0 && pdims[static_cast<size_t>(d)]) : is_batch(v, d)) return false;
      for (int a = 0; a < tp; ++a) {
        int e = c.axis_dim[static_cast<size_t>(a)];
        bool has_batch = std::any_of(v.space.dims.begin(), v.space.dims.end(), [](const IterDim& x) { return x.role == DimRole::Batch; });
        if (has_batch ? !is_batch(v, e) : e >= 0) return false;
      }
      return true;
    };
    auto allowed = restriction(*space, megatron, 0, false);
    add("Megatron TP" + std::to_string(shape.back()) + (shape.size() == 2 ? " x DP" + std::to_string(shape[0]) : ""), std::move(space), allowed);
  }
  return out;
}

}  // namespace tensoropt::planner
