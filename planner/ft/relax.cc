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

// A repair in the making: its cost so far, the configuration chosen for the last hub decided,
// and the partial it extends (an index into the previous hub's set; -1 before the first).
struct Partial {
  Cost cost;
  int config = 0;
  int parent = -1;
};

// The Pareto set of `all` (ties: the first), thinned to at most `cap` points: both ends and
// points evenly spaced between them.
std::vector<Partial> pareto_thinned(std::vector<Partial> all, size_t cap) {
  std::vector<Partial> kept = pareto_merge(std::move(all));
  if (kept.size() <= cap) return kept;
  std::vector<Partial> thinned;
  for (size_t i = 0; i < cap; ++i) thinned.push_back(kept[i * (kept.size() - 1) / (cap - 1)]);
  return thinned;
}

// A repaired strategy: its estimated cost and its hubs' configurations.
struct Repair {
  Cost cost;
  std::vector<int> configs;
};

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
      all.push_back({c, k, -1});
    }
    return pareto_merge(std::move(all));
  }

  // The repairs of assignment `a` (the split Problem's, its first num_nodes() entries): the
  // Pareto set of the hubs' choices summed, thinned to kRepairBudget / hubs (at least 4), with
  // `rest` added.
  std::vector<Repair> repairs(const std::vector<int>& a) const {
    std::vector<std::vector<Partial>> levels{{{rest(a), 0, -1}}};
    for (size_t i = 0; i < hubs.size(); ++i) {
      const std::vector<Partial> choices = hub_choices(i, a);
      const std::vector<Partial>& sums = levels.back();
      std::vector<Partial> next;
      next.reserve(sums.size() * choices.size());
      for (size_t j = 0; j < sums.size(); ++j)
        for (const Partial& c : choices) next.push_back({sums[j].cost + c.cost, c.config, static_cast<int>(j)});
      levels.push_back(pareto_thinned(std::move(next), std::max<size_t>(4, kRepairBudget / hubs.size())));
    }
    std::vector<Repair> out;
    for (const Partial& last : levels.back()) {
      Repair r{last.cost, std::vector<int>(hubs.size())};
      const Partial* p = &last;
      for (size_t i = hubs.size(); i > 0; --i) {
        r.configs[i - 1] = p->config;
        p = &levels[i - 1][static_cast<size_t>(p->parent)];
      }
      out.push_back(std::move(r));
    }
    return out;
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

std::vector<char> hub_candidates(const Problem& problem, int min_neighbours) {
  const std::vector<std::vector<int>> adj = neighbours(problem);
  std::vector<char> candidate(adj.size(), 0);
  for (size_t v = 0; v < adj.size(); ++v)
    candidate[v] = problem.num_configs(static_cast<int>(v)) >= 2 && static_cast<int>(adj[v].size()) >= min_neighbours;
  return candidate;
}

HubChoice relaxation_hubs(const Problem& problem, const ScopeFits& fits, int max_hubs, int min_neighbours) {
  const int n = problem.num_nodes();
  std::vector<char> candidate = hub_candidates(problem, min_neighbours);
  HubChoice out;
  std::vector<int> seen;
  for (;;) {
    const SplitProblem split = split_hubs(problem, out.hubs);
    const EliminationOrder order = greedy_elimination_order(split.problem);
    std::vector<int> count(static_cast<size_t>(n), 0);
    bool fails = false;
    for (const std::vector<int>& scope : order.scopes) {
      if (fits(split.problem, scope)) continue;
      fails = true;
      seen.clear();
      for (int v : scope) seen.push_back(split.original[static_cast<size_t>(v)]);
      std::sort(seen.begin(), seen.end());
      seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
      for (int v : seen) ++count[static_cast<size_t>(v)];
    }
    out.fits = !fails;
    if (out.fits || static_cast<int>(out.hubs.size()) >= max_hubs) return out;
    int best = -1;
    for (int v = 0; v < n; ++v) {
      if (!candidate[static_cast<size_t>(v)] || count[static_cast<size_t>(v)] == 0) continue;
      if (best < 0 || count[static_cast<size_t>(v)] > count[static_cast<size_t>(best)]) best = v;
    }
    if (best < 0) return out;
    out.hubs.push_back(best);
    candidate[static_cast<size_t>(best)] = 0;
  }
}

BoundGap bound_gap(const std::vector<Cost>& bound, std::vector<Cost> inner) {
  std::sort(inner.begin(), inner.end(), [](Cost a, Cost b) { return a.time != b.time ? a.time < b.time : a.memory < b.memory; });
  std::vector<Cost> stairs;  // time ascending, memory strictly descending
  for (Cost u : inner)
    if (stairs.empty() || u.memory < stairs.back().memory) stairs.push_back(u);
  BoundGap out;
  double worst = 1;
  for (size_t i = 0; i < bound.size(); ++i) {
    const Cost b = bound[i];
    // Along the stairs the time ratio rises and the memory ratio falls: the larger of the two is
    // least where they cross, at the first point whose time ratio reaches its memory ratio or
    // the one before it.
    const auto cross = std::partition_point(stairs.begin(), stairs.end(),
                                            [&](Cost u) { return ratio(u.time, b.time) < ratio(u.memory, b.memory); });
    double best = kInf;
    if (cross != stairs.end()) best = std::max(ratio(cross->time, b.time), ratio(cross->memory, b.memory));
    if (cross != stairs.begin()) {
      const Cost u = *(cross - 1);
      best = std::min(best, std::max(ratio(u.time, b.time), ratio(u.memory, b.memory)));
    }
    if (best > worst) {
      worst = best;
      out.worst = i;
    }
  }
  out.epsilon = worst - 1;
  return out;
}

RelaxedResult solve_relaxed(const Problem& problem, const std::vector<int>& hubs, const FtOptions& options,
                            std::vector<FrontierPoint> seeds) {
  const auto start = std::chrono::steady_clock::now();
  const RepairContext context(problem, hubs);
  const SplitProblem split = split_hubs(problem, hubs);
  FtOptions opt = options;
  opt.order = nullptr;  // the given order and bounds are the unsplit Problem's
  opt.bounds = nullptr;
  opt.thin_above = kMaxBoundPoints;  // thinned before the strategies are rebuilt
  opt.thin_epsilon = kBoundEpsilon;
  FtResult relaxed = solve_ft_branched(split.problem, opt);

  RelaxedResult out;
  out.result.stats = relaxed.stats;
  // Every bound point's repairs, as (point, hub configurations), estimated without the edges
  // between hubs; the Pareto set of the estimates is costed in full.
  struct Candidate {
    Cost cost;
    size_t point = 0;
    std::vector<int> configs;
  };
  // A big bound is thinned: a point within (1 + kBoundEpsilon) of the last one kept, in both
  // coordinates (points go by time ascending, memory descending), is left out. Every strategy is
  // then within that factor of a kept point, which the stated epsilon counts. FT thins each
  // solve's frontier before rebuilding its strategies; the union of a branched solve's may still
  // be big, and is thinned again (each thinning a factor in the slack).
  double thinned = relaxed.stats.thinned ? kBoundEpsilon : 0;
  if (relaxed.points.size() > kMaxBoundPoints) {
    relaxed.points = epsilon_thin(std::move(relaxed.points), kBoundEpsilon);
    thinned = (1 + thinned) * (1 + kBoundEpsilon) - 1;
  }
  std::vector<Candidate> candidates;
  for (size_t i = 0; i < relaxed.points.size(); ++i) {
    const FrontierPoint& p = relaxed.points[i];
    out.bound.push_back(p.cost);
    for (Repair& r : context.repairs(p.assignment)) candidates.push_back({r.cost, i, std::move(r.configs)});
  }
  candidates = pareto_merge(std::move(candidates));
  std::vector<FrontierPoint> repaired = std::move(seeds);
  for (FrontierPoint& q : repaired) {
    bool fits = q.assignment.size() == static_cast<size_t>(problem.num_nodes());
    for (size_t v = 0; fits && v < q.assignment.size(); ++v)
      fits = q.assignment[v] >= 0 && q.assignment[v] < problem.num_configs(static_cast<int>(v));
    if (!fits) throw std::invalid_argument("relaxation: a seed is not a strategy of the Problem");
    q.cost = detail::evaluate_unchecked(problem, q.assignment);
  }
  for (const Candidate& c : candidates) {
    const std::vector<int>& a = relaxed.points[c.point].assignment;
    FrontierPoint q;
    q.assignment.assign(a.begin(), a.begin() + problem.num_nodes());
    for (size_t i = 0; i < hubs.size(); ++i) q.assignment[static_cast<size_t>(hubs[i])] = c.configs[i];
    q.cost = detail::evaluate_unchecked(problem, q.assignment);
    repaired.push_back(std::move(q));
  }
  out.result.points = pareto_merge(std::move(repaired));
  const auto inner = [&] {
    std::vector<Cost> c;
    for (const FrontierPoint& p : out.result.points) c.push_back(p.cost);
    return c;
  };
  BoundGap cov = bound_gap(out.bound, inner());
  // Conditioning where the gap is widest: the hub configurations of the repair nearest the
  // worst-covered bound point, fixed (so the rest is as narrow as the split Problem) and solved
  // exactly, knowing the points so far; its points join the set. Again while a gap is left and
  // the configurations are new.
  std::vector<std::vector<int>> tried;
  for (size_t n = 0; n < kConditionedBranches && cov.epsilon > kBranchGap; ++n) {
    const Cost b = out.bound[cov.worst];
    std::vector<Repair> near = context.repairs(relaxed.points[cov.worst].assignment);
    const auto distance = [&](const Repair& r) { return std::max(ratio(r.cost.time, b.time), ratio(r.cost.memory, b.memory)); };
    std::stable_sort(near.begin(), near.end(), [&](const Repair& x, const Repair& y) { return distance(x) < distance(y); });
    const auto fresh = std::find_if(near.begin(), near.end(),
                                    [&](const Repair& r) { return std::find(tried.begin(), tried.end(), r.configs) == tried.end(); });
    std::vector<int> configs;
    if (fresh != near.end()) {
      configs = fresh->configs;
    } else {  // the hub configurations the most points use, not tried yet
      std::vector<std::pair<int, std::vector<int>>> used;  // (points, configurations)
      for (const FrontierPoint& p : out.result.points) {
        std::vector<int> c;
        for (int h : hubs) c.push_back(p.assignment[static_cast<size_t>(h)]);
        if (std::find(tried.begin(), tried.end(), c) != tried.end()) continue;
        auto it = std::find_if(used.begin(), used.end(), [&](const auto& u) { return u.second == c; });
        if (it == used.end()) used.push_back({1, std::move(c)});
        else ++it->first;
      }
      if (used.empty()) break;
      configs = std::max_element(used.begin(), used.end(), [](const auto& x, const auto& y) { return x.first < y.first; })->second;
    }
    tried.push_back(configs);
    std::vector<std::vector<int>> keep(static_cast<size_t>(problem.num_nodes()));
    for (size_t i = 0; i < hubs.size(); ++i) keep[static_cast<size_t>(hubs[i])] = {configs[i]};
    Narrowed sub = narrow(problem, std::move(keep));
    FtOptions o = options;
    o.order = nullptr;
    o.bounds = nullptr;
    o.thin_above = approximate_points(options);  // the gap is measured on the points kept
    o.thin_epsilon = kBoundEpsilon;
    const std::vector<Cost> found = inner();
    o.known.insert(o.known.end(), found.begin(), found.end());
    o.max_points_built = points_left(options, out.result.stats.points_built);
    FtResult r;
    try {
      r = solve_ft_branched(fold_independent_edges(sub.problem), o);
    } catch (const FtWorkLimit&) {
      break;  // the points so far stand
    }
    accumulate(out.result.stats, r.stats);
    std::vector<FrontierPoint> all = std::move(out.result.points);
    for (FrontierPoint& q : r.points) {
      for (size_t v = 0; v < sub.keep.size(); ++v) q.assignment[v] = sub.keep[v][static_cast<size_t>(q.assignment[v])];
      q.cost = detail::evaluate_unchecked(problem, q.assignment);  // this Problem's sums, not the narrowed one's
      all.push_back(std::move(q));
    }
    out.result.points = pareto_merge(std::move(all));
    const double before = cov.epsilon;
    cov = bound_gap(out.bound, inner());
    if (cov.epsilon >= before) break;  // the gap lies in the bound there, not in the points
  }
  out.slack = (1 + options.epsilon) * (1 + thinned) - 1;
  out.epsilon = (1 + out.slack) * (1 + cov.epsilon) - 1;
  out.result.stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace tensoropt::planner
