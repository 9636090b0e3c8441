#include "planner/plan.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <limits>
#include <memory>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <thread>

#include "graph/error.h"
#include "planner/baselines.h"
#include "planner/ft/branch.h"
#include "planner/ft/elimination_order.h"
#include "planner/ft/ft_bounds.h"
#include "planner/ft/thread_pool.h"

namespace tensoropt::planner {

namespace {

// The epsilon a mesh is solved with when its exact frontier passes the planner memory limit.
constexpr double kFallbackEpsilon = 0.01;

std::string format_epsilon(double e) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", e);
  return text;
}

// A byte count for a message: "2.00 GiB", "4.00 MiB", "100.00 KiB".
std::string format_bytes(int64_t bytes) {
  const double b = static_cast<double>(bytes);
  char text[64];
  if (b >= 0x1p30) std::snprintf(text, sizeof text, "%.2f GiB", b / 0x1p30);
  else if (b >= 0x1p20) std::snprintf(text, sizeof text, "%.2f MiB", b / 0x1p20);
  else std::snprintf(text, sizeof text, "%.2f KiB", b / 0x1p10);
  return text;
}

// Factors over more entries than this are not attempted exactly (each entry holds a frontier).
constexpr double kMaxExactFactorEntries = 1 << 16;
// Nor orders this wide: the work per elimination grows with the scope even where few
// configurations are left (transformers and ResNets have width 2 or 3; DenseNet's blocks ~25).
constexpr int kMaxExactWidth = 8;

// One objective for a fastest strategy: time, with memory breaking near-ties (1 GiB weighs as
// much as a microsecond), so a baseline does not keep copies it has no use for.
Cost time_first(Cost c) { return {c.time + c.memory * 1e-15, 0}; }

// The Problem restricted to `allowed`, and per variable the kept configurations.
std::pair<Problem, std::vector<std::vector<int>>> restricted_problem(const StrategySpace& space,
                                                                     const std::vector<std::vector<int>>& allowed,
                                                                     bool time_only) {
  Narrowed sub = narrow(space.problem(), allowed);
  if (time_only) {
    for (auto& costs : sub.problem.node_cost)
      for (Cost& c : costs) c = time_first(c);
    for (Problem::Edge& e : sub.problem.edges)
      for (Cost& c : e.cost) c = time_first(c);
  }
  return {std::move(sub.problem), std::move(sub.keep)};
}

// The Pareto set of points from several solves: sorted by (time, memory), stable, so among equal
// costs the earlier one stays; then every point not below the last kept memory dropped.
template <typename Point>
std::vector<Point> pareto_merge(std::vector<Point> all) {
  std::stable_sort(all.begin(), all.end(), [](const Point& a, const Point& b) {
    return a.cost.time != b.cost.time ? a.cost.time < b.cost.time : a.cost.memory < b.cost.memory;
  });
  std::vector<Point> kept;
  for (Point& p : all)
    if (kept.empty() || p.cost.memory < kept.back().cost.memory) kept.push_back(std::move(p));
  return kept;
}

// Whether FT may be tried exactly on `p`, eliminated in `order`: no factor above
// kMaxExactFactorEntries entries and an order no wider than kMaxExactWidth, unless no factor
// exceeds 64 entries.
bool tractable(const Problem& p, const EliminationOrder& order) {
  double largest = 0;
  for (const auto& scope : order.scopes) {
    double entries = 1;
    for (int v : scope) entries *= p.num_configs(v);
    largest = std::max(largest, entries);
  }
  return largest <= kMaxExactFactorEntries && (order.width <= kMaxExactWidth || largest <= 64);
}

bool tractable(const Problem& p) { return tractable(p, greedy_elimination_order(p)); }

}  // namespace

FtResult solve_restricted(const StrategySpace& space, const std::vector<std::vector<int>>& allowed,
                          const FtOptions& options, bool time_only) {
  auto [sub, keep] = restricted_problem(space, allowed, time_only);
  FtResult r = solve_ft(sub, options);
  for (FrontierPoint& p : r.points)
    for (size_t v = 0; v < keep.size(); ++v) p.assignment[v] = keep[v][static_cast<size_t>(p.assignment[v])];
  return r;
}

namespace {

// Configurations of variable v in a uniform family: data parallel (batch) or replicated.
std::vector<int> family_configs(const StrategySpace& space, int var, bool batch) {
  const Variable& v = space.variables()[static_cast<size_t>(var)];
  std::vector<int> out;
  for (size_t k = 0; k < v.configs.size(); ++k) {
    const VarConfig& c = v.configs[k];
    bool ok = false;
    if (v.kind == VarKind::Op) {
      const OpConfig& oc = v.op_configs[static_cast<size_t>(c.op_config)];
      ok = !c.recompute && (batch ? data_parallel(v, oc)
                                  : std::all_of(oc.axis_dim.begin(), oc.axis_dim.end(), [](int d) { return d < 0; }));
    } else if (v.kind == VarKind::Parameter) {
      ok = true;
    } else {
      int b = space.graph().tensors[static_cast<size_t>(v.tensor)].batch_axis;
      Placement want = batch && b >= 0 ? Placement::shard(b) : Placement::replicate();
      ok = std::all_of(c.layout.placements().begin(), c.layout.placements().end(), [&](const Placement& p) { return p == want; });
    }
    if (ok) out.push_back(static_cast<int>(k));
  }
  return out;
}

}  // namespace

FtResult solve_with_fallback(const StrategySpace& space, const std::vector<std::vector<int>>& allowed,
                             const FtOptions& ft, std::string& approximation, bool time_only) {
  try {
    // Refuse at once when the elimination order promises a factor beyond the budget, rather than
    // after building the factors that precede it.
    if (!tractable(restricted_problem(space, allowed, time_only).first)) throw std::length_error("elimination width");
    return solve_restricted(space, allowed, ft, time_only);
  } catch (const FtMemoryLimit&) {
    throw;  // restricting wide regions is for wide orders, not for big frontiers
  } catch (const std::length_error&) {
    const Problem& p = space.problem();
    const int n = p.num_nodes();
    std::vector<std::vector<int>> adj(static_cast<size_t>(n));
    for (const Problem::Edge& e : p.edges) {
      adj[static_cast<size_t>(e.u)].push_back(e.v);
      adj[static_cast<size_t>(e.v)].push_back(e.u);
    }
    std::vector<bool> wide(static_cast<size_t>(n), false);
    for (int v = 0; v < n; ++v) {
      auto& a = adj[static_cast<size_t>(v)];
      std::sort(a.begin(), a.end());
      a.erase(std::unique(a.begin(), a.end()), a.end());
      wide[static_cast<size_t>(v)] = a.size() > 6;
    }
    for (int ring = 0; ring < 3; ++ring) {
      if (ring > 0) {
        std::vector<bool> grown = wide;
        for (int v = 0; v < n; ++v)
          if (wide[static_cast<size_t>(v)])
            for (int u : adj[static_cast<size_t>(v)]) grown[static_cast<size_t>(u)] = true;
        wide = grown;
      }
      std::vector<FrontierPoint> all;
      FtStats stats;
      int restricted = 0;
      for (bool batch : {true, false}) {
        std::vector<std::vector<int>> narrowed = allowed;
        narrowed.resize(static_cast<size_t>(n));
        restricted = 0;
        for (int v = 0; v < n; ++v) {
          if (!wide[static_cast<size_t>(v)]) continue;
          std::vector<int> family = family_configs(space, v, batch);
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
        try {
          if (!tractable(restricted_problem(space, narrowed, time_only).first)) continue;
          FtResult r = solve_restricted(space, narrowed, ft, time_only);  // FtMemoryLimit propagates
          stats.seconds += r.stats.seconds;
          stats.peak_bytes = std::max(stats.peak_bytes, r.stats.peak_bytes);
          stats.width = std::max(stats.width, r.stats.width);
          for (FrontierPoint& q : r.points) all.push_back(std::move(q));
        } catch (const FtMemoryLimit&) {
          throw;
        } catch (const std::length_error&) {
        }
      }
      if (all.empty()) continue;
      approximation = "approximate: " + std::to_string(restricted) +
                      " variables of densely connected regions restricted to uniform data-parallel or replicated strategies";
      FtResult out;
      out.stats = stats;
      out.points = pareto_merge(std::move(all));
      return out;
    }
    throw;
  }
}


int dominating_point(const GpuFrontier& frontier, Cost cost) {
  for (size_t k = 0; k < frontier.points.size(); ++k)
    if (weakly_dominates(frontier.points[k].cost, cost)) return static_cast<int>(k);
  return -1;
}

std::vector<DeviceMesh> candidate_meshes(const Cluster& cluster, int gpus, int max_mesh_axes) {
  if (max_mesh_axes < 1 || max_mesh_axes > 3) throw InputError("--mesh-axes must be 1, 2 or 3");
  return DeviceMesh::for_cluster(cluster, gpus).factorizations(max_mesh_axes);
}

namespace {

// Meshes whose fastest hull strategies are this close (relatively) are solved side by side first.
constexpr double kSameFastest = 0.01;

// A few strategies of `problem` that are optimal for weighted sums of time and memory (the
// frontier's convex hull, coarsely). hull_ends: the fastest and the smallest, and the exchange
// rate between them (seconds per byte) that makes both equally good; hull_fill: the optima for
// weights spread around that rate.
struct Hull {
  std::vector<Cost> costs;  // Problem costs
  double slope = 0;         // 0 when the fastest is also the smallest
};

// The weights of the fastest and of the smallest strategy.
const std::vector<Cost> kHullEnds = {{1, 1e-18}, {1e-18, 1}};

// `ends`: weighted_optima(problem, order, kHullEnds).
Hull hull_ends(const Problem& problem, const std::vector<std::vector<int>>& ends) {
  Hull hull;
  const Cost fastest = evaluate(problem, ends[0]);
  const Cost smallest = evaluate(problem, ends[1]);
  hull.costs = {fastest, smallest};
  if (fastest.memory <= smallest.memory) return hull;
  const double slope = (smallest.time - fastest.time) / (fastest.memory - smallest.memory);
  if (slope > 0 && std::isfinite(slope)) hull.slope = slope;
  return hull;
}

void hull_fill(const Problem& problem, const EliminationOrder& order, Hull& hull) {
  if (hull.slope <= 0) return;
  std::vector<Cost> weights;
  for (double f : {1.0 / 64, 1.0 / 16, 1.0 / 4, 1.0, 4.0, 16.0, 64.0}) weights.push_back({1, hull.slope * f});
  for (const std::vector<int>& a : weighted_optima(problem, order, weights))
    hull.costs.push_back(evaluate(problem, a));
}

}  // namespace

GpuFrontier plan_frontier(const Graph& graph, const Cluster& cluster, int gpus, const ComputeModel& compute,
                          const PlanOptions& options) {
  using clock = std::chrono::steady_clock;
  auto start = clock::now();
  auto seconds = [&] { return std::chrono::duration<double>(clock::now() - start).count(); };
  GpuFrontier out;
  out.gpus = gpus;

  // Every mesh's space, and a few strategies of each on its frontier's convex hull.
  struct Slot {
    std::unique_ptr<StrategySpace> space;
    std::shared_ptr<const EliminationOrder> order;  // of the space's Problem: for FT and the hull strategies
    std::shared_ptr<const OutsideBounds> bounds;     // outside_bounds() in that order, when exact
    bool exact = false;      // tractable(): hull strategies are only sought where FT is exact
    Hull hull;
    MeshStats stats;
    FtResult result;
    std::vector<Cost> costs;  // [point] space->cost(): the result's costs with the workspace
    std::string skipped;
  };
  const std::vector<DeviceMesh> meshes = candidate_meshes(cluster, gpus, options.max_mesh_axes);
  std::vector<Slot> slots(meshes.size());
  if (options.progress) options.progress(std::to_string(gpus) + " GPUs: building " + std::to_string(meshes.size()) + " strategy spaces");
  // Independent per mesh: built on up to as many threads as the machine has.
  parallel_for(meshes.size(), [&](size_t i) {
    Slot& slot = slots[i];
    slot.space = std::make_unique<StrategySpace>(graph, meshes[i], compute, options.space);
    const Problem& problem = slot.space->problem();
    slot.order = std::make_shared<const EliminationOrder>(greedy_elimination_order(problem));
    slot.exact = tractable(problem, *slot.order);
    if (!slot.exact) return;
    // FT carries the step's peak at the last op when the fastest strategy has its peak there
    // (space.h carry_peak_bound); the hull is then found with it.
    std::vector<std::vector<int>> ends = weighted_optima(problem, *slot.order, kHullEnds);
    if (slot.space->carry_peak_bound(ends.front())) ends = weighted_optima(problem, *slot.order, kHullEnds);
    slot.hull = hull_ends(problem, ends);
  });
  // A tractable mesh's outside bounds (for FT's known strategies), computed when the schedule
  // below has a thread free for them.
  const auto add_bounds = [&](size_t i) {
    Slot& slot = slots[i];
    if (slot.exact) slot.bounds = std::make_shared<const OutsideBounds>(outside_bounds(slot.space->problem(), *slot.order));
  };

  // Solve the most promising meshes first (fastest hull strategy): each frontier found lets FT
  // leave out, on the later meshes, what it strictly dominates. Known costs from another mesh are
  // full costs (workspace included) less this mesh's workspace floor, so only points whose every
  // completion is strictly dominated after re-costing are left out (ft.h "Known strategies").
  std::vector<size_t> solve_order(slots.size());
  std::iota(solve_order.begin(), solve_order.end(), size_t{0});
  const auto fastest = [&](size_t i) {
    double t = std::numeric_limits<double>::infinity();
    for (Cost c : slots[i].hull.costs) t = std::min(t, c.time);
    return t;
  };
  std::stable_sort(solve_order.begin(), solve_order.end(), [&](size_t x, size_t y) { return fastest(x) < fastest(y); });
  // A tractable space is solved as built, in the order and with the bounds computed with it; else,
  // or when a factor would pass max_factor_points, by the wide-region fallback.
  const auto solve_mesh = [](const Slot& slot, FtOptions ft, std::string& approximation) {
    if (slot.exact) {
      ft.order = slot.order;
      ft.bounds = slot.bounds;
      try {
        return solve_ft_branched(slot.space->problem(), ft);
      } catch (const FtMemoryLimit&) {
        throw;
      } catch (const std::length_error&) {
      }
    }
    ft.order = nullptr;
    ft.bounds = nullptr;
    return solve_with_fallback(*slot.space, {}, ft, approximation);
  };
  std::mutex progress_lock;
  const auto solve = [&](size_t i, const std::vector<Cost>& found, int64_t max_bytes) {
    Slot& slot = slots[i];
    StrategySpace& space = *slot.space;
    const std::string label = std::to_string(gpus) + " GPUs, mesh " + space.mesh().str();
    MeshStats& ms = slot.stats;
    ms.mesh = space.mesh().str();
    ms.variables = static_cast<int>(space.variables().size());
    for (const Variable& v : space.variables()) ms.configurations += static_cast<int64_t>(v.configs.size());
    // One solve; false when FT carried the peak bound and a point's peak lies elsewhere, so that
    // the frontier may miss strategies (see below) and the mesh is solved again without it.
    double seconds_before = 0;
    const auto attempt = [&]() -> bool {
      FtOptions ft;
      ft.epsilon = options.epsilon;
      ft.max_factor_points = options.max_factor_points;
      ft.max_bytes = max_bytes;
      // ft.threads stays 0: each mesh may use every hardware thread for its big factors, so when
      // one of a wave finishes early the others take its cores.
      ft.known = slot.hull.costs;
      const double floor = space.workspace_floor();
      for (Cost c : found) ft.known.push_back({c.time, std::max(0.0, c.memory - floor)});
      double last = -1;
      if (options.progress) {
        ft.progress = [&](const FtProgress& p) {
          if (p.seconds - last < 0.5 && p.eliminated != p.total) return;
          last = p.seconds;
          std::lock_guard<std::mutex> hold(progress_lock);
          options.progress(label + ": " + std::to_string(p.eliminated) + "/" + std::to_string(p.total) + " variables, " +
                           std::to_string(p.factor_bytes >> 20) + " MiB");
        };
      }
      try {
        try {
          slot.result = solve_mesh(slot, ft, ms.approximation);
        } catch (const FtMemoryLimit&) {
          if (ft.epsilon > 0) throw;
          // An exact frontier this big has its points microseconds apart: thin it, and say so.
          ft.epsilon = kFallbackEpsilon;
          slot.result = solve_mesh(slot, ft, ms.approximation);
          ms.approximation = "approximate: the exact frontier passed the planner memory limit of " + format_bytes(max_bytes) +
                             " (--planner-memory); solved with epsilon 0.01 (points about 1% apart)" +
                             (ms.approximation.empty() ? "" : "; " + ms.approximation);
        }
      } catch (const FtMemoryLimit&) {
        slot.skipped = space.mesh().str() + ": FT's working set passed the planner memory limit of " + format_bytes(max_bytes) +
                       " (--planner-memory), even with epsilon " + format_epsilon(ft.epsilon);
        return true;
      } catch (const std::length_error& e) {
        slot.skipped = space.mesh().str() + ": " + e.what();
        return true;
      }
      ms.frontier_points = static_cast<int>(slot.result.points.size());
      // Each point's full cost: FT's costs are evaluate()'s sums, so this is space.cost() without
      // summing again. Points go by time ascending; one whose sum plus the workspace floor already
      // reaches the least full memory of the faster points is dominated whatever its workspace, so
      // its step peak is not computed and it is dropped, as is one that its full cost shows
      // dominated: neither could be on the merged frontier. (Along one FT frontier the summed memory
      // falls point by point, so this rarely skips a peak: on GPT-2 XL at 64 GPUs none; the merge
      // then thins the meshes.) The peaks are found incrementally (WorkspaceScan).
      std::vector<FrontierPoint> kept;
      double least = std::numeric_limits<double>::infinity();
      StrategySpace::WorkspaceScan scan(space);
      for (FrontierPoint& p : slot.result.points) {
        if (p.cost.memory + floor >= least) continue;
        const double bound = space.peak_bound(p.assignment);
        const double workspace = scan.workspace(p.assignment);
        if (space.peak_bound_carried() && workspace != bound) return false;
        const double full = p.cost.memory - bound + workspace;
        if (full >= least) continue;
        least = full;
        slot.costs.push_back({p.cost.time, full});
        kept.push_back(std::move(p));
      }
      slot.result.points = std::move(kept);
      ms.ft = slot.result.stats;
      ms.ft.seconds += seconds_before;
      ms.peak_exact = space.peak_bound_carried();
      return true;
    };
    // With the peak bound carried, FT is exact for time and summed memory plus the bound; when
    // every point it returns has its whole workspace in the bound (checked above, for each point
    // the re-costing examines), every strategy is dominated by a reported one in the full memory
    // too: a strategy s has an FT point q no slower with q's sum plus bound at most s's, which is
    // at most s's full memory, and q's full memory is its sum plus bound. Else the bound is
    // dropped and the mesh solved on the summed memory, as without it.
    if (!attempt()) {
      seconds_before = slot.result.stats.seconds;
      space.drop_peak_bound();
      slot.bounds = slot.exact ? std::make_shared<const OutsideBounds>(outside_bounds(space.problem(), *slot.order)) : nullptr;
      slot.costs.clear();
      ms.approximation.clear();
      attempt();
    }
  };
  // The first wave: the most promising mesh, and beside it (up to one per hardware thread) the
  // meshes whose fastest hull strategy is as fast within kSameFastest: meshes this close share
  // most of the frontier, so one would prune little of the other, and solving them one after the
  // other leaves cores idle (GPT-2 XL's [2,4] and [4,2] on 8 GPUs). It has no other frontier to be
  // pruned by, so more of its own hull instead (hull_fill), found beside its outside bounds; the
  // other meshes' bounds are found while it is solved. Then all the others, one per hardware
  // thread at a time, each knowing the first wave's frontiers: the meshes that matter most are in
  // it, so they prune the rest, and no thread waits for a slow mesh of a wave. What a mesh leaves
  // out depends only on the hulls, never on timing.
  std::vector<Cost> found;  // full costs of the frontier points of the first wave
  const size_t threads = std::max(1u, std::thread::hardware_concurrency());
  size_t first_wave = 1;
  while (first_wave < std::min(threads, solve_order.size()) &&
         fastest(solve_order[first_wave]) <= fastest(solve_order[0]) * (1 + kSameFastest))
    ++first_wave;
  parallel_for(2 * first_wave, [&](size_t k) {
    const size_t i = solve_order[k % first_wave];
    if (k >= first_wave) return add_bounds(i);
    if (slots[i].exact) hull_fill(slots[i].space->problem(), *slots[i].order, slots[i].hull);
  });
  // Meshes solved side by side share the planner memory limit.
  const size_t rest = solve_order.size() - first_wave;
  parallel_for(first_wave + rest, [&](size_t k) {
    if (k < first_wave) return solve(solve_order[k], found, options.max_planner_bytes / static_cast<int64_t>(first_wave));
    add_bounds(solve_order[k]);
  });
  for (size_t k = 0; k < first_wave; ++k) {
    const Slot& slot = slots[solve_order[k]];
    found.insert(found.end(), slot.costs.begin(), slot.costs.end());
  }
  const int64_t share = options.max_planner_bytes / static_cast<int64_t>(std::max<size_t>(1, std::min(threads, rest)));
  parallel_for(rest, [&](size_t k) { solve(solve_order[first_wave + k], found, share); });

  // Assembled in candidate order, so ties keep the earlier mesh whatever the solve order.
  std::vector<PlanPoint> all;
  for (Slot& slot : slots) {
    if (!slot.skipped.empty()) {
      out.skipped.push_back(slot.skipped);
      continue;
    }
    out.peak_bytes = std::max(out.peak_bytes, slot.result.stats.peak_bytes);
    const int index = static_cast<int>(out.spaces.size());
    for (size_t k = 0; k < slot.result.points.size(); ++k)
      all.push_back({slot.costs[k], index, std::move(slot.result.points[k].assignment)});
    out.spaces.push_back(std::move(slot.space));
    out.meshes.push_back(std::move(slot.stats));
  }
  if (out.spaces.empty()) throw InputError("no mesh for " + std::to_string(gpus) + " GPUs could be planned: " + out.skipped.front());
  out.points = pareto_merge(std::move(all));
  out.seconds = seconds();
  return out;
}

}  // namespace tensoropt::planner
