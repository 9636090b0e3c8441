// A candidate mesh made ready to solve: its strategy space, elimination order and hull ends, and
// later its outside bounds.
#include <memory>
#include <vector>

#include "planner/search/mesh_slot.h"
#include "planner/search/restricted.h"

namespace tensoropt::planner {

void build_mesh(MeshSlot& slot, const Graph& graph, const DeviceMesh& mesh, const ComputeModel& compute,
                const SpaceOptions& options) {
  slot.space = std::make_unique<StrategySpace>(graph, mesh, compute, options);
  slot.problem = std::make_shared<const Problem>(fold_independent_edges(slot.space->problem()));
  slot.order = std::make_shared<const EliminationOrder>(greedy_elimination_order(*slot.problem));
  slot.exact = tractable(*slot.problem, *slot.order);
  if (!slot.exact) return;
  // FT carries the step's peak at the last op when the fastest strategy has its peak there
  // (space.h carry_peak_bound); the hull is then found with it.
  std::vector<std::vector<int>> ends = hull_end_strategies(*slot.problem, *slot.order);
  if (slot.space->carry_peak_bound(ends.front())) {
    refold(slot);
    if (!slot.exact) return;
    ends = hull_end_strategies(*slot.problem, *slot.order);
  }
  slot.hull = hull_ends(*slot.problem, ends);
}

void refold(MeshSlot& slot) {
  slot.problem = std::make_shared<const Problem>(fold_independent_edges(slot.space->problem()));
  slot.order = std::make_shared<const EliminationOrder>(elimination_order_of(*slot.problem, slot.order->order));
  slot.exact = tractable(*slot.problem, *slot.order);
}

void add_bounds(MeshSlot& slot) {
  if (slot.exact) slot.bounds = std::make_shared<const OutsideBounds>(outside_bounds(*slot.problem, *slot.order));
}

}  // namespace tensoropt::planner
