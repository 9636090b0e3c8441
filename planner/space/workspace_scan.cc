// StrategySpace::WorkspaceScan (space.h): workspace() of many strategies in turn, each found from
// the previous one through the variables that changed, equal to workspace() bit for bit.
#include <cmath>
#include <limits>
#include <vector>

#include "graph/error.h"
#include "planner/space/space.h"

namespace tensoropt::planner {

StrategySpace::WorkspaceScan::WorkspaceScan(const StrategySpace& space) : s_(space) {
  const size_t n = s_.graph_->nodes.size();
  const auto whole = [&](double v) { exact_ = exact_ && std::floor(v) == v && std::fabs(v) < 0x1p52; };
  for (const auto& terms : s_.var_terms_)
    for (const Breakdown& b : terms) whole(b[Term::Activations]);
  for (const auto& [from, to] : s_.link_held_) {
    whole(from);
    whole(to);
  }
  for (const auto& bytes : s_.flight_bytes_)
    for (double v : bytes) whole(v);
  for (const auto& w : s_.workspace_)
    for (double v : w) whole(v);
  for (const CommCost& c : s_.comm_values_) {
    whole(c.transient_forward);
    whole(c.transient_backward);
  }
  const size_t vars = s_.vars_.size();
  at_.resize(n);
  links_of_.resize(vars);
  flights_of_.resize(vars);
  beside_of_.resize(vars);
  for (size_t i = 0; i < vars; ++i) {
    const int pos = s_.position_[i];
    if (pos < 0) continue;
    at_[static_cast<size_t>(pos)].emplace_back(false, static_cast<int>(i));
    // A parameter's candidate reads the workspace of the variable numbered by its position.
    if (s_.vars_[i].kind == VarKind::Parameter) beside_of_[static_cast<size_t>(pos)].push_back(static_cast<int>(i));
  }
  for (size_t e = 0; e < s_.links_.size(); ++e) {
    const Link& l = s_.links_[e];
    links_of_[static_cast<size_t>(l.from)].push_back(static_cast<int>(e));
    links_of_[static_cast<size_t>(l.to)].push_back(static_cast<int>(e));
    if (s_.link_position_[e] >= 0) at_[static_cast<size_t>(s_.link_position_[e])].emplace_back(true, static_cast<int>(e));
  }
  for (size_t f = 0; f < s_.flights_.size(); ++f) flights_of_[static_cast<size_t>(s_.flights_[f].var)].push_back(static_cast<int>(f));
  link_mark_.assign(s_.links_.size(), 0);
  position_mark_.assign(n, 0);
}

void StrategySpace::WorkspaceScan::add_var(int var, double sign) {
  const int pos = s_.position_[static_cast<size_t>(var)];
  if (pos >= 0) held_[static_cast<size_t>(pos)] += sign * s_.var_terms_[static_cast<size_t>(var)][static_cast<size_t>(current_[static_cast<size_t>(var)])][Term::Activations];
  for (int f : flights_of_[static_cast<size_t>(var)]) {
    const Flight& fl = s_.flights_[static_cast<size_t>(f)];
    const double bytes = s_.flight_bytes(fl, current_[static_cast<size_t>(var)]);
    flight_delta_[static_cast<size_t>(fl.first)] += sign * bytes;
    flight_delta_[static_cast<size_t>(fl.last)] -= sign * bytes;
  }
}

void StrategySpace::WorkspaceScan::add_link(int link, double sign) {
  const PeakLink& l = s_.peak_links_[static_cast<size_t>(link)];
  const auto [at_from, at_to] = s_.link_held_[l.pair(current_)];
  if (l.from_position >= 0) held_[static_cast<size_t>(l.from_position)] += sign * at_from;
  if (l.to_position >= 0) held_[static_cast<size_t>(l.to_position)] += sign * at_to;
}

void StrategySpace::WorkspaceScan::refresh(int position) {
  double top = -std::numeric_limits<double>::infinity();
  for (const auto& [link, index] : at_[static_cast<size_t>(position)]) {
    const double t = link ? s_.link_transient(s_.peak_links_[static_cast<size_t>(index)], current_)
                          : s_.var_transient(static_cast<size_t>(index), current_);
    if (t > 0) top = std::max(top, t);
  }
  top_[static_cast<size_t>(position)] = top;
}

void StrategySpace::WorkspaceScan::rebuild(const std::vector<int>& assignment) {
  const size_t n = s_.graph_->nodes.size();
  current_ = assignment;
  held_.assign(n, 0.0);
  flight_delta_.assign(n + 1, 0.0);
  top_.assign(n, 0.0);
  for (size_t i = 0; i < s_.vars_.size(); ++i) add_var(static_cast<int>(i), 1);
  for (size_t e = 0; e < s_.links_.size(); ++e) add_link(static_cast<int>(e), 1);
  for (size_t k = 0; k < n; ++k) refresh(static_cast<int>(k));
}

double StrategySpace::WorkspaceScan::workspace(const std::vector<int>& assignment) {
  TO_CHECK(assignment.size() == s_.vars_.size());
  if (!exact_) return s_.workspace(assignment);
  if (current_.empty()) {
    rebuild(assignment);
  } else {
    changed_.clear();
    for (size_t i = 0; i < assignment.size(); ++i)
      if (assignment[i] != current_[i]) changed_.push_back(static_cast<int>(i));
    links_touched_.clear();
    positions_touched_.clear();
    const auto touch = [&](int pos) {
      if (pos >= 0 && !position_mark_[static_cast<size_t>(pos)]) {
        position_mark_[static_cast<size_t>(pos)] = 1;
        positions_touched_.push_back(pos);
      }
    };
    for (int v : changed_) {
      touch(s_.position_[static_cast<size_t>(v)]);
      for (int p : beside_of_[static_cast<size_t>(v)]) touch(s_.position_[static_cast<size_t>(p)]);
      for (int e : links_of_[static_cast<size_t>(v)]) {
        if (link_mark_[static_cast<size_t>(e)]) continue;
        link_mark_[static_cast<size_t>(e)] = 1;
        links_touched_.push_back(e);
        touch(s_.link_position_[static_cast<size_t>(e)]);
      }
    }
    // Out with the old configurations' bytes, in with the new: whole numbers, so exact.
    for (int v : changed_) add_var(v, -1);
    for (int e : links_touched_) add_link(e, -1);
    for (int v : changed_) current_[static_cast<size_t>(v)] = assignment[static_cast<size_t>(v)];
    for (int v : changed_) add_var(v, 1);
    for (int e : links_touched_) {
      add_link(e, 1);
      link_mark_[static_cast<size_t>(e)] = 0;
    }
    for (int pos : positions_touched_) {
      refresh(pos);
      position_mark_[static_cast<size_t>(pos)] = 0;
    }
  }
  // step_peak()'s scan: freed[k] is everything held after k, in flight the prefix sums.
  const size_t n = held_.size();
  freed_.assign(n, 0.0);
  for (size_t k = n; k-- > 1;) freed_[k - 1] = freed_[k] + held_[k];
  double in_flight = 0, peak = 0;
  for (size_t k = 0; k < n; ++k) {
    in_flight += flight_delta_[k];
    if (top_[k] > 0) {
      const double over = top_[k] + in_flight - freed_[k];
      if (over > peak) peak = over;
    }
  }
  return peak;
}

}  // namespace tensoropt::planner
