// The peak bound (space.h carry_peak_bound()): the part of the step's peak at the last op's
// backward that is a sum over variables and one link, carried in the Problem's memory while FT
// solves it and given back exactly afterwards.
#include <algorithm>
#include <tuple>
#include <vector>

#include "graph/error.h"
#include "planner/space/space.h"

namespace tensoropt::planner {

bool StrategySpace::carry_peak_bound(const std::vector<int>& reference) {
  TO_CHECK(!bound_carried_ && reference.size() == vars_.size());
  if (graph_->nodes.empty()) return false;
  const int last = static_cast<int>(graph_->nodes.size()) - 1;
  int op = -1;
  for (size_t i = 0; i < vars_.size(); ++i)
    if (vars_[i].kind == VarKind::Op && position_[i] == last) op = static_cast<int>(i);
  if (op < 0) return false;
  const std::vector<double>& own = workspace_[static_cast<size_t>(op)];
  if (own.empty() || *std::min_element(own.begin(), own.end()) <= 0) return false;
  bound_link_ = peak_bound_link(op, last, reference);
  add_peak_bound_terms(op, last, reference);
  // Carried only where it is the reference's whole workspace: where the peak lies elsewhere the
  // bound would miss it, and FT would trade summed memory for a bound that does not decide it.
  if (peak_bound(reference) != workspace(reference)) {
    bound_vars_.clear();
    bound_link_ = -1;
    bound_pair_.clear();
    return false;
  }
  // Added to the Problem; the costs it had are kept, so drop_peak_bound() restores them exactly.
  bound_carried_ = true;
  for (BoundTerms& t : bound_vars_) {
    t.before = problem_.node_cost[t.var];
    for (size_t k = 0; k < t.bytes.size(); ++k) problem_.node_cost[t.var][k].memory += t.bytes[k];
  }
  if (bound_link_ >= 0) {
    Problem::Edge& edge = problem_.edges[static_cast<size_t>(bound_link_)];
    TO_CHECK(edge.u == peak_links_[static_cast<size_t>(bound_link_)].from && edge.cost.size() == bound_pair_.size());
    unbound_edge_ = edge.cost;
    for (size_t at = 0; at < bound_pair_.size(); ++at) edge.cost[at].memory += bound_pair_[at];  // [from config][to config]
  }
  return true;
}

int StrategySpace::peak_bound_link(int op, int last, const std::vector<int>& reference) const {
  // Nothing is held after the last position, so there the peak is transient + in flight. Which
  // link the bound follows: one carrying model state first (a weight gathered for the op: the
  // summed memory counts it stored split, and only the transient shows the gathered copy, so this
  // is where the summed frontier is blind), then the one with the largest transient under the
  // reference, then the one whose transient can be largest.
  int chosen = -1;
  std::tuple<bool, double, double> best{false, 0.0, 0.0};
  std::vector<int> a = reference;
  for (size_t e = 0; e < peak_links_.size(); ++e) {
    const PeakLink& l = peak_links_[e];
    if (l.to != op || l.link_position != last) continue;
    double most = 0;
    for (int x = 0; x < static_cast<int>(vars_[static_cast<size_t>(l.from)].configs.size()); ++x)
      for (int y = 0; y < l.kv; ++y) {
        a[static_cast<size_t>(l.from)] = x;
        a[static_cast<size_t>(l.to)] = y;
        most = std::max(most, link_transient(l, a));
      }
    const std::tuple<bool, double, double> key{links_[e].state, link_transient(l, reference), most};
    if (most > 0 && (chosen < 0 || key > best)) {
      best = key;
      chosen = static_cast<int>(e);
    }
  }
  return chosen;
}

void StrategySpace::add_peak_bound_terms(int op, int last, const std::vector<int>& reference) {
  const std::vector<double>& own = workspace_[static_cast<size_t>(op)];
  if (bound_link_ < 0) {
    for (size_t k = 0; k < own.size(); ++k) add_bound_bytes(static_cast<size_t>(op), k, own[k]);
  } else {
    const PeakLink& l = peak_links_[static_cast<size_t>(bound_link_)];
    const size_t ku = vars_[static_cast<size_t>(l.from)].configs.size();
    const auto kv = static_cast<size_t>(l.kv);
    std::vector<int> a = reference;
    bound_pair_.assign(ku * kv, 0.0);
    for (size_t x = 0; x < ku; ++x)
      for (size_t y = 0; y < kv; ++y) {
        a[static_cast<size_t>(l.from)] = static_cast<int>(x);
        a[static_cast<size_t>(l.to)] = static_cast<int>(y);
        bound_pair_[x * kv + y] = std::max(own[y], link_transient(l, a));
      }
  }
  for (const Flight& f : flights_) {
    if (!(f.first <= last && last < f.last)) continue;
    for (size_t k = 0; k < vars_[static_cast<size_t>(f.var)].configs.size(); ++k)
      add_bound_bytes(static_cast<size_t>(f.var), k, flight_bytes(f, static_cast<int>(k)));
  }
}

void StrategySpace::add_bound_bytes(size_t var, size_t config, double bytes) {
  if (bytes == 0) return;
  auto it = std::find_if(bound_vars_.begin(), bound_vars_.end(), [&](const BoundTerms& t) { return t.var == var; });
  if (it == bound_vars_.end()) it = bound_vars_.insert(it, {var, std::vector<double>(vars_[var].configs.size(), 0.0), {}});
  it->bytes[config] += bytes;
}

void StrategySpace::drop_peak_bound() {
  if (!bound_carried_) return;
  for (BoundTerms& t : bound_vars_) problem_.node_cost[t.var] = std::move(t.before);
  if (bound_link_ >= 0) problem_.edges[static_cast<size_t>(bound_link_)].cost = std::move(unbound_edge_);
  unbound_edge_.clear();
  bound_carried_ = false;
  bound_vars_.clear();
  bound_link_ = -1;
  bound_pair_.clear();
}

double StrategySpace::peak_bound(const std::vector<int>& assignment) const {
  TO_CHECK(assignment.size() == vars_.size());
  double b = 0;
  for (const BoundTerms& t : bound_vars_) b += t.bytes[static_cast<size_t>(assignment[t.var])];
  if (bound_link_ >= 0) {
    const PeakLink& l = peak_links_[static_cast<size_t>(bound_link_)];
    b += bound_pair_[l.pair(assignment) - l.offset];
  }
  return b;
}

}  // namespace tensoropt::planner
