// A planning problem for FT: variables (ops) with configurations, node and edge costs.
//
// Node v has K_v = node_cost[v].size() configurations; choosing k costs node_cost[v][k]. Edge e
// joins nodes e.u and e.v and costs e.cost[k_u * K_v + k_v] (row-major K_u x K_v) when they choose
// k_u and k_v. A strategy (assignment) picks one configuration per node; its cost is the vector sum
// of every node and edge cost, computed by evaluate() and nowhere else. Edges need not form a DAG:
// any multigraph without self-loops is accepted; parallel edges are summed.
//
// Ownership: plain values. Thread-safety: free functions on const data, safe concurrently.
// Errors: std::invalid_argument, with the node or edge named.
#pragma once

#include <cstdint>
#include <vector>

#include "planner/ft/frontier.h"

namespace tensoropt::planner {

struct Problem {
  struct Edge {
    int u = 0;
    int v = 0;
    std::vector<Cost> cost;  // [K_u * K_v], row-major: cost[k_u * K_v + k_v]
  };
  std::vector<std::vector<Cost>> node_cost;  // [node][K_node]
  std::vector<Edge> edges;

  [[nodiscard]] int num_nodes() const { return static_cast<int>(node_cost.size()); }
  [[nodiscard]] int num_configs(int node) const {
    return static_cast<int>(node_cost[static_cast<size_t>(node)].size());
  }
};

// Throws std::invalid_argument unless: every node has at least one configuration; every edge
// joins two distinct existing nodes and has exactly K_u * K_v costs; every cost is finite and
// non-negative (FT's exactness and the epsilon guarantee rely on it).
void validate(const Problem& problem);

// The cost of one strategy. REQUIRES nothing: validates the problem and the assignment
// (one in-range configuration per node) and throws std::invalid_argument otherwise.
[[nodiscard]] Cost evaluate(const Problem& problem, const std::vector<int>& assignment);

// Strides of a table over `scope` laid out row-major, the last node fastest: entry index =
// sum of configuration * stride. FT's factors and its scalar companions' tables use this layout.
[[nodiscard]] std::vector<int64_t> row_major_strides(const Problem& problem, const std::vector<int>& scope);

// Edge e's costs laid out row-major over its two nodes sorted by id (the lower id's configuration
// major): the layout of FT's edge factors and of its scalar companions' tables.
[[nodiscard]] std::vector<Cost> costs_by_sorted_nodes(const Problem& problem, const Problem::Edge& e);

// A Problem narrowed to some configurations of each node: node v keeps the configurations
// keep[v] (distinct, in range, in the order given; empty or missing: all of them, and keep[v] is
// filled in), each edge the matching rows and columns. Configuration k of node v in `problem`
// is keep[v][k] in the original. Throws std::invalid_argument naming the node when an index is
// out of range or repeated.
struct Narrowed {
  Problem problem;
  std::vector<std::vector<int>> keep;  // [node] original configuration of each kept one
};
[[nodiscard]] Narrowed narrow(const Problem& problem, std::vector<std::vector<int>> keep);

// The same Problem with every edge whose cost does not depend on one of its nodes' configuration
// folded into the costs of its other node (one that depends on neither goes to e.v's, or to
// e.u's when e.v has a single configuration): such an edge adds to every strategy what its other
// node's configuration alone decides, so every assignment costs what it cost before, and the edge
// no longer joins its nodes in FT's elimination order. Every edge at a node of one configuration
// is such an edge (a weight that many layers read, once narrowed to one layout, stops joining the
// layers), and so is one whose costs a node's choices leave equal (a small weight stored whole,
// whose ZeRO choice its readers never see). Costs are compared exactly. Nodes keep their ids and
// configurations; other edges are kept as they are.
[[nodiscard]] Problem fold_independent_edges(const Problem& problem);

// Each node's neighbours (the other ends of its edges), sorted, each once.
[[nodiscard]] std::vector<std::vector<int>> neighbours(const Problem& problem);

// The entries of a factor over `scope`: the product of its nodes' configuration counts (a double,
// so that a too-wide scope is measured rather than overflowed).
[[nodiscard]] double scope_entries(const Problem& problem, const std::vector<int>& scope);

namespace detail {
// evaluate() without validation, for solvers that validated once. REQUIRES: validate(problem)
// passed and assignment is in range.
[[nodiscard]] Cost evaluate_unchecked(const Problem& problem, const std::vector<int>& assignment);
}  // namespace detail

}  // namespace tensoropt::planner
