// Greedy min-fill / min-size elimination ordering with incremental score updates.
#include "planner/elimination_order.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tensoropt::planner {
namespace {

struct Score {
  long fill = 0;
  double log_size = 0;   // log of the product of the neighbours' configuration counts
  double log_ratio = 0;  // log_size minus the log of the node's own count
};

bool better(const Score& a, const Score& b) {
  if (a.fill != b.fill) return a.fill < b.fill;
  if (a.log_ratio != b.log_ratio) return a.log_ratio < b.log_ratio;
  return a.log_size < b.log_size;
}

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

Score score_of(const std::vector<std::vector<int>>& adj, const std::vector<double>& log_k, int w) {
  Score s;
  const auto& nb = adj[static_cast<size_t>(w)];
  for (size_t i = 0; i < nb.size(); ++i) {
    s.log_size += log_k[static_cast<size_t>(nb[i])];
    for (size_t j = i + 1; j < nb.size(); ++j) {
      if (!adjacent(adj, nb[i], nb[j])) ++s.fill;
    }
  }
  s.log_ratio = s.log_size - log_k[static_cast<size_t>(w)];
  return s;
}

}  // namespace

EliminationOrder greedy_elimination_order(const Problem& problem) {
  const int n = problem.num_nodes();
  const size_t un = static_cast<size_t>(n);
  std::vector<std::vector<int>> adj(un);
  for (const Problem::Edge& e : problem.edges) {
    connect(adj, e.u, e.v);
    connect(adj, e.v, e.u);
  }
  std::vector<double> log_k(un);
  for (int v = 0; v < n; ++v) log_k[static_cast<size_t>(v)] = std::log(problem.num_configs(v));

  std::vector<Score> score(un);
  for (int v = 0; v < n; ++v) score[static_cast<size_t>(v)] = score_of(adj, log_k, v);
  std::vector<bool> done(un, false);
  std::vector<int> level(un, 0);   // elimination-tree height below and including each node
  std::vector<bool> dirty(un, false);

  EliminationOrder out;
  for (int step = 0; step < n; ++step) {
    int x = -1;
    for (int v = 0; v < n; ++v) {
      if (done[static_cast<size_t>(v)]) continue;
      if (x < 0 || better(score[static_cast<size_t>(v)], score[static_cast<size_t>(x)])) x = v;
    }
    const std::vector<int> nb = adj[static_cast<size_t>(x)];
    done[static_cast<size_t>(x)] = true;
    out.order.push_back(x);
    out.scopes.push_back(nb);
    out.width = std::max(out.width, static_cast<int>(nb.size()));
    const int lx = ++level[static_cast<size_t>(x)];
    out.depth = std::max(out.depth, lx);
    if (!nb.empty()) {
      // The factor built here is consumed when the first of nb is eliminated; the others are in
      // that consumer's scope and inherit the level through it, so raising them all is exact.
      for (int a : nb) level[static_cast<size_t>(a)] = std::max(level[static_cast<size_t>(a)], lx);
    }
    for (int a : nb) {
      disconnect(adj, a, x);
      for (int b : nb) {
        if (a != b) connect(adj, a, b);
      }
    }
    for (int a : nb) {
      dirty[static_cast<size_t>(a)] = true;
      for (int b : adj[static_cast<size_t>(a)]) dirty[static_cast<size_t>(b)] = true;
    }
    for (int a : nb) {
      for (int b : adj[static_cast<size_t>(a)]) {
        if (dirty[static_cast<size_t>(b)]) {
          score[static_cast<size_t>(b)] = score_of(adj, log_k, b);
          dirty[static_cast<size_t>(b)] = false;
        }
      }
      if (dirty[static_cast<size_t>(a)]) {
        score[static_cast<size_t>(a)] = score_of(adj, log_k, a);
        dirty[static_cast<size_t>(a)] = false;
      }
    }
  }
  return out;
}

}  // namespace tensoropt::planner
