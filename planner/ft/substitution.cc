// Dominated configurations dropped before FT; see substitution.h.
#include "planner/ft/substitution.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace tensoropt::planner {
namespace {

constexpr double kRelative = 1e-9;

bool whole(double m) { return std::floor(m) == m && m < 0x1p52; }

}  // namespace

Narrowed drop_dominated(const Problem& problem) {
  validate(problem);
  const int n = problem.num_nodes();
  // Upper bounds of any strategy's time and memory, and whether memory sums are exact.
  double time_scale = 0, memory_scale = 0;
  bool integral = true;
  const auto scan = [&](const std::vector<Cost>& costs) {
    double t = 0, m = 0;
    for (Cost c : costs) {
      t = std::max(t, c.time);
      m = std::max(m, c.memory);
      integral = integral && whole(c.memory);
    }
    time_scale += t;
    memory_scale += m;
  };
  for (const auto& costs : problem.node_cost) scan(costs);
  for (const Problem::Edge& e : problem.edges) scan(e.cost);
  const double tau = kRelative * time_scale;
  const double mu = integral ? 0 : kRelative * memory_scale;

  std::vector<std::vector<int>> incident(static_cast<size_t>(n));
  for (size_t e = 0; e < problem.edges.size(); ++e) {
    incident[static_cast<size_t>(problem.edges[e].u)].push_back(static_cast<int>(e));
    incident[static_cast<size_t>(problem.edges[e].v)].push_back(static_cast<int>(e));
  }
  // alive[v][k]: configuration k of v not dropped yet.
  std::vector<std::vector<char>> alive(static_cast<size_t>(n));
  for (int v = 0; v < n; ++v) alive[static_cast<size_t>(v)].assign(static_cast<size_t>(problem.num_configs(v)), 1);
  // The largest change, over the neighbour's live configurations, of edge e's cost when v goes
  // from c to d.
  const auto edge_change = [&](int v, int e, int c, int d) {
    const Problem::Edge& edge = problem.edges[static_cast<size_t>(e)];
    const bool first = edge.u == v;
    const int other = first ? edge.v : edge.u;
    const size_t kv = static_cast<size_t>(problem.num_configs(edge.v));
    Cost most{-INFINITY, -INFINITY};
    for (int k = 0; k < problem.num_configs(other); ++k) {
      if (!alive[static_cast<size_t>(other)][static_cast<size_t>(k)]) continue;
      const size_t at_d = first ? static_cast<size_t>(d) * kv + static_cast<size_t>(k) : static_cast<size_t>(k) * kv + static_cast<size_t>(d);
      const size_t at_c = first ? static_cast<size_t>(c) * kv + static_cast<size_t>(k) : static_cast<size_t>(k) * kv + static_cast<size_t>(c);
      most.time = std::max(most.time, edge.cost[at_d].time - edge.cost[at_c].time);
      most.memory = std::max(most.memory, edge.cost[at_d].memory - edge.cost[at_c].memory);
    }
    return most;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (int v = 0; v < n; ++v) {
      const auto& costs = problem.node_cost[static_cast<size_t>(v)];
      std::vector<char>& live = alive[static_cast<size_t>(v)];
      for (int c = 0; c < problem.num_configs(v); ++c) {
        if (!live[static_cast<size_t>(c)]) continue;
        for (int d = 0; d < problem.num_configs(v); ++d) {
          if (d == c || !live[static_cast<size_t>(d)]) continue;
          Cost change{costs[static_cast<size_t>(d)].time - costs[static_cast<size_t>(c)].time,
                      costs[static_cast<size_t>(d)].memory - costs[static_cast<size_t>(c)].memory};
          for (int e : incident[static_cast<size_t>(v)]) {
            const Cost most = edge_change(v, e, c, d);
            change.time += most.time;
            change.memory += most.memory;
          }
          if (change.time <= -tau && change.memory <= -mu) {
            live[static_cast<size_t>(c)] = 0;
            changed = true;
            break;
          }
        }
      }
    }
  }
  std::vector<std::vector<int>> keep(static_cast<size_t>(n));
  for (int v = 0; v < n; ++v)
    for (int k = 0; k < problem.num_configs(v); ++k)
      if (alive[static_cast<size_t>(v)][static_cast<size_t>(k)]) keep[static_cast<size_t>(v)].push_back(k);
  return narrow(problem, std::move(keep));
}

}  // namespace tensoropt::planner
