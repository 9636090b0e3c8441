// Greedy min-fill / min-size elimination ordering with incremental score updates.
#include "planner/ft/elimination_order.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

namespace tensoropt::planner {
namespace {

struct Score {
  long fill = 0;
  double log_size = 0;  // log of the product of the neighbours' configuration counts
  double work = 0;      // log of the estimated work (see the header), after fill
};

bool better(const Score& a, const Score& b) {
  if (a.fill != b.fill) return a.fill < b.fill;
  if (a.work != b.work) return a.work < b.work;
  return a.log_size < b.log_size;
}

// The factors built so far (the order's image of FT's): how many nodes each has folded in, and
// which are still to be consumed, per node of their scope.
struct Folds {
  std::vector<int64_t> nodes;             // [factor] nodes eliminated into it, itself included
  std::vector<bool> live;                 // [factor] not yet consumed
  std::vector<std::vector<int>> by_node;  // [node] factors whose scope holds it

  // The sum and the second largest of the folded counts of the live factors on node v.
  std::pair<int64_t, int64_t> on(int v) const {
    int64_t sum = 0, first = 0, second = 0;
    for (int id : by_node[static_cast<size_t>(v)]) {
      const size_t f = static_cast<size_t>(id);
      if (!live[f]) continue;
      sum += nodes[f];
      if (nodes[f] > first) {
        second = first;
        first = nodes[f];
      } else {
        second = std::max(second, nodes[f]);
      }
    }
    return {sum, second};
  }

  // Node x is eliminated with neighbours nb: its live factors are consumed into a new one.
  void eliminate(int x, const std::vector<int>& nb) {
    int64_t folded = 1;
    for (int id : by_node[static_cast<size_t>(x)]) {
      const size_t f = static_cast<size_t>(id);
      if (!live[f]) continue;
      folded += nodes[f];
      live[f] = false;
    }
    const int id = static_cast<int>(nodes.size());
    nodes.push_back(folded);
    live.push_back(true);
    for (int a : nb) by_node[static_cast<size_t>(a)].push_back(id);
  }
};

bool adjacent(const std::vector<std::vector<int>>& adj, int a, int b) {
  const auto& row = adj[static_cast<size_t>(a)];
  return std::binary_search(row.begin(), row.end(), b);
}

void connect(std::vector<std::vector<int>>& adj, int a, int b) {
  auto& row = adj[static_cast<size_t>(a)];
  auto it = std::lower_bound(row.begin(), row.end(), b);
  if (it == row.end() || *it != b) row.insert(it, b);
}

void disconnect(std::vector<std::vector<int>>& adj, int a, int b) {
  auto& row = adj[static_cast<size_t>(a)];
  auto it = std::lower_bound(row.begin(), row.end(), b);
  if (it != row.end() && *it == b) row.erase(it);
}

Score score_of(const std::vector<std::vector<int>>& adj, const std::vector<double>& log_k, const Folds& folds, int w) {
  Score s;
  const auto& nb = adj[static_cast<size_t>(w)];
  for (size_t i = 0; i < nb.size(); ++i) {
    s.log_size += log_k[static_cast<size_t>(nb[i])];
    for (size_t j = i + 1; j < nb.size(); ++j) {
      if (!adjacent(adj, nb[i], nb[j])) ++s.fill;
    }
  }
  const auto [folded, second] = folds.on(w);
  s.work = s.log_size - log_k[static_cast<size_t>(w)] + 0.5 * std::log1p(static_cast<double>(folded)) +
           std::log1p(static_cast<double>(second));
  return s;
}

// The interaction graph as elimination goes: adjacency (sorted rows), which nodes are gone, the
// elimination-tree levels, and the EliminationOrder recorded so far. One bookkeeping for the
// greedy order and for elimination_order_of.
struct Elimination {
  std::vector<std::vector<int>> adj;
  std::vector<bool> done;
  std::vector<int> level;  // elimination-tree height below and including each node
  EliminationOrder out;

  explicit Elimination(const Problem& problem)
      : adj(static_cast<size_t>(problem.num_nodes())),
        done(static_cast<size_t>(problem.num_nodes()), false),
        level(static_cast<size_t>(problem.num_nodes()), 0) {
    for (const Problem::Edge& e : problem.edges) {
      connect(adj, e.u, e.v);
      connect(adj, e.v, e.u);
    }
  }

  // Eliminates x: records its scope (its neighbours now), width and depth; its neighbours become
  // a clique. Returns the scope.
  std::vector<int> take(int x) {
    const std::vector<int> nb = adj[static_cast<size_t>(x)];
    done[static_cast<size_t>(x)] = true;
    out.order.push_back(x);
    out.scopes.push_back(nb);
    out.width = std::max(out.width, static_cast<int>(nb.size()));
    const int lx = ++level[static_cast<size_t>(x)];
    out.depth = std::max(out.depth, lx);
    // The factor built here is consumed when the first of nb is eliminated; the others are in
    // that consumer's scope and inherit the level through it, so raising them all is exact.
    for (int a : nb) {
      level[static_cast<size_t>(a)] = std::max(level[static_cast<size_t>(a)], lx);
      disconnect(adj, a, x);
      for (int b : nb)
        if (a != b) connect(adj, a, b);
    }
    return nb;
  }
};

}  // namespace

EliminationOrder greedy_elimination_order(const Problem& problem) {
  const int n = problem.num_nodes();
  const size_t un = static_cast<size_t>(n);
  Elimination g(problem);
  std::vector<double> log_k(un);
  for (int v = 0; v < n; ++v) log_k[static_cast<size_t>(v)] = std::log(problem.num_configs(v));
  Folds folds;
  folds.by_node.resize(un);
  std::vector<Score> score(un);
  for (int v = 0; v < n; ++v) score[static_cast<size_t>(v)] = score_of(g.adj, log_k, folds, v);
  std::vector<bool> dirty(un, false);
  for (int step = 0; step < n; ++step) {
    int x = -1;
    for (int v = 0; v < n; ++v) {
      if (g.done[static_cast<size_t>(v)]) continue;
      if (x < 0 || better(score[static_cast<size_t>(v)], score[static_cast<size_t>(x)])) x = v;
    }
    folds.eliminate(x, g.adj[static_cast<size_t>(x)]);
    const std::vector<int> nb = g.take(x);
    // Scores change for the scope and its neighbours: their fill and what they would consume.
    for (int a : nb) {
      dirty[static_cast<size_t>(a)] = true;
      for (int b : g.adj[static_cast<size_t>(a)]) dirty[static_cast<size_t>(b)] = true;
    }
    for (int a : nb) {
      for (int b : g.adj[static_cast<size_t>(a)]) {
        if (dirty[static_cast<size_t>(b)]) {
          score[static_cast<size_t>(b)] = score_of(g.adj, log_k, folds, b);
          dirty[static_cast<size_t>(b)] = false;
        }
      }
      if (dirty[static_cast<size_t>(a)]) {
        score[static_cast<size_t>(a)] = score_of(g.adj, log_k, folds, a);
        dirty[static_cast<size_t>(a)] = false;
      }
    }
  }
  return g.out;
}

EliminationOrder elimination_order_of(const Problem& problem, const std::vector<int>& order) {
  const int n = problem.num_nodes();
  if (order.size() != static_cast<size_t>(n)) {
    throw std::invalid_argument("elimination order: " + std::to_string(order.size()) + " steps for " +
                                std::to_string(n) + " nodes");
  }
  Elimination g(problem);
  for (int x : order) {
    if (x < 0 || x >= n || g.done[static_cast<size_t>(x)]) {
      throw std::invalid_argument("elimination order: node " + std::to_string(x) + " is not a node left to eliminate");
    }
    g.take(x);
  }
  return g.out;
}

}  // namespace tensoropt::planner
