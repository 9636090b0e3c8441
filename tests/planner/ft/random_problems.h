// Random FT problems for tests: a portable fixed-seed generator, graph shapes (chains, diamonds,
// skips, multi-consumer tensors, random DAGs) with integer costs, and checks on results that share
// no code with the solvers (exhaustive enumeration, coverage).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "planner/ft/ft.h"
#include "planner/ft/problem.h"

namespace tensoropt::planner::test {

// Fixed-seed generator with a portable draw (std distributions differ between libraries).
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() {  // splitmix64
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  int below(int n) { return static_cast<int>(next() % static_cast<uint64_t>(n)); }
  int in(int lo, int hi) { return lo + below(hi - lo + 1); }

 private:
  uint64_t state_;
};

enum class Shape { kChain, kDiamonds, kSkips, kMultiConsumer, kRandomDag, kCount };

inline const char* shape_name(Shape s) {
  switch (s) {
    case Shape::kChain: return "chain";
    case Shape::kDiamonds: return "diamonds";
    case Shape::kSkips: return "skips";
    case Shape::kMultiConsumer: return "multi-consumer";
    case Shape::kRandomDag: return "random-dag";
    case Shape::kCount: break;
  }
  return "?";
}

inline std::vector<std::pair<int, int>> edges_of(Shape shape, int n, Rng& rng) {
  std::vector<std::pair<int, int>> e;
  switch (shape) {
    case Shape::kChain:
      for (int i = 1; i < n; ++i) e.emplace_back(i - 1, i);
      break;
    case Shape::kDiamonds:  // fork/join blocks: a -> b, a -> c, b -> d, c -> d, d -> next ...
      for (int i = 1; i < n; ++i) {
        if (i % 3 == 1) e.emplace_back(i - 1, i);
        if (i % 3 == 2) e.emplace_back(i - 2, i);
        if (i % 3 == 0) {
          e.emplace_back(i - 1, i);
          e.emplace_back(i - 2, i);
        }
      }
      break;
    case Shape::kSkips:  // a chain with residual edges over one or two nodes
      for (int i = 1; i < n; ++i) {
        e.emplace_back(i - 1, i);
        if (i >= 2 && rng.below(2) == 0) e.emplace_back(i - 2, i);
        if (i >= 3 && rng.below(4) == 0) e.emplace_back(i - 3, i);
      }
      break;
    case Shape::kMultiConsumer:  // a few producers each feeding several later nodes
      for (int i = 1; i < n; ++i) {
        e.emplace_back(rng.below(std::min(i, 2)), i);
        if (rng.below(3) == 0) e.emplace_back(rng.below(i), i);
      }
      break;
    case Shape::kRandomDag:
      for (int j = 1; j < n; ++j) {
        for (int i = 0; i < j; ++i) {
          if (rng.below(100) < 35) e.emplace_back(i, j);
        }
      }
      break;
    case Shape::kCount: break;
  }
  return e;
}

// Integer-valued costs so that every sum is exact in any order. Anti-correlated time and memory
// make frontiers of several points; edge_scale > 1 lets edge costs dominate.
inline Cost draw_cost(Rng& rng, int range) {
  const int t = rng.in(0, range);
  return {static_cast<double>(t), static_cast<double>(std::max(0, range - t + rng.in(-2, 2)))};
}

inline Problem random_problem(Shape shape, int n, int max_k, int range, int edge_scale, Rng& rng) {
  Problem p;
  p.node_cost.resize(static_cast<size_t>(n));
  for (auto& costs : p.node_cost) {
    const int k = rng.in(1, max_k);
    for (int i = 0; i < k; ++i) costs.push_back(draw_cost(rng, range));
  }
  for (auto [u, v] : edges_of(shape, n, rng)) {
    Problem::Edge edge{u, v, {}};
    const size_t cells = p.node_cost[static_cast<size_t>(u)].size() *
                         p.node_cost[static_cast<size_t>(v)].size();
    for (size_t c = 0; c < cells; ++c) {
      const Cost x = draw_cost(rng, range);
      edge.cost.push_back({x.time * edge_scale, x.memory * edge_scale});
    }
    p.edges.push_back(std::move(edge));
  }
  return p;
}

// `layers` copies of one random block, as a model repeats its layers: block i has a boundary
// node a_i and two inner nodes b_i, c_i (a diamond a_i -> b_i, c_i -> a_{i+1}), every copy with
// the same costs; a_layers closes the chain. tie: an edge a_0 - a_layers too (GPT-2's tied
// embedding makes such a cycle).
inline Problem repeated_layers(int layers, int k, int range, bool tie, Rng& rng) {
  std::vector<std::vector<Cost>> node(3);
  for (auto& costs : node)
    for (int c = 0; c < k; ++c) costs.push_back(draw_cost(rng, range));
  std::vector<std::vector<Cost>> edge(4);
  for (auto& costs : edge)
    for (int c = 0; c < k * k; ++c) costs.push_back(draw_cost(rng, range));
  Problem p;
  const auto a = [](int i) { return 3 * i; };
  for (int i = 0; i < layers; ++i)
    for (const auto& costs : node) p.node_cost.push_back(costs);
  p.node_cost.push_back(node[0]);
  for (int i = 0; i < layers; ++i) {
    p.edges.push_back({a(i), a(i) + 1, edge[0]});
    p.edges.push_back({a(i), a(i) + 2, edge[1]});
    p.edges.push_back({a(i) + 1, a(i + 1), edge[2]});
    p.edges.push_back({a(i) + 2, a(i + 1), edge[3]});
  }
  if (tie) p.edges.push_back({a(0), a(layers), edge[0]});
  return p;
}

inline std::string render(const FtResult& r, bool with_assignments = false) {
  std::string out;
  char buf[80];
  for (const FrontierPoint& p : r.points) {
    std::snprintf(buf, sizeof buf, "(%.17g,%.17g)", p.cost.time, p.cost.memory);
    out += buf;
    if (with_assignments) {
      out += '[';
      for (int k : p.assignment) out += std::to_string(k) + ",";
      out += ']';
    }
    out += ' ';
  }
  return out;
}

inline bool sorted_and_non_dominated(const FtResult& r) {
  for (size_t i = 1; i < r.points.size(); ++i) {
    if (!(r.points[i - 1].cost.time < r.points[i].cost.time &&
          r.points[i - 1].cost.memory > r.points[i].cost.memory)) {
      return false;
    }
  }
  return true;
}

inline int assignments_that_evaluate_to_their_cost(const Problem& p, const FtResult& r) {
  int good = 0;
  for (const FrontierPoint& point : r.points) good += evaluate(p, point.assignment) == point.cost;
  return good;
}

// Whether some point q of r has q <= factor * c in both coordinates. r is sorted by time with
// memory descending, so the last point with q.time <= factor * c.time has the least memory.
inline bool weakly_covered(const FtResult& r, Cost c, double factor = 1) {
  const auto after = std::upper_bound(
      r.points.begin(), r.points.end(), factor * c.time,
      [](double t, const FrontierPoint& q) { return t < q.cost.time; });
  return after != r.points.begin() && std::prev(after)->cost.memory <= factor * c.memory;
}

// Every strategy of a small problem, enumerated here independently of the solvers.
inline std::vector<Cost> all_strategy_costs(const Problem& p) {
  std::vector<Cost> out;
  std::vector<int> a(static_cast<size_t>(p.num_nodes()), 0);
  while (true) {
    out.push_back(evaluate(p, a));
    int v = p.num_nodes() - 1;
    while (v >= 0 && ++a[static_cast<size_t>(v)] == p.num_configs(v)) a[static_cast<size_t>(v--)] = 0;
    if (v < 0) return out;
  }
}

inline std::vector<int> random_assignment(const Problem& p, Rng& rng) {
  std::vector<int> a;
  for (int v = 0; v < p.num_nodes(); ++v) a.push_back(rng.below(p.num_configs(v)));
  return a;
}

// The costs of a result's points, in order.
inline std::vector<Cost> costs(const FtResult& r) {
  std::vector<Cost> out;
  for (const FrontierPoint& p : r.points) out.push_back(p.cost);
  return out;
}

// The Pareto set of every strategy's cost, as FT reports it.
inline std::vector<Cost> brute_frontier(const Problem& p) {
  std::vector<FrontierPoint> all;
  for (Cost c : all_strategy_costs(p)) all.push_back({c, {}});
  std::stable_sort(all.begin(), all.end(), [](const FrontierPoint& a, const FrontierPoint& b) {
    return a.cost.time != b.cost.time ? a.cost.time < b.cost.time : a.cost.memory < b.cost.memory;
  });
  std::vector<Cost> out;
  for (const FrontierPoint& q : all)
    if (out.empty() || q.cost.memory < out.back().memory) out.push_back(q.cost);
  return out;
}

// A random chain of `n` nodes plus `hubs` nodes of `hub_configs` configurations, each joined to
// every `every`-th chain node: a weight that many layers read (merged by an eval-mode export, or
// tied).
inline Problem with_hubs(int n, int hubs, int every, int max_k, Rng& rng, int hub_configs = 2) {
  Problem p = random_problem(Shape::kChain, n, max_k, 20, 1, rng);
  for (int h = 0; h < hubs; ++h) {
    const int hub = p.num_nodes();
    p.node_cost.push_back({});
    for (int c = 0; c < hub_configs; ++c) p.node_cost.back().push_back(draw_cost(rng, 20));
    for (int v = h; v < n; v += every) {
      Problem::Edge e{v, hub, {}};
      for (int c = 0; c < p.num_configs(v) * hub_configs; ++c) e.cost.push_back(draw_cost(rng, 20));
      p.edges.push_back(std::move(e));
    }
  }
  return p;
}

}  // namespace tensoropt::planner::test
