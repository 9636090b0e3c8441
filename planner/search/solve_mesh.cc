// One mesh's solve: FT exact where the space is tractable, else the wide-region fallback; thinned
// to epsilon 0.01 when the exact frontier passes the planner memory limit; solved again without
// the peak bound when a point's peak lies elsewhere.
#include <algorithm>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "graph/units.h"
#include "planner/ft/branch.h"
#include "planner/search/mesh_slot.h"
#include "planner/search/restricted.h"

namespace tensoropt::planner {

namespace {

// The epsilon a mesh is solved with when its exact frontier passes the planner memory limit.
constexpr double kFallbackEpsilon = 0.01;

std::string format_epsilon(double e) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", e);
  return text;
}

// A tractable space is solved as built, in the order and with the bounds computed with it; one
// whose exact search passes the work budget is relaxed, or solved exactly without the budget
// where no relaxation helps; else, or when a factor would pass max_factor_points, by the
// wide-region fallback (planner/search/restricted.h).
FtResult solve_once(const MeshSlot& slot, FtOptions ft, Approximation& approximation) {
  if (slot.exact) {
    ft.order = slot.order;
    ft.bounds = slot.bounds;
    try {
      const auto solve = [&](const FtOptions& o) { return solve_ft_branched(*slot.problem, o); };
      std::vector<FrontierPoint> hull;  // exact frontier points, where the repaired ones may miss
      for (const std::vector<int>& a : slot.hull.strategies) hull.push_back({{}, a});
      return solve_exact_or_relaxed(*slot.problem, *slot.order, ft, solve, approximation, std::move(hull));
    } catch (const FtMemoryLimit&) {
      throw;
    } catch (const std::length_error&) {
    }
  }
  ft.order = nullptr;
  ft.bounds = nullptr;
  return solve_with_fallback(*slot.space, {}, ft, approximation);
}

// slot.result from solve_once, thinned when the exact frontier is too big; false, with
// slot.skipped saying why, when the mesh cannot be solved.
bool solve_or_skip(MeshSlot& slot, FtOptions ft, int64_t max_bytes) {
  Approximation approximation;
  approximation.within = ft.epsilon;
  try {
    try {
      slot.result = solve_once(slot, ft, approximation);
    } catch (const FtMemoryLimit&) {
      if (ft.epsilon > 0) throw;
      // An exact frontier this big has its points microseconds apart: thin it, and say so.
      ft.epsilon = kFallbackEpsilon;
      approximation = Approximation{};
      approximation.within = kFallbackEpsilon;
      slot.result = solve_once(slot, ft, approximation);
      approximation.text = "approximate: the exact frontier passed the planner memory limit of " + bytes_human(static_cast<double>(max_bytes)) +
                           " (--planner-memory); solved with epsilon 0.01 (points about 1% apart)" +
                           (approximation.text.empty() ? "" : "; " + approximation.text);
    }
    slot.approximation = std::move(approximation);
  } catch (const FtMemoryLimit&) {
    slot.skipped = slot.space->mesh().str() + ": FT's working set passed the planner memory limit of " + bytes_human(static_cast<double>(max_bytes)) +
                   " (--planner-memory), even with epsilon " + format_epsilon(ft.epsilon);
    return false;
  } catch (const std::length_error& e) {
    slot.skipped = slot.space->mesh().str() + ": " + e.what();
    return false;
  }
  return true;
}

// One solve; false when FT carried the peak bound and a point's peak lies elsewhere, so that
// the frontier may miss strategies (see solve_mesh) and the mesh is solved again without it.
bool attempt(MeshSlot& slot, const std::vector<Cost>& found, int64_t max_bytes, double seconds_before,
             const SolveContext& context) {
  const PlanOptions& options = context.options;
  const StrategySpace& space = *slot.space;
  const std::string label = count_of(context.gpus, "GPU") + ", mesh " + space.mesh().str();
  FtOptions ft;
  ft.epsilon = options.epsilon;
  ft.max_factor_points = options.max_factor_points;
  ft.max_bytes = max_bytes;
  ft.max_points_built = options.max_exact_points;
  // ft.threads stays 0: each mesh may use every hardware thread for its big factors, so when
  // one of a wave finishes early the others take its cores.
  ft.known = slot.hull.costs;
  const double floor = space.workspace_floor();
  for (Cost c : found) ft.known.push_back({c.time, std::max(0.0, c.memory - floor)});
  double last = -1;
  if (options.progress) {
    // A line every half second for the first ten, then every five: a long solve says how far it
    // is and how long it has run without flooding the terminal.
    ft.progress = [&](const FtProgress& p) {
      if (p.seconds - last < (p.seconds < 10 ? 0.5 : 5.0) && p.eliminated != p.total) return;
      last = p.seconds;
      char elapsed[32];
      std::snprintf(elapsed, sizeof elapsed, "%.1f s", p.seconds);
      std::lock_guard<std::mutex> hold(context.progress_lock);
      options.progress(label + ": " + std::to_string(p.eliminated) + "/" + std::to_string(p.total) + " variables, " +
                       std::to_string(p.factor_bytes >> 20) + " MiB, " + elapsed);
    };
  }
  if (!solve_or_skip(slot, std::move(ft), max_bytes)) return true;
  if (!recost(slot, floor)) return false;
  MeshStats& ms = slot.stats;
  ms.ft = slot.result.stats;
  ms.ft.seconds += seconds_before;
  ms.peak_exact = space.peak_bound_carried();
  return true;
}

}  // namespace

void solve_mesh(MeshSlot& slot, const std::vector<Cost>& found, int64_t max_bytes, const SolveContext& context) {
  StrategySpace& space = *slot.space;
  MeshStats& ms = slot.stats;
  ms.mesh = space.mesh().str();
  ms.variables = static_cast<int>(space.variables().size());
  for (const Variable& v : space.variables()) ms.configurations += static_cast<int64_t>(v.configs.size());
  // With the peak bound carried, FT is exact for time and summed memory plus the bound; when
  // every point it returns has its whole workspace in the bound (checked in recost, for each point
  // the re-costing examines), every strategy is dominated by a reported one in the full memory
  // too: a strategy s has an FT point q no slower with q's sum plus bound at most s's, which is
  // at most s's full memory, and q's full memory is its sum plus bound. Else the bound is
  // dropped and the mesh solved on the summed memory, as without it.
  if (!attempt(slot, found, max_bytes, 0, context)) {
    const double seconds_before = slot.result.stats.seconds;
    space.drop_peak_bound();
    refold(slot);
    slot.bounds = slot.exact ? std::make_shared<const OutsideBounds>(outside_bounds(*slot.problem, *slot.order)) : nullptr;
    slot.costs.clear();
    attempt(slot, found, max_bytes, seconds_before, context);
  }
  // What FT needed is not needed again: freed for the meshes solved after this one.
  slot.problem.reset();
  slot.order.reset();
  slot.bounds.reset();
}

}  // namespace tensoropt::planner
