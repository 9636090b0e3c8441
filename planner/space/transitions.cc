// Layout transitions as the strategy space costs them (space.h "comm"): each distinct transition
// (shape, element size, from, to, gradient) is costed once while building, by the plan
// redistribute() makes, and added to a Breakdown by purpose and collective kind.
#include <array>
#include <cstdint>

#include "graph/error.h"
#include "planner/parallel/collectives.h"
#include "planner/space/space.h"

namespace tensoropt::planner {

size_t StrategySpace::TransitionKeyHash::operator()(const TransitionKey& k) const {
  uint64_t h = static_cast<uint32_t>(k.shape);
  h = h * 0x9E3779B97F4A7C15ull + static_cast<uint32_t>(k.from);
  h = h * 0x9E3779B97F4A7C15ull + static_cast<uint32_t>(k.to);
  h = h * 0x9E3779B97F4A7C15ull + static_cast<uint32_t>(k.element_bytes) * 4u + (k.gradient ? 1u : 0u) + (k.regather ? 2u : 0u);
  return static_cast<size_t>(h ^ (h >> 29));
}

int32_t StrategySpace::layout_id(const Layout& l) const {
  TO_CHECK(building_);
  return layout_ids_.try_emplace(l, static_cast<int32_t>(layout_ids_.size())).first->second;
}

int32_t StrategySpace::shape_id(int tensor) const {
  TO_CHECK(building_);
  int32_t& id = tensor_shape_id_[static_cast<size_t>(tensor)];
  if (id < 0) id = shape_ids_.try_emplace(graph_->tensors[static_cast<size_t>(tensor)].shape, static_cast<int32_t>(shape_ids_.size())).first->second;
  return id;
}

int32_t StrategySpace::transition_index(int tensor, const Layout& from, int32_t from_id, const Layout& to, int32_t to_id,
                                        bool gradient, bool regather) const {
  TO_CHECK(building_);
  const Tensor& t = graph_->tensors[static_cast<size_t>(tensor)];
  const int eb = options_.training.element_bytes(t);
  const TransitionKey key{shape_id(tensor), from_id, to_id, eb, gradient, regather};
  if (auto it = comm_cache_.find(key); it != comm_cache_.end()) return it->second;
  CommCost c;
  RedistributePlan plan = redistribute(t.shape, eb, from, to, mesh_);
  for (const Step& s : plan.steps)
    if (is_collective(s.kind)) c.forward[static_cast<size_t>(s.kind)] += step_time(s, mesh_);
  c.transient_forward = static_cast<double>(transient_bytes(plan, mesh_));
  if (gradient) {
    const RedistributePlan back = backward_plan(plan, mesh_);
    for (const Step& s : back.steps)
      if (is_collective(s.kind)) c.backward[static_cast<size_t>(s.kind)] += step_time(s, mesh_);
    c.transient_backward = static_cast<double>(transient_bytes(back, mesh_));
  }
  if (regather) {
    for (size_t k = 0; k < c.forward.size(); ++k) c.backward[k] += c.forward[k];
    c.transient_backward += c.transient_forward;
  }
  const int32_t index = static_cast<int32_t>(comm_values_.size());
  comm_values_.push_back(c);
  comm_cache_.emplace(key, index);
  return index;
}

StrategySpace::CommCost StrategySpace::transition(int tensor, const Layout& from, const Layout& to, bool gradient) const {
  return comm_values_[static_cast<size_t>(transition_index(tensor, from, layout_id(from), to, layout_id(to), gradient))];
}

void StrategySpace::add_comm(Breakdown& b, Purpose p, const std::array<double, 4>& times) const {
  for (int k = 0; k < 4; ++k) b[comm_term(p, static_cast<StepKind>(k))] += times[static_cast<size_t>(k)];
}

void StrategySpace::add_plan(Breakdown& b, Purpose p, const RedistributePlan& plan, bool bucketed) const {
  for (const Step& s : plan.steps)
    if (is_collective(s.kind))
      b[comm_term(p, s.kind)] += p == Purpose::Gradient && bucketed ? bucketed_step_time(s, mesh_, bucket_bytes_) : step_time(s, mesh_);
}

}  // namespace tensoropt::planner
