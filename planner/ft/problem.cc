// Problem validation and the one strategy-cost sum.
#include "planner/ft/problem.h"

#include <algorithm>

#include <cmath>
#include <stdexcept>
#include <string>

namespace tensoropt::planner {
namespace {

bool valid_cost(Cost c) {
  return std::isfinite(c.time) && std::isfinite(c.memory) && c.time >= 0 && c.memory >= 0;
}

// where() names the culprit; it is called only on failure (validation runs on every solve).
template <class Where>
void check_cost(Cost c, const Where& where) {
  if (!valid_cost(c)) {
    throw std::invalid_argument(where() + ": cost (" + std::to_string(c.time) + ", " +
                                std::to_string(c.memory) + ") must be finite and non-negative");
  }
}

}  // namespace

void validate(const Problem& problem) {
  const int n = problem.num_nodes();
  for (int v = 0; v < n; ++v) {
    const auto& costs = problem.node_cost[static_cast<size_t>(v)];
    if (costs.empty()) {
      throw std::invalid_argument("problem: node " + std::to_string(v) +
                                  " has no configuration");
    }
    for (size_t k = 0; k < costs.size(); ++k) {
      check_cost(costs[k], [&] {
        return "problem: node " + std::to_string(v) + " configuration " + std::to_string(k);
      });
    }
  }
  for (size_t e = 0; e < problem.edges.size(); ++e) {
    const Problem::Edge& edge = problem.edges[e];
    const auto name = [&] {
      return "problem: edge " + std::to_string(e) + " (" + std::to_string(edge.u) + " -> " +
             std::to_string(edge.v) + ")";
    };
    if (edge.u < 0 || edge.u >= n || edge.v < 0 || edge.v >= n) {
      throw std::invalid_argument(name() + " names a node outside 0.." + std::to_string(n - 1));
    }
    if (edge.u == edge.v) throw std::invalid_argument(name() + " is a self-loop");
    const size_t expected = problem.node_cost[static_cast<size_t>(edge.u)].size() *
                            problem.node_cost[static_cast<size_t>(edge.v)].size();
    if (edge.cost.size() != expected) {
      throw std::invalid_argument(name() + " has " + std::to_string(edge.cost.size()) +
                                  " costs, expected K_u * K_v = " + std::to_string(expected));
    }
    for (size_t k = 0; k < edge.cost.size(); ++k) {
      check_cost(edge.cost[k], [&] { return name() + " entry " + std::to_string(k); });
    }
  }
}

Cost evaluate(const Problem& problem, const std::vector<int>& assignment) {
  validate(problem);
  if (assignment.size() != problem.node_cost.size()) {
    throw std::invalid_argument("evaluate: assignment has " + std::to_string(assignment.size()) +
                                " entries for " + std::to_string(problem.num_nodes()) + " nodes");
  }
  for (size_t v = 0; v < assignment.size(); ++v) {
    if (assignment[v] < 0 || assignment[v] >= problem.num_configs(static_cast<int>(v))) {
      throw std::invalid_argument("evaluate: node " + std::to_string(v) + " has configuration " +
                                  std::to_string(assignment[v]) + " outside 0.." +
                                  std::to_string(problem.num_configs(static_cast<int>(v)) - 1));
    }
  }
  return detail::evaluate_unchecked(problem, assignment);
}

std::vector<int64_t> row_major_strides(const Problem& problem, const std::vector<int>& scope) {
  std::vector<int64_t> stride(scope.size());
  int64_t s = 1;
  for (size_t i = scope.size(); i-- > 0;) {
    stride[i] = s;
    s *= problem.num_configs(scope[i]);
  }
  return stride;
}

std::vector<Cost> costs_by_sorted_nodes(const Problem& problem, const Problem::Edge& e) {
  if (e.u < e.v) return e.cost;
  const size_t ku = static_cast<size_t>(problem.num_configs(e.u));
  const size_t kv = static_cast<size_t>(problem.num_configs(e.v));
  std::vector<Cost> out(ku * kv);
  for (size_t a = 0; a < ku; ++a)
    for (size_t b = 0; b < kv; ++b) out[b * ku + a] = e.cost[a * kv + b];
  return out;
}

Cost detail::evaluate_unchecked(const Problem& problem, const std::vector<int>& assignment) {
  Cost total;
  for (size_t v = 0; v < problem.node_cost.size(); ++v) {
    total = total + problem.node_cost[v][static_cast<size_t>(assignment[v])];
  }
  for (const Problem::Edge& e : problem.edges) {
    const size_t ku = static_cast<size_t>(assignment[static_cast<size_t>(e.u)]);
    const size_t kv = static_cast<size_t>(assignment[static_cast<size_t>(e.v)]);
    total = total + e.cost[ku * problem.node_cost[static_cast<size_t>(e.v)].size() + kv];
  }
  return total;
}

Narrowed narrow(const Problem& problem, std::vector<std::vector<int>> keep) {
  const int n = problem.num_nodes();
  keep.resize(static_cast<size_t>(n));
  Narrowed out;
  for (int v = 0; v < n; ++v) {
    std::vector<int>& k = keep[static_cast<size_t>(v)];
    const int kv = problem.num_configs(v);
    if (k.empty()) {
      for (int c = 0; c < kv; ++c) k.push_back(c);
    }
    std::vector<bool> seen(static_cast<size_t>(kv), false);
    std::vector<Cost> costs;
    for (int c : k) {
      if (c < 0 || c >= kv || seen[static_cast<size_t>(c)]) {
        throw std::invalid_argument("narrow: node " + std::to_string(v) + " keeps configuration " + std::to_string(c) +
                                    (c < 0 || c >= kv ? ", outside 0.." + std::to_string(kv - 1) : " twice"));
      }
      seen[static_cast<size_t>(c)] = true;
      costs.push_back(problem.node_cost[static_cast<size_t>(v)][static_cast<size_t>(c)]);
    }
    out.problem.node_cost.push_back(std::move(costs));
  }
  for (const Problem::Edge& e : problem.edges) {
    Problem::Edge s{e.u, e.v, {}};
    const size_t kv = static_cast<size_t>(problem.num_configs(e.v));
    for (int a : keep[static_cast<size_t>(e.u)])
      for (int b : keep[static_cast<size_t>(e.v)]) s.cost.push_back(e.cost[static_cast<size_t>(a) * kv + static_cast<size_t>(b)]);
    out.problem.edges.push_back(std::move(s));
  }
  out.keep = std::move(keep);
  return out;
}

Problem fold_independent_edges(const Problem& problem) {
  Problem out;
  out.node_cost = problem.node_cost;
  for (const Problem::Edge& e : problem.edges) {
    const size_t ku = static_cast<size_t>(problem.num_configs(e.u));
    const size_t kv = static_cast<size_t>(problem.num_configs(e.v));
    // Every row the same: a cost per configuration of e.v (cost[0 * kv + k]); every column the
    // same: a cost per configuration of e.u (cost[k * kv + 0]). A node of one configuration has
    // both on each of its edges' sides.
    bool rows_equal = true, columns_equal = true;
    for (size_t i = 0; i < ku && (rows_equal || columns_equal); ++i)
      for (size_t j = 0; j < kv; ++j) {
        rows_equal = rows_equal && e.cost[i * kv + j] == e.cost[j];
        columns_equal = columns_equal && e.cost[i * kv + j] == e.cost[i * kv];
      }
    if (rows_equal && !(columns_equal && kv == 1)) {
      auto& costs = out.node_cost[static_cast<size_t>(e.v)];
      for (size_t k = 0; k < kv; ++k) costs[k] = costs[k] + e.cost[k];
    } else if (columns_equal) {
      auto& costs = out.node_cost[static_cast<size_t>(e.u)];
      for (size_t k = 0; k < ku; ++k) costs[k] = costs[k] + e.cost[k * kv];
    } else {
      out.edges.push_back(e);
    }
  }
  return out;
}

std::vector<std::vector<int>> neighbours(const Problem& problem) {
  std::vector<std::vector<int>> adj(static_cast<size_t>(problem.num_nodes()));
  for (const Problem::Edge& e : problem.edges) {
    adj[static_cast<size_t>(e.u)].push_back(e.v);
    adj[static_cast<size_t>(e.v)].push_back(e.u);
  }
  for (auto& a : adj) {
    std::sort(a.begin(), a.end());
    a.erase(std::unique(a.begin(), a.end()), a.end());
  }
  return adj;
}

double scope_entries(const Problem& problem, const std::vector<int>& scope) {
  double entries = 1;
  for (int v : scope) entries *= problem.num_configs(v);
  return entries;
}

}  // namespace tensoropt::planner
