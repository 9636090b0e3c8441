#include "planner/space/space.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "graph/error.h"
#include "planner/parallel/collectives.h"

namespace tensoropt::planner {

namespace {

// Every tensor's collectives have sizes that fit in int64 (redistribute's requirement): at most
// 2^63 / 16,384 bytes = 512 TiB for one tensor on 16,384 GPUs. Per-device figures are smaller.
void check_sizes_fit(const Graph& g, const DeviceMesh& mesh, const Training& training) {
  for (const Tensor& t : g.tensors) {
    if (fits_on_mesh(t.shape, training.element_bytes(t), mesh)) continue;
    throw InputError(g.source_path + ": tensor '" + t.name + "' " + shape_str(t.shape) + " is too large to plan on " +
                     std::to_string(mesh.size()) + " GPUs: the bytes its collectives move would overflow 64 bits");
  }
}

// Uses of every tensor: (node, input position).
std::vector<std::vector<std::pair<int, int>>> tensor_uses(const Graph& g) {
  std::vector<std::vector<std::pair<int, int>>> uses(g.tensors.size());
  for (size_t n = 0; n < g.nodes.size(); ++n)
    for (size_t i = 0; i < g.nodes[n].inputs.size(); ++i)
      if (int t = g.nodes[n].inputs[i]; t >= 0) uses[static_cast<size_t>(t)].emplace_back(static_cast<int>(n), static_cast<int>(i));
  return uses;
}

}  // namespace

StrategySpace::StrategySpace(const Graph& graph, const DeviceMesh& mesh, const ComputeModel& compute,
                             const SpaceOptions& options)
    : graph_(&graph), mesh_(mesh), compute_(&compute), options_(options) {
  const Graph& g = graph;
  check_sizes_fit(g, mesh_, options_.training);
  node_costs_ = tensoropt::node_costs(g);
  // Ops computing model state alone whose result a backward reads (a transposed weight): the
  // runtime does not keep it, and runs the op again there (graph/step_schedule.h).
  reruns_.assign(g.nodes.size(), false);
  for (const NodeCost& c : node_costs_)
    for (int t : c.state_read) {
      const int p = g.tensors[static_cast<size_t>(t)].producer;
      if (p >= 0) reruns_[static_cast<size_t>(p)] = true;
    }
  const Uses uses = tensor_uses(g);  // in node order, then input position
  constant_reader_.assign(g.tensors.size(), {-1, -1});
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    const Tensor& x = g.tensors[t];
    if (x.kind == TensorKind::Constant && x.producer < 0 && !uses[t].empty()) constant_reader_[t] = uses[t].front();
  }
  schedule_ = step_schedule(g, /*input_gradients=*/false, /*recompute=*/{});
  requires_grad_ = schedule_.requires_grad;
  // The runtime's gradient buckets (planner::kGradientBucketBytes) hold all the gradients of a
  // model smaller than one: its one all-reduce is the bucket's, latency and all.
  double gradient_bytes = 0;
  for (const Tensor& t : g.tensors)
    if (t.kind == TensorKind::Parameter) gradient_bytes += static_cast<double>(t.elements()) * options_.training.gradient_bytes();
  bucket_bytes_ = std::clamp(gradient_bytes, 1.0, kGradientBucketBytes);
  is_output_.assign(g.tensors.size(), false);
  for (int t : g.outputs) is_output_[static_cast<size_t>(t)] = true;
  // Op variables first (node n is variable n), so readers' configurations are known below; then
  // variables for sources and multi-use activations.
  add_op_variables(uses);
  add_tensor_variables(uses);
  add_links(uses);
  add_op_configs();  // recompute needs the links
  name_variables();
  build_schedule();
  build_problem();
}

int64_t StrategySpace::local_bytes(int tensor, const Layout& layout) const {
  const Tensor& t = graph_->tensors[static_cast<size_t>(tensor)];
  return max_local_bytes(t.shape, options_.training.element_bytes(t), layout, mesh_);
}

Breakdown StrategySpace::breakdown(const std::vector<int>& assignment) const {
  TO_CHECK(assignment.size() == vars_.size());
  Breakdown b;
  for (size_t i = 0; i < vars_.size(); ++i) {
    TO_CHECK(assignment[i] >= 0 && static_cast<size_t>(assignment[i]) < var_terms_[i].size());
    b += var_terms_[i][static_cast<size_t>(assignment[i])];
  }
  for (size_t e = 0; e < links_.size(); ++e) {
    const Link& l = links_[e];
    add_link_terms(b, static_cast<int>(e), assignment[static_cast<size_t>(l.from)], assignment[static_cast<size_t>(l.to)]);
  }
  b[Term::Workspace] = workspace(assignment);
  return b;
}

Breakdown StrategySpace::breakdown_at_peak(const std::vector<int>& assignment) const {
  Breakdown b = breakdown(assignment);
  const StepPeak p = step_peak(assignment);
  b[Term::Activations] = p.activations;
  b[Term::Workspace] = p.transient;
  return b;
}

Cost StrategySpace::cost(const std::vector<int>& assignment) const {
  if (assignment.size() != vars_.size()) throw std::invalid_argument("strategy: one configuration per variable needed");
  for (size_t i = 0; i < vars_.size(); ++i)
    if (assignment[i] < 0 || assignment[i] >= static_cast<int>(vars_[i].configs.size()))
      throw std::invalid_argument("strategy: configuration out of range for " + vars_[i].name);
  // The Problem was validated when built; the sum is evaluate()'s own.
  Cost c = detail::evaluate_unchecked(problem_, assignment);
  c.memory += workspace(assignment) - peak_bound(assignment);
  return c;
}

}  // namespace tensoropt::planner
