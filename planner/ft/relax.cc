#include "planner/ft/relax.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include "planner/ft/branch.h"
#include "planner/ft/elimination_order.h"

namespace tensoropt::planner {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::vector<char> hub_mask(const Problem& problem, const std::vector<int>& hubs) {
  std::vector<char> is_hub(static_cast<size_t>(problem.num_nodes()), 0);
  for (int h : hubs) {
    if (h < 0 || h >= problem.num_nodes()) throw std::invalid_argument("relaxation: hub " + std::to_string(h) + " is out of range");
    if (is_hub[static_cast<size_t>(h)]) throw std::invalid_argument("relaxation: hub " + std::to_string(h) + " is given twice");
    is_hub[static_cast<size_t>(h)] = 1;
  }
  return is_hub;
}

// Edge e's cost when its nodes take configurations ku (of e.u) and kv (of e.v).
Cost edge_cost(const Problem& problem, const Problem::Edge& e, int ku, int kv) {
  return e.cost[static_cast<size_t>(ku) * static_cast<size_t>(problem.num_configs(e.v)) + static_cast<size_t>(kv)];
}

// A repair in the making: its cost so far and the configurations chosen for the hubs so far.
struct Partial {
  Cost cost;
  std::vector<int> configs;
};

// The Pareto set of `all` (ties: the first), thinned to at most `cap` points: both ends and
// points evenly spaced between them.
std::vector<Partial> pareto_thinned(std::vector<Partial> all, size_t cap) {
  std::vector<Partial> kept = pareto_merge(std::move(all));
  if (kept.size() <= cap) return kept;
  std::vector<Partial> thinned;
  for (size_t i = 0; i < cap; ++i) thinned.push_back(std::move(kept[i * (kept.size() - 1) / (cap - 1)]));
  return thinned;
}

// What repair needs of the Problem, computed once.
struct RepairContext {
  const Problem& problem;
  std::vector<int> hubs;
  std::vector<char> is_hub;
  std::vector<std::vector<size_t>> hub_edges;  // [hub index] edges at the hub whose other node is no hub
  std::vector<size_t> plain_edges;             // edges at no hub

  RepairContext(const Problem& p, const std::vector<int>& h) : problem(p), hubs(h), is_hub(hub_mask(p, h)) {
    std::vector<int> index(static_cast<size_t>(p.num_nodes()), -1);
    for (size_t i = 0; i < hubs.size(); ++i) index[static_cast<size_t>(hubs[i])] = static_cast<int>(i);
    hub_edges.resize(hubs.size());
    for (size_t i = 0; i < p.edges.size(); ++i) {
      const Problem::Edge& e = p.edges[i];
      const bool hu = is_hub[static_cast<size_t>(e.u)] != 0, hv = is_hub[static_cast<size_t>(e.v)] != 0;
      if (!hu && !hv) plain_edges.push_back(i);
      if (hu && !hv) hub_edges[static_cast<size_t>(index[static_cast<size_t>(e.u)])].push_back(i);
      if (hv && !hu) hub_edges[static_cast<size_t>(index[static_cast<size_t>(e.v)])].push_back(i);
    }
  }

  // The cost of everything at no hub under `a` (the hubs' entries are not read).
  Cost rest(const std::vector<int>& a) const {
    Cost c;
    for (int v = 0; v < problem.num_nodes(); ++v)
      if (!is_hub[static_cast<size_t>(v)]) c = c + problem.node_cost[static_cast<size_t>(v)][static_cast<size_t>(a[static_cast<size_t>(v)])];
    for (size_t i : plain_edges) {
      const Problem::Edge& e = problem.edges[i];
      c = c + edge_cost(problem, e, a[static_cast<size_t>(e.u)], a[static_cast<size_t>(e.v)]);
    }
    return c;
  }

  // Hub i's configurations, each with its own cost plus its edges to the nodes that are no hub
  // under `a`, Pareto (ties: the lowest configuration).
  std::vector<Partial> hub_choices(size_t i, const std::vector<int>& a) const {
    const int h = hubs[i];
    std::vector<Partial> all;
    for (int k = 0; k < problem.num_configs(h); ++k) {
      Cost c = problem.node_cost[static_cast<size_t>(h)][static_cast<size_t>(k)];
      for (size_t ei : hub_edges[i]) {
        const Problem::Edge& e = problem.edges[ei];
        c = c + (e.u == h ? edge_cost(problem, e, k, a[static_cast<size_t>(e.v)]) : edge_cost(problem, e, a[static_cast<size_t>(e.u)], k));
      }
      all.push_back({c, {k}});
    }
    return pareto_merge(std::move(all));
  }

  // The repairs of assignment `a` (the split Problem's, its first num_nodes() entries): the
  // Pareto set of the hubs' choices summed, thinned to kMaxRepairsPerPoint, with `rest` added.
  std::vector<Partial> repairs(const std::vector<int>& a) const {
    std::vector<Partial> sums{{rest(a), {}}};
    for (size_t i = 0; i < hubs.size(); ++i) {
      const std::vector<Partial> choices = hub_choices(i, a);
      std::vector<Partial> next;
      next.reserve(sums.size() * choices.size());
      for (const Partial& s : sums)
        for (const Partial& c : choices) {
          Partial p{s.cost + c.cost, s.configs};
          p.configs.push_back(c.configs.front());
          next.push_back(std::move(p));
        }
      sums = pareto_thinned(std::move(next), kMaxRepairsPerPoint);
    }
    return sums;
  }
};

// Ratio of a covering coordinate to a bound's: 1 when it is no larger (0/0 too), else u/b.
double ratio(double u, double b) {
  if (u <= b) return 1;
  return b > 0 ? u / b : kInf;
}

}  // namespace

SplitProblem split_hubs(const Problem& problem, const std::vector<int>& hubs) {
  const std::vector<char> is_hub = hub_mask(problem, hubs);
  SplitProblem out;
  out.problem = problem;
  out.original.resize(static_cast<size_t>(problem.num_nodes()));
  for (int v = 0; v < problem.num_nodes(); ++v) out.original[static_cast<size_t>(v)] = v;
  std::vector<char> kept(is_hub.size(), 0);  // the hub's node went to its first edge
  const auto copy_of = [&](int v) {
    if (!is_hub[static_cast<size_t>(v)]) return v;
    if (!kept[static_cast<size_t>(v)]) {
      kept[static_cast<size_t>(v)] = 1;
      return v;
    }
    const int id = out.problem.num_nodes();
    out.problem.node_cost.emplace_back(static_cast<size_t>(problem.num_configs(v)), Cost{});
    out.original.push_back(v);
    return id;
  };
  for (Problem::Edge& e : out.problem.edges) {
    e.u = copy_of(e.u);
    e.v = copy_of(e.v);
  }
  return out;
}

std::optional<std::vector<int>> relaxation_hubs(const Problem& problem, const ScopeFits& fits, int max_hubs) {
  std::vector<int> hubs;
  std::vector<char> is_hub(static_cast<size_t>(problem.num_nodes()), 0);
  for (;;) {
    const SplitProblem split = split_hubs(problem, hubs);
    const EliminationOrder order = greedy_elimination_order(split.problem);
    std::vector<int> count(static_cast<size_t>(problem.num_nodes()), 0);
    bool fails = false;
    std::vector<int> seen;
    for (const std::vector<int>& scope : order.scopes) {
      if (fits(split.problem, scope)) continue;
      fails = true;
      seen.clear();
      for (int v : scope) seen.push_back(split.original[static_cast<size_t>(v)]);
      std::sort(seen.begin(), seen.end());
      seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
      for (int v : seen) ++count[static_cast<size_t>(v)];
    }
    if (!fails) return hubs;
    int best = -1;
    for (int v = 0; v < problem.num_nodes(); ++v) {
      if (is_hub[static_cast<size_t>(v)] || problem.num_configs(v) < 2 || count[static_cast<size_t>(v)] == 0) continue;
      if (best < 0 || count[static_cast<size_t>(v)] > count[static_cast<size_t>(best)]) best = v;
    }
    if (best < 0 || static_cast<int>(hubs.size()) >= max_hubs) return std::nullopt;
    hubs.push_back(best);
    is_hub[static_cast<size_t>(best)] = 1;
  }
}

double covering_epsilon(const std::vector<Cost>& bound, const std::vector<Cost>& inner) {
  double worst = 1;
  for (Cost b : bound) {
    double best = kInf;
    for (Cost u : inner) best = std::min(best, std::max(ratio(u.time, b.time), ratio(u.memory, b.memory)));
    worst = std::max(worst, best);
  }
  return worst - 1;
}

RelaxedResult solve_relaxed(const Problem& problem, const std::vector<int>& hubs, const FtOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const RepairContext context(problem, hubs);
  const SplitProblem split = split_hubs(problem, hubs);
  FtOptions opt = options;
  opt.order = nullptr;  // the given order and bounds are the unsplit Problem's
  opt.bounds = nullptr;
  FtResult relaxed = solve_ft_branched(split.problem, opt);

  RelaxedResult out;
  out.copies = split.problem.num_nodes() - problem.num_nodes();
  out.result.stats = relaxed.stats;
  // Every bound point's repairs, as (point, hub configurations), estimated without the edges
  // between hubs; the Pareto set of the estimates is costed in full.
  struct Candidate {
    Cost cost;
    size_t point = 0;
    std::vector<int> configs;
  };
  std::vector<Candidate> candidates;
  for (size_t i = 0; i < relaxed.points.size(); ++i) {
    const FrontierPoint& p = relaxed.points[i];
    out.bound.push_back(p.cost);
    for (Partial& r : context.repairs(p.assignment)) candidates.push_back({r.cost, i, std::move(r.configs)});
  }
  candidates = pareto_merge(std::move(candidates));
  std::vector<FrontierPoint> repaired;
  for (const Candidate& c : candidates) {
    const std::vector<int>& a = relaxed.points[c.point].assignment;
    FrontierPoint q;
    q.assignment.assign(a.begin(), a.begin() + problem.num_nodes());
    for (size_t i = 0; i < hubs.size(); ++i) q.assignment[static_cast<size_t>(hubs[i])] = c.configs[i];
    q.cost = detail::evaluate_unchecked(problem, q.assignment);
    repaired.push_back(std::move(q));
  }
  out.result.points = pareto_merge(std::move(repaired));
  std::vector<Cost> inner;
  for (const FrontierPoint& p : out.result.points) inner.push_back(p.cost);
  out.epsilon = (1 + options.epsilon) * (1 + covering_epsilon(out.bound, inner)) - 1;
  out.result.stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace tensoropt::planner
