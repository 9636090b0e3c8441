#include "planner/search/restricted.h"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <memory>
#include <optional>
#include <stdexcept>
#include <utility>

#include "graph/units.h"
#include "planner/baselines.h"
#include "planner/ft/condition.h"
#include "planner/ft/relax.h"
#include "planner/search/merge.h"

namespace tensoropt::planner {

namespace {

// Factors over more entries than this are not attempted exactly (each entry holds a frontier).
constexpr double kMaxExactFactorEntries = 1 << 16;
// Nor orders this wide: the work per elimination grows with the scope even where few
// configurations are left (transformers and ResNets have width 2 or 3; DenseNet's blocks ~25).
constexpr int kMaxExactWidth = 8;

// Hubs a relaxation splits at most, and the scopes it leaves a slow Problem (a layer's own
// tensors, not the hubs it reads).
constexpr int kMaxHubs = 64;
constexpr double kSlowScopeEntries = 256;
constexpr int kHubNeighbours = 7;
constexpr double kWideScopeEntries = 4096;

// Conditioning is tried on at most this many assignments of the fixed nodes (each one FT solve
// of the narrowed space, most of them left out by the points found before).
constexpr double kMaxBranches = 64;

// One objective for a fastest strategy: time, with memory breaking near-ties (1 GiB weighs as
// much as a microsecond), so a baseline does not keep copies it has no use for.
Cost time_first(Cost c) { return {c.time + c.memory * 1e-15, 0}; }

// The Problem restricted to `allowed`, and per variable the kept configurations.
std::pair<Problem, std::vector<std::vector<int>>> restricted_problem(const StrategySpace& space,
                                                                     const std::vector<std::vector<int>>& allowed,
                                                                     bool time_only) {
  Narrowed sub = narrow(space.problem(), allowed);
  sub.problem = fold_independent_edges(sub.problem);
  if (time_only) {
    for (auto& costs : sub.problem.node_cost)
      for (Cost& c : costs) c = time_first(c);
    for (Problem::Edge& e : sub.problem.edges)
      for (Cost& c : e.cost) c = time_first(c);
  }
  return {std::move(sub.problem), std::move(sub.keep)};
}

bool tractable(const Problem& p) { return tractable(p, greedy_elimination_order(p)); }

// A solve of a restricted Problem, its assignments read back as the space's configurations.
FtResult in_space(FtResult r, const std::vector<std::vector<int>>& keep) {
  for (FrontierPoint& p : r.points)
    for (size_t v = 0; v < keep.size(); ++v) p.assignment[v] = keep[v][static_cast<size_t>(p.assignment[v])];
  return r;
}

// A factor tractable() allows in an order of any width when it is small.
bool scope_tractable(const Problem& p, const std::vector<int>& scope) {
  const double entries = scope_entries(p, scope);
  return entries <= kMaxExactFactorEntries && (static_cast<int>(scope.size()) <= kMaxExactWidth || entries <= 64);
}

// The exact frontier of a restricted space (`sub`, with restricted_problem's `keep`) by
// conditioning (planner/ft/condition.h), when a few nodes fixed make it tractable; nullopt when
// that would take more than kMaxBranches solves.
std::optional<FtResult> solve_conditioned(const Problem& sub, const std::vector<std::vector<int>>& keep, const FtOptions& ft) {
  const auto fits = [](const Problem& p, const EliminationOrder& order) { return tractable(p, order); };
  const std::optional<std::vector<int>> nodes = conditioning_nodes(sub, fits, scope_tractable, kMaxBranches);
  if (!nodes) return std::nullopt;
  FtOptions options = ft;
  options.order = nullptr;
  options.bounds = nullptr;
  return in_space(solve_ft_conditioned(sub, *nodes, options), keep);
}

// Configurations of variable v in a uniform family: data parallel (batch) or replicated. With
// `strict`, a parameter keeps one: replicated, sharded by ZeRO-2 in the data-parallel family and
// whole in the replicated one (else the first of its replicated layouts).
std::vector<int> family_configs(const StrategySpace& space, int var, bool batch, bool strict) {
  const Variable& v = space.variables()[static_cast<size_t>(var)];
  auto replicated = [](const Layout& l) {
    return std::all_of(l.placements().begin(), l.placements().end(), [](const Placement& p) { return p == Placement::replicate(); });
  };
  std::vector<int> out;
  for (size_t k = 0; k < v.configs.size(); ++k) {
    const VarConfig& c = v.configs[k];
    bool ok = false;
    if (v.kind == VarKind::Op) {
      const OpConfig& oc = v.op_configs[static_cast<size_t>(c.op_config)];
      ok = !c.recompute && (batch ? data_parallel(v, oc)
                                  : std::all_of(oc.axis_dim.begin(), oc.axis_dim.end(), [](int d) { return d < 0; }));
    } else if (v.kind == VarKind::Parameter) {
      ok = !strict || replicated(c.layout);
    } else {
      int b = space.graph().tensors[static_cast<size_t>(v.tensor)].batch_axis;
      Placement want = batch && b >= 0 ? Placement::shard(b) : Placement::replicate();
      ok = std::all_of(c.layout.placements().begin(), c.layout.placements().end(), [&](const Placement& p) { return p == want; });
    }
    if (ok) out.push_back(static_cast<int>(k));
  }
  if (strict && v.kind == VarKind::Parameter && out.size() > 1) {
    const int zero = batch ? 2 : 0;
    auto it = std::find_if(out.begin(), out.end(), [&](int k) { return v.configs[static_cast<size_t>(k)].zero == zero; });
    out = {it != out.end() ? *it : out.front()};
  }
  return out;
}

// `allowed` with every wide variable narrowed to its uniform family (data parallel with `batch`,
// else replicated; `strict`: one configuration per parameter); `restricted` counts the variables
// narrowed.
std::vector<std::vector<int>> uniform_restriction(const StrategySpace& space, const std::vector<std::vector<int>>& allowed,
                                                  const std::vector<bool>& wide, bool batch, bool strict, int& restricted) {
  const int n = space.problem().num_nodes();
  std::vector<std::vector<int>> narrowed = allowed;
  narrowed.resize(static_cast<size_t>(n));
  restricted = 0;
  for (int v = 0; v < n; ++v) {
    if (!wide[static_cast<size_t>(v)]) continue;
    std::vector<int> family = family_configs(space, v, batch, strict);
    auto& a = narrowed[static_cast<size_t>(v)];
    if (!a.empty()) {
      std::vector<int> both;
      std::set_intersection(a.begin(), a.end(), family.begin(), family.end(), std::back_inserter(both));
      family = both;
    }
    if (family.empty()) continue;  // nothing uniform to restrict it to: left as it was
    a = family;
    ++restricted;
  }
  return narrowed;
}

// The union of the two uniform restrictions' frontiers; nullopt when FT refuses both.
std::optional<FtResult> solve_uniform(const StrategySpace& space, const std::vector<std::vector<int>>& allowed,
                                      const std::vector<bool>& wide, bool strict, const FtOptions& ft,
                                      Approximation& approximation, bool time_only) {
  std::vector<FrontierPoint> all;
  FtStats stats;
  int restricted = 0;
  bool solved = false;  // known costs may leave every point out: no point is still an answer
  // An approximation with no bound of its own: a frontier of hundreds of thousands of points
  // microseconds apart (DenseNet-121 on 64 GPUs: 280,000, 0.9 GB of strategies) is thinned as a
  // relaxation's bound is: every point left out within 0.1% of a kept one (0.2% where the union
  // of the two restrictions is thinned again).
  FtOptions thin = ft;
  thin.thin_above = approximate_points(ft);
  thin.thin_epsilon = kBoundEpsilon;
  for (bool batch : {true, false}) {
    const std::vector<std::vector<int>> narrowed = uniform_restriction(space, allowed, wide, batch, strict, restricted);
    try {
      if (!tractable(restricted_problem(space, narrowed, time_only).first)) continue;
      FtResult r = solve_restricted(space, narrowed, thin, time_only);  // FtMemoryLimit propagates
      stats.seconds += r.stats.seconds;
      stats.peak_bytes = std::max(stats.peak_bytes, r.stats.peak_bytes);
      stats.width = std::max(stats.width, r.stats.width);
      for (FrontierPoint& q : r.points) all.push_back(std::move(q));
      solved = true;
    } catch (const FtMemoryLimit&) {
      throw;
    } catch (const std::length_error&) {
    }
  }
  if (!solved) return std::nullopt;
  approximation.within = -1;
  approximation.text = "approximate: " + std::to_string(restricted) +
                  " variables of densely connected regions restricted to uniform data-parallel or replicated strategies" +
                  (strict ? std::string(", their parameters replicated") : std::string());
  FtResult out;
  out.stats = stats;
  out.points = pareto_merge(std::move(all));
  if (out.points.size() > approximate_points(ft)) out.points = epsilon_thin(std::move(out.points), kBoundEpsilon);
  return out;
}

}  // namespace

bool tractable(const Problem& p, const EliminationOrder& order) {
  double largest = 0;
  for (const auto& scope : order.scopes) largest = std::max(largest, scope_entries(p, scope));
  return largest <= kMaxExactFactorEntries && (order.width <= kMaxExactWidth || largest <= 64);
}

FtResult solve_restricted(const StrategySpace& space, const std::vector<std::vector<int>>& allowed,
                          const FtOptions& options, bool time_only) {
  auto [sub, keep] = restricted_problem(space, allowed, time_only);
  return in_space(solve_ft(sub, options), keep);
}

std::string relaxation_text(double within, int hubs, const std::string& why) {
  return "approximate: within " + share_percent(within) + " of the exact frontier, proven by a relaxation of " + std::to_string(hubs) +
         (hubs == 1 ? " tensor" : " tensors") + " read across many layers (" + why + ")";
}

void tighten_within(Approximation& approximation, const std::vector<Cost>& own, const std::vector<Cost>& found, double floor) {
  if (approximation.bound.empty()) return;
  std::vector<Cost> covering = own;
  for (Cost c : found) covering.push_back({c.time, std::max(0.0, c.memory - floor)});
  const double within = (1 + approximation.slack) * (1 + bound_gap(approximation.bound, std::move(covering)).epsilon) - 1;
  if (!(within < approximation.within)) return;
  approximation.within = within;
  const size_t at = approximation.text.find(approximation.relaxed);
  if (within <= 0) {
    approximation.text.clear();
    approximation.within = 0;
  } else if (at != std::string::npos) {
    std::string relaxed = relaxation_text(within, approximation.hubs, approximation.why);
    approximation.text.replace(at, approximation.relaxed.size(), relaxed);
    approximation.relaxed = std::move(relaxed);
  }
}

namespace {

ScopeFits at_most(double limit) {
  return [limit](const Problem& p, const std::vector<int>& scope) { return scope_entries(p, scope) <= limit; };
}

// The most assignments of hubs (nodes read across many layers: more neighbours than a layer's
// own tensors have) that one scope of `order` above kSlowScopeEntries holds: the factor of the
// exact search's work they make. 1 where no such scope holds a hub.
double hub_assignments(const Problem& p, const EliminationOrder& order) {
  const std::vector<char> candidate = hub_candidates(p, kHubNeighbours);
  double most = 1;
  for (const std::vector<int>& scope : order.scopes) {
    if (scope_entries(p, scope) <= kSlowScopeEntries) continue;
    double held = 1;
    for (int v : scope)
      if (candidate[static_cast<size_t>(v)]) held *= p.num_configs(v);
    most = std::max(most, held);
  }
  return most;
}

// solve_relaxed on `hubs`, its guarantee in `approximation`; nullopt when FT refuses or passes
// its budget on the split Problem (FtMemoryLimit propagates).
std::optional<FtResult> relax_on(const Problem& problem, const std::vector<int>& hubs, const std::string& why, const FtOptions& ft,
                                 Approximation& approximation, std::vector<FrontierPoint> seeds) {
  try {
    RelaxedResult r = solve_relaxed(problem, hubs, ft, std::move(seeds));
    approximation.hubs = static_cast<int>(hubs.size());
    if (r.epsilon > ft.epsilon) {
      approximation.within = r.epsilon;
      approximation.why = why;
      approximation.relaxed = relaxation_text(r.epsilon, approximation.hubs, why);
      approximation.text = approximation.relaxed;
      approximation.bound = std::move(r.bound);
      approximation.slack = r.slack;
    }
    return std::move(r.result);
  } catch (const FtMemoryLimit&) {
    throw;
  } catch (const std::length_error&) {
    return std::nullopt;
  }
}

}  // namespace

FtResult solve_exact_or_relaxed(const Problem& problem, const EliminationOrder& order, FtOptions ft,
                                const std::function<FtResult(const FtOptions&)>& solve, Approximation& approximation,
                                std::vector<FrontierPoint> seeds) {
  const double held = hub_assignments(problem, order);
  const int64_t budget = ft.max_points_built;
  ft.max_points_built = 0;
  if (held == 1 || budget == 0) return solve(ft);
  std::string why;
  if (held <= kMaxBranches) {
    FtOptions budgeted = ft;
    budgeted.max_points_built = budget;
    try {
      return solve(budgeted);
    } catch (const FtWorkLimit&) {
      why = "the exact search passed its work budget; --exact insists on it";
    }
  } else {
    char count[32];
    std::snprintf(count, sizeof count, "%.0f", held);
    why = std::string("the exact search would hold ") + count + " layouts of them side by side; --exact insists on it";
  }
  const HubChoice choice = relaxation_hubs(problem, at_most(kSlowScopeEntries), kMaxHubs, kHubNeighbours);
  if (!choice.hubs.empty())
    if (std::optional<FtResult> r = relax_on(problem, choice.hubs, why, ft, approximation, std::move(seeds))) return std::move(*r);
  return solve(ft);
}

std::optional<FtResult> solve_relaxation(const Problem& problem, const FtOptions& ft, Approximation& approximation,
                                         std::vector<FrontierPoint> seeds) {
  // Any node, until the scopes are small enough that the split Problem solves in about the time
  // of the uniform restriction (splitting only until tractable() leaves scopes of 65,536
  // entries: a tighter bound, at 20 times the time).
  const HubChoice choice = relaxation_hubs(problem, at_most(kWideScopeEntries), kMaxHubs, 2);
  if (choice.hubs.empty() || !choice.fits) return std::nullopt;
  return relax_on(problem, choice.hubs, "too wide for an exact search", ft, approximation, std::move(seeds));
}

FtResult solve_with_fallback(const StrategySpace& space, const std::vector<std::vector<int>>& allowed,
                             const FtOptions& ft, Approximation& approximation, bool time_only) {
  const auto [sub, keep] = restricted_problem(space, allowed, time_only);
  FtOptions unbounded = ft;  // for the last resorts: no work budget
  unbounded.max_points_built = 0;
  std::string refused;
  try {
    // Refuse at once when the elimination order promises a factor beyond the budget, rather than
    // after building the factors that precede it.
    auto order = std::make_shared<const EliminationOrder>(greedy_elimination_order(sub));
    if (!tractable(sub, *order)) throw std::length_error("elimination width");
    FtOptions exact = ft;
    exact.order = order;
    exact.bounds = nullptr;
    const auto solve = [&](const FtOptions& o) { return solve_ft(sub, o); };
    return in_space(solve_exact_or_relaxed(sub, *order, exact, solve, approximation), keep);
  } catch (const FtMemoryLimit&) {
    throw;  // restricting wide regions is for wide orders, not for big frontiers
  } catch (const std::length_error& e) {
    refused = e.what();
  }
  // Exact, when fixing a few nodes (a weight read far apart) makes the space narrow.
  try {
    if (std::optional<FtResult> res = solve_conditioned(sub, keep, unbounded)) return std::move(*res);
  } catch (const FtMemoryLimit&) {
    throw;
  } catch (const std::length_error&) {
  }
  // Too wide: the uniform restrictions below (quick, and close where measured), then the
  // relaxation with their points among its own, which proves how close.
  std::optional<FtResult> uniform;
  Approximation restricted;
  const std::vector<std::vector<int>> adj = neighbours(space.problem());
  std::vector<bool> wide(adj.size(), false);
  for (size_t v = 0; v < adj.size(); ++v) wide[v] = adj[v].size() > 6;
  // Rings around the wide variables, then the same with each of their parameters held to one
  // layout (a weight that every layer reads joins them all, whatever else is restricted), then
  // every variable so: the last always leaves a space FT takes.
  for (bool strict : {false, true}) {
    std::vector<bool> ring = wide;
    for (int r = 0; r < 3 && !uniform; ++r) {
      if (r > 0) {
        std::vector<bool> grown = ring;
        for (size_t v = 0; v < adj.size(); ++v)
          if (ring[v])
            for (int u : adj[v]) grown[static_cast<size_t>(u)] = true;
        ring = grown;
      }
      uniform = solve_uniform(space, allowed, ring, strict, unbounded, restricted, time_only);
    }
  }
  if (!uniform) uniform = solve_uniform(space, allowed, std::vector<bool>(adj.size(), true), true, unbounded, restricted, time_only);
  std::vector<FrontierPoint> seeds;
  if (uniform) {
    // The points in the restricted Problem's configurations.
    std::vector<std::vector<int>> index(keep.size());
    for (size_t v = 0; v < keep.size(); ++v) {
      index[v].assign(space.variables()[v].configs.size(), -1);
      for (size_t k = 0; k < keep[v].size(); ++k) index[v][static_cast<size_t>(keep[v][k])] = static_cast<int>(k);
    }
    for (FrontierPoint p : uniform->points) {
      for (size_t v = 0; v < keep.size(); ++v) p.assignment[v] = index[v][static_cast<size_t>(p.assignment[v])];
      seeds.push_back(std::move(p));
    }
  }
  if (std::optional<FtResult> res = solve_relaxation(sub, unbounded, approximation, std::move(seeds)))
    return in_space(std::move(*res), keep);
  if (uniform) {
    approximation = restricted;
    return std::move(*uniform);
  }
  throw std::length_error(refused);
}

}  // namespace tensoropt::planner
