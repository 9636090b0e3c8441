// A candidate mesh made ready to solve: its strategy space, elimination order and hull ends, and
// later its outside bounds.
#include <memory>
#include <utility>
#include <vector>

#include "planner/search/mesh_slot.h"
#include "planner/search/restricted.h"

namespace tensoropt::planner {

void build_mesh(MeshSlot& slot, const Graph& graph, const DeviceMesh& mesh, const ComputeModel& compute,
                const SpaceOptions& options) {
  slot.space = std::make_unique<StrategySpace>(graph, mesh, compute, options);
  // The space's own Problem (aliased: the peak bound changes it in place), unless folding the links
  // one side does not see narrows the order. Only then: FT's sums are rounded in another order on
  // the folded Problem, which may break ties between strategies of equal summed cost otherwise,
  // and those differ in workspace.
  const Problem& plain = slot.space->problem();
  auto order = std::make_shared<const EliminationOrder>(greedy_elimination_order(plain));
  auto folded = std::make_shared<const Problem>(fold_independent_edges(plain));
  auto folded_order = std::make_shared<const EliminationOrder>(greedy_elimination_order(*folded));
  slot.folded = folded_order->width < order->width ||
                (!tractable(plain, *order) && tractable(*folded, *folded_order));
  slot.problem = slot.folded ? folded : std::shared_ptr<const Problem>(std::shared_ptr<const Problem>(), &plain);
  slot.order = slot.folded ? folded_order : order;
  slot.exact = tractable(*slot.problem, *slot.order);
  if (!slot.exact) return;
  // FT carries the step's peak at the last op when the fastest strategy has its peak there
  // (space.h carry_peak_bound); the hull is then found with it. It stays carried only if the
  // optimum of time + slope * memory (slope: the exchange rate between the hull's ends, a point
  // in the middle of the frontier) has its peak there too: where that one's peak lies elsewhere,
  // FT's points would not all have their workspace in the bound, and solve_mesh would solve the
  // mesh again without it (all five meshes of a 350M GPT's default export on 64 GPUs did).
  // Dropping the bound gives the Problem back exactly the costs it had, so the hull found before
  // carrying it is the hull again.
  const std::vector<std::vector<int>> plain_ends = hull_end_strategies(*slot.problem, *slot.order);
  if (slot.space->carry_peak_bound(plain_ends.front())) {
    refold(slot);
    if (!slot.exact) return;
    Hull carried = hull_ends(*slot.problem, hull_end_strategies(*slot.problem, *slot.order));
    const bool middle_elsewhere = carried.slope > 0 && [&] {
      const std::vector<int> middle = weighted_optima(*slot.problem, *slot.order, {{1, carried.slope}}).front();
      return slot.space->peak_bound(middle) != slot.space->workspace(middle);
    }();
    if (!middle_elsewhere) {
      slot.hull = std::move(carried);
      return;
    }
    slot.space->drop_peak_bound();
    refold(slot);
    if (!slot.exact) return;
  }
  slot.hull = hull_ends(*slot.problem, plain_ends);
}

void refold(MeshSlot& slot) {
  if (!slot.folded) return;  // the alias sees the space's Problem as it is now
  slot.problem = std::make_shared<const Problem>(fold_independent_edges(slot.space->problem()));
  slot.order = std::make_shared<const EliminationOrder>(elimination_order_of(*slot.problem, slot.order->order));
  slot.exact = tractable(*slot.problem, *slot.order);
}

void add_bounds(MeshSlot& slot) {
  if (slot.exact) slot.bounds = std::make_shared<const OutsideBounds>(outside_bounds(*slot.problem, *slot.order));
}

}  // namespace tensoropt::planner
