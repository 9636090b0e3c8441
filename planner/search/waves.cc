// The order meshes are solved in, and what each knows of the others' frontiers when it is solved
// (planner/plan.h "Solving").
#include <algorithm>
#include <limits>
#include <mutex>
#include <numeric>
#include <thread>
#include <vector>

#include "planner/ft/thread_pool.h"
#include "planner/search/mesh_slot.h"

namespace tensoropt::planner {

namespace {

// Meshes whose fastest hull strategies are this close (relatively) are solved side by side first.
constexpr double kSameFastest = 0.01;

double fastest(const MeshSlot& slot) {
  double t = std::numeric_limits<double>::infinity();
  for (Cost c : slot.hull.costs) t = std::min(t, c.time);
  return t;
}

}  // namespace

void solve_in_waves(std::vector<MeshSlot>& slots, int gpus, const PlanOptions& options) {
  // Solve the most promising meshes first (fastest hull strategy): each frontier found lets FT
  // leave out, on the later meshes, what it strictly dominates. Known costs from another mesh are
  // full costs (workspace included) less this mesh's workspace floor, so only points whose every
  // completion is strictly dominated after re-costing are left out (ft.h "Known strategies").
  std::vector<size_t> solve_order(slots.size());
  std::iota(solve_order.begin(), solve_order.end(), size_t{0});
  std::stable_sort(solve_order.begin(), solve_order.end(),
                   [&](size_t x, size_t y) { return fastest(slots[x]) < fastest(slots[y]); });
  std::mutex progress_lock;
  const SolveContext context{options, gpus, progress_lock};
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
         fastest(slots[solve_order[first_wave]]) <= fastest(slots[solve_order[0]]) * (1 + kSameFastest))
    ++first_wave;
  parallel_for(2 * first_wave, [&](size_t k) {
    MeshSlot& slot = slots[solve_order[k % first_wave]];
    if (k >= first_wave) return add_bounds(slot);
    if (slot.exact) hull_fill(*slot.problem, *slot.order, slot.hull);
  });
  // Meshes solved side by side share the planner memory limit.
  const size_t rest = solve_order.size() - first_wave;
  parallel_for(first_wave + rest, [&](size_t k) {
    if (k < first_wave) return solve_mesh(slots[solve_order[k]], found, options.max_planner_bytes / static_cast<int64_t>(first_wave), context);
    add_bounds(slots[solve_order[k]]);
  });
  for (size_t k = 0; k < first_wave; ++k) {
    const MeshSlot& slot = slots[solve_order[k]];
    found.insert(found.end(), slot.costs.begin(), slot.costs.end());
  }
  const int64_t share = options.max_planner_bytes / static_cast<int64_t>(std::max<size_t>(1, std::min(threads, rest)));
  parallel_for(rest, [&](size_t k) { solve_mesh(slots[solve_order[first_wave + k]], found, share, context); });
}

}  // namespace tensoropt::planner
