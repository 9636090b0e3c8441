#include "planner/explain.h"

#include <algorithm>
#include <cctype>

#include "graph/error.h"
#include "planner/baselines.h"

namespace tensoropt::planner {

std::string layer_of(const std::string& node_name) {
  // Component boundaries: the end of each component, as an index into node_name.
  std::vector<std::pair<size_t, size_t>> parts;  // [begin, end) of non-empty components
  size_t begin = 0;
  for (size_t i = 0; i <= node_name.size(); ++i) {
    if (i == node_name.size() || node_name[i] == '/' || node_name[i] == '.') {
      if (i > begin) parts.emplace_back(begin, i);
      begin = i + 1;
    }
  }
  if (parts.size() <= 1) return node_name;
  for (const auto& [b, e] : parts) {
    const bool digits = std::all_of(node_name.begin() + static_cast<std::ptrdiff_t>(b), node_name.begin() + static_cast<std::ptrdiff_t>(e),
                                    [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; });
    if (digits) return node_name.substr(parts.front().first, e - parts.front().first);
  }
  return node_name.substr(parts.front().first, parts.front().second - parts.front().first);
}

std::string describe_op(const StrategySpace& space, int var, int config) {
  const Variable& v = space.variables()[static_cast<size_t>(var)];
  const VarConfig& c = v.configs[static_cast<size_t>(config)];
  const OpConfig& oc = v.op_configs[static_cast<size_t>(c.op_config)];
  std::string s;
  for (size_t a = 0; a < oc.axis_dim.size(); ++a) {
    const int d = oc.axis_dim[a];
    if (d < 0) continue;
    const IterDim& dim = v.space.dims[static_cast<size_t>(d)];
    if (!s.empty()) s += ", ";
    s += std::string(dim_role_name(dim.role)) + " " + dim.name + " over axis " + std::to_string(a);
  }
  if (s.empty()) s = "replicated";
  if (c.recompute) s += ", recomputed";
  return s;
}

Explanation explain(const StrategySpace& space, const std::vector<int>& assignment, bool by_node) {
  const Graph& g = space.graph();
  const auto& vars = space.variables();
  TO_CHECK(assignment.size() == vars.size());
  for (size_t n = 0; n < g.nodes.size(); ++n) TO_CHECK(vars[n].kind == VarKind::Op && vars[n].node == static_cast<int>(n));
  Explanation out;
  // Rows, in the order of their first node.
  std::vector<int> row_of_node(g.nodes.size(), -1);
  std::map<std::string, int> row_index;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    std::string name = g.nodes[n].name;
    if (name.empty()) name.append("#").append(std::to_string(n));
    const std::string key = by_node ? name + "#" + std::to_string(n) : layer_of(name);
    auto [it, fresh] = row_index.emplace(key, static_cast<int>(out.rows.size()));
    if (fresh) {
      out.rows.emplace_back();
      out.rows.back().name = by_node ? name : key;
    }
    row_of_node[n] = it->second;
    out.rows[static_cast<size_t>(it->second)].nodes.push_back(static_cast<int>(n));
    out.rows[static_cast<size_t>(it->second)].ops[g.nodes[n].op_type]++;
  }
  // Each variable's row: ops their node's; the others their producer's, else their first reader's.
  std::vector<int> row_of_var(vars.size(), -1), producer(vars.size(), -1), first_reader(vars.size(), -1);
  for (const Link& l : space.links()) {
    const Variable& from = vars[static_cast<size_t>(l.from)];
    const Variable& to = vars[static_cast<size_t>(l.to)];
    if (from.kind == VarKind::Op && to.kind != VarKind::Op) producer[static_cast<size_t>(l.to)] = from.node;
    if (to.kind == VarKind::Op && from.kind != VarKind::Op) {
      int& r = first_reader[static_cast<size_t>(l.from)];
      r = r < 0 ? to.node : std::min(r, to.node);
    }
  }
  for (size_t i = 0; i < vars.size(); ++i) {
    const int node = vars[i].kind == VarKind::Op ? vars[i].node : producer[i] >= 0 ? producer[i] : first_reader[i];
    TO_CHECK(node >= 0);
    row_of_var[i] = row_of_node[static_cast<size_t>(node)];
  }
  for (size_t i = 0; i < vars.size(); ++i) {
    const Variable& v = vars[i];
    const int k = assignment[i];
    ExplainRow& row = out.rows[static_cast<size_t>(row_of_var[i])];
    row.terms += space.variable_terms(static_cast<int>(i), k);
    const VarConfig& c = v.configs[static_cast<size_t>(k)];
    if (v.kind == VarKind::Op) {
      const OpConfig& oc = v.op_configs[static_cast<size_t>(c.op_config)];
      const bool has_batch = std::any_of(v.space.dims.begin(), v.space.dims.end(), [](const IterDim& d) { return d.role == DimRole::Batch; });
      const bool splits = std::any_of(oc.axis_dim.begin(), oc.axis_dim.end(), [](int d) { return d >= 0; });
      if (splits && data_parallel(v, oc)) ++row.data_parallel;
      else if (splits) ++row.tensor_parallel;
      else if (has_batch) ++row.replicated;
      else ++row.data_parallel;  // nothing per sample to split: what DDP does too
      row.recomputed += c.recompute;
    } else if (v.kind == VarKind::Parameter) {
      ++row.parameters;
      row.zero2 += c.zero == 2;
      row.split_parameters += std::any_of(c.layout.placements().begin(), c.layout.placements().end(), [](const Placement& p) { return p.is_shard(); });
    }
  }
  for (size_t e = 0; e < space.links().size(); ++e) {
    const Link& l = space.links()[e];
    const Variable& to = vars[static_cast<size_t>(l.to)];
    const int row = to.kind == VarKind::Op ? row_of_var[static_cast<size_t>(l.to)] : row_of_var[static_cast<size_t>(l.from)];
    out.rows[static_cast<size_t>(row)].terms +=
        space.link_terms(static_cast<int>(e), assignment[static_cast<size_t>(l.from)], assignment[static_cast<size_t>(l.to)]);
  }
  for (const ExplainRow& r : out.rows) out.total += r.terms;
  out.workspace = space.workspace(assignment);
  out.total[Term::Workspace] += out.workspace;
  return out;
}

}  // namespace tensoropt::planner
