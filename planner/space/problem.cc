// The strategy space's FT Problem: every variable configuration's and every link configuration
// pair's terms, costed once each while building (space.h "Cost terms"), as the Problem's node and
// edge costs, and the per-pair tables step_peak() reads.
#include <cstdint>
#include <utility>
#include <vector>

#include "planner/space/space.h"

namespace tensoropt::planner {

namespace {

// cls[k]: the class of keys[k], numbered by first appearance; first[c]: where class c first appears.
void classify(const std::vector<int32_t>& keys, std::vector<int32_t>& cls, std::vector<int32_t>& first) {
  cls.clear();
  first.clear();
  for (size_t k = 0; k < keys.size(); ++k) {
    size_t c = 0;
    while (c < first.size() && keys[static_cast<size_t>(first[c])] != keys[k]) ++c;
    if (c == first.size()) first.push_back(static_cast<int32_t>(k));
    cls.push_back(static_cast<int32_t>(c));
  }
}

}  // namespace

void StrategySpace::build_problem() {
  building_ = true;
  tensor_shape_id_.assign(graph_->tensors.size(), -1);
  add_variable_costs();
  // Every link's transitions first, so link_terms() reads them by index, while building and after.
  // A link's terms depend on its configurations only through the two layouts and whether each end
  // recomputes: each such class pair is costed once (by its first configurations) and copied.
  link_offset_.resize(links_.size());
  problem_.edges.reserve(links_.size());
  size_t pairs = 0;  // every link's configuration pairs: the per-pair tables are sized once
  for (const Link& l : links_) pairs += vars_[static_cast<size_t>(l.from)].configs.size() * vars_[static_cast<size_t>(l.to)].configs.size();
  comm_link_.reserve(pairs);
  link_held_.reserve(pairs);
  for (size_t e = 0; e < links_.size(); ++e) add_link_costs(e);
  for (size_t e = 0; e < links_.size(); ++e) {
    const Link& l = links_[e];
    peak_links_.push_back({l.from, l.to, position_[static_cast<size_t>(l.from)], position_[static_cast<size_t>(l.to)], link_position_[e],
                           static_cast<int32_t>(vars_[static_cast<size_t>(l.to)].configs.size()), link_offset_[e],
                           vars_[static_cast<size_t>(l.to)].kind == VarKind::Op});
  }
  building_ = false;
  comm_cache_ = {};
  layout_ids_ = {};
  shape_ids_ = {};
  tensor_shape_id_ = {};
  validate(problem_);
}

void StrategySpace::add_variable_costs() {
  var_terms_.resize(vars_.size());
  workspace_.resize(vars_.size());
  problem_.node_cost.resize(vars_.size());
  for (size_t i = 0; i < vars_.size(); ++i) {
    for (size_t k = 0; k < vars_[i].configs.size(); ++k) {
      const Variable& v = vars_[i];
      const VarConfig& c = v.configs[k];
      Breakdown b;
      switch (v.kind) {
        case VarKind::Op: b = op_terms(v, c); break;
        case VarKind::Parameter: b = parameter_terms(v, c); break;
        case VarKind::Input: b[Term::DataInputs] = static_cast<double>(local_bytes(v.tensor, c.layout)); break;
        case VarKind::Tensor: b = tensor_terms(v, c); break;
      }
      var_terms_[i].push_back(b);
      workspace_[i].push_back(v.kind == VarKind::Op          ? op_workspace(i, static_cast<int>(k))
                              : v.kind == VarKind::Parameter ? parameter_workspace(v, c)
                                                             : 0.0);
      problem_.node_cost[i].push_back({b.time(), b.memory()});
    }
  }
}

void StrategySpace::add_link_costs(size_t e) {
  std::vector<int32_t> from_ids, to_ids, from_class, to_class, from_first, to_first;
  std::vector<int32_t> keys, class_comm;
  std::vector<std::pair<double, double>> class_held;
  std::vector<Cost> costs;
  const Link& l = links_[e];
  const int ku = static_cast<int>(vars_[static_cast<size_t>(l.from)].configs.size());
  const int kv = static_cast<int>(vars_[static_cast<size_t>(l.to)].configs.size());
  for (int a = 0; a < ku; ++a) from_ids.push_back(layout_id(from_layout(l, a)));
  for (int b = 0; b < kv; ++b) to_ids.push_back(layout_id(to_layout(l, b)));
  for (int a = 0; a < ku; ++a) keys.push_back(from_ids[static_cast<size_t>(a)] * 2 + (recomputes(l.from, a) ? 1 : 0));
  classify(keys, from_class, from_first);
  keys.clear();
  for (int b = 0; b < kv; ++b) keys.push_back(to_ids[static_cast<size_t>(b)] * 2 + (recomputes(l.to, b) ? 1 : 0));
  classify(keys, to_class, to_first);
  // The transition and the held activations depend on the two layouts and recompute flags
  // only, so on the class pair too: found per class pair, then laid out per configuration pair.
  for (int32_t a : from_first)
    for (int32_t b : to_first) {
      const int32_t f = from_ids[static_cast<size_t>(a)], t = to_ids[static_cast<size_t>(b)];
      class_comm.push_back(f == t ? -1 : transition_index(l.tensor, from_layout(l, a), f, to_layout(l, b), t, l.gradient, regathers(l, a, b)));
      class_held.push_back(link_activations(static_cast<int>(e), a, b, f == t));
    }
  link_offset_[e] = comm_link_.size();
  for (int a = 0; a < ku; ++a)
    for (int b = 0; b < kv; ++b) {
      const size_t c = static_cast<size_t>(from_class[static_cast<size_t>(a)]) * to_first.size() + static_cast<size_t>(to_class[static_cast<size_t>(b)]);
      comm_link_.push_back(class_comm[c]);
      link_held_.push_back(class_held[c]);
    }
  for (int32_t a : from_first)
    for (int32_t b : to_first) {
      const Breakdown t = link_terms(static_cast<int>(e), a, b);
      costs.push_back({t.time(), t.memory()});
    }
  Problem::Edge edge;
  edge.u = l.from;
  edge.v = l.to;
  edge.cost.reserve(static_cast<size_t>(ku) * static_cast<size_t>(kv));
  for (int a = 0; a < ku; ++a)
    for (int b = 0; b < kv; ++b)
      edge.cost.push_back(costs[static_cast<size_t>(from_class[static_cast<size_t>(a)]) * to_first.size() +
                                static_cast<size_t>(to_class[static_cast<size_t>(b)])]);
  problem_.edges.push_back(std::move(edge));
}

}  // namespace tensoropt::planner
