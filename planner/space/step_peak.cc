// The step's peak (space.h "workspace()"): the moment of a strategy's memory peak as the runtime's
// step meets it, what it adds to the summed memory, and the least it can add over every strategy.
#include <algorithm>
#include <vector>

#include "graph/error.h"
#include "planner/space/space.h"

namespace tensoropt::planner {

StrategySpace::StepPeak StrategySpace::step_peak(const std::vector<int>& assignment) const {
  TO_CHECK(assignment.size() == vars_.size());
  const size_t n = graph_->nodes.size();
  auto config = [&](int var) { return assignment[static_cast<size_t>(var)]; };
  // Scratch reused by every call on this thread (the planner re-costs thousands of points).
  thread_local std::vector<double> held, freed, in_flight, regenerated;
  // Activations by the position after whose backward they are freed; -1: never in the step.
  held.assign(n, 0.0);
  double total = 0;
  auto hold = [&](int pos, double bytes) {
    total += bytes;
    if (pos >= 0) held[static_cast<size_t>(pos)] += bytes;
  };
  for (size_t i = 0; i < vars_.size(); ++i) hold(position_[i], var_terms_[i][static_cast<size_t>(assignment[i])][Term::Activations]);
  for (const PeakLink& l : peak_links_) {
    const auto [at_from, at_to] = link_held_[l.pair(assignment)];
    hold(l.from_position, at_from);
    hold(l.to_position, at_to);
  }
  // freed[k]: what the backward has freed when position k's backward runs (everything after k).
  freed.assign(n, 0.0);
  for (size_t k = n; k-- > 1;) freed[k - 1] = freed[k] + held[k];
  // in_flight[k]: gradients accumulating for tensors made before k and read after it.
  in_flight.assign(n + 1, 0.0);
  regenerated.assign(n + 1, 0.0);  // of in_flight, what is activations
  for (const Flight& f : flights_) {
    const double bytes = flight_bytes(f, config(f.var));
    if (bytes == 0) continue;
    in_flight[static_cast<size_t>(f.first)] += bytes;
    in_flight[static_cast<size_t>(f.last)] -= bytes;
    if (!f.regenerated) continue;
    regenerated[static_cast<size_t>(f.first)] += bytes;
    regenerated[static_cast<size_t>(f.last)] -= bytes;
  }
  for (size_t k = 1; k <= n; ++k) {
    in_flight[k] += in_flight[k - 1];
    regenerated[k] += regenerated[k - 1];
  }
  StepPeak peak{total, 0, 0};  // the end of forward: every activation held, nothing in flight
  auto candidate = [&](int pos, double transient) {
    if (transient <= 0 || pos < 0) return;
    const auto k = static_cast<size_t>(pos);
    const double over = transient + in_flight[k] - freed[k];
    if (over > peak.workspace) peak = {total - freed[k] + regenerated[k], transient + in_flight[k] - regenerated[k], over};
  };
  for (size_t i = 0; i < vars_.size(); ++i) candidate(position_[i], var_transient(i, assignment));
  for (const PeakLink& l : peak_links_) candidate(l.link_position, link_transient(l, assignment));
  return peak;
}

double StrategySpace::var_transient(size_t var, const std::vector<int>& a) const {
  const double w = workspace_[var][static_cast<size_t>(a[var])];
  if (vars_[var].kind != VarKind::Parameter || w <= 0 || position_[var] < 0) return w;
  // A parameter's gradient is synchronised inside its first reader's backward, beside that op's
  // gradients (the op variable numbered by the parameter's position); a ZeRO-2 parameter's own
  // gradient is in its workspace already, not also in flight.
  const int own = param_flight_[var];
  const auto reader = static_cast<size_t>(position_[var]);
  const double beside = workspace_[reader][static_cast<size_t>(a[reader])];
  return w + beside - (own < 0 ? 0 : flight_bytes(flights_[static_cast<size_t>(own)], a[var]));
}

double StrategySpace::link_transient(const PeakLink& l, const std::vector<int>& a) const {
  const int32_t index = comm_link_[l.pair(a)];
  if (index < 0) return 0;
  // Forward, before the reader runs; backward, inside the reader's backward, beside its
  // gradients (its workspace).
  const CommCost& c = comm_values_[static_cast<size_t>(index)];
  const double beside = l.to_op ? workspace_[static_cast<size_t>(l.to)][static_cast<size_t>(a[static_cast<size_t>(l.to)])] : 0;
  return std::max(c.transient_forward, c.transient_backward > 0 ? c.transient_backward + beside : 0.0);
}

double StrategySpace::workspace(const std::vector<int>& assignment) const { return step_peak(assignment).workspace; }

double StrategySpace::workspace_floor() const {
  if (bound_carried_) return 0;
  // Any strategy's workspace is at least a candidate's least transient less the most the
  // positions after it can hold (gradients in flight only add).
  const size_t n = graph_->nodes.size();
  std::vector<double> most_held(n, 0.0);
  for (size_t i = 0; i < vars_.size(); ++i) {
    if (position_[i] < 0) continue;
    double m = 0;
    for (const Breakdown& b : var_terms_[i]) m = std::max(m, b[Term::Activations]);
    most_held[static_cast<size_t>(position_[i])] += m;
  }
  for (const Link& l : links_) {  // at most one copy of the tensor at each end
    const double whole = static_cast<double>(numel(graph_->tensors[static_cast<size_t>(l.tensor)].shape)) *
                         options_.training.element_bytes(graph_->tensors[static_cast<size_t>(l.tensor)]);
    for (int var : {l.from, l.to})
      if (position_[static_cast<size_t>(var)] >= 0) most_held[static_cast<size_t>(position_[static_cast<size_t>(var)])] += whole;
  }
  std::vector<double> after(n, 0.0);
  for (size_t k = n; k-- > 1;) after[k - 1] = after[k] + most_held[k];
  double floor = 0;
  for (size_t i = 0; i < vars_.size(); ++i) {
    if (workspace_[i].empty() || position_[i] < 0) continue;
    const double least = *std::min_element(workspace_[i].begin(), workspace_[i].end());
    if (least > 0) floor = std::max(floor, least - after[static_cast<size_t>(position_[i])]);
  }
  return floor;
}

}  // namespace tensoropt::planner
