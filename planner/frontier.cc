// Frontier construction, invariant checks and the sum/union/epsilon algebra.
#include "planner/frontier.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>

namespace tensoropt::planner {
namespace {

bool cost_less(Cost a, Cost b) {
  return a.time < b.time || (a.time == b.time && a.memory < b.memory);
}

// Sorted by (time, memory) with ties in input order: keeps each point whose memory is strictly
// below every point kept before it. One linear pass.
std::vector<Frontier::Point> prune_sorted(const std::vector<Frontier::Point>& sorted) {
  std::vector<Frontier::Point> kept;
  double best_memory = std::numeric_limits<double>::infinity();
  for (const Frontier::Point& p : sorted) {
    if (p.cost.memory < best_memory) {
      kept.push_back(p);
      best_memory = p.cost.memory;
    }
  }
  return kept;
}

void check_not_nan(const std::vector<Frontier::Point>& points) {
  for (size_t i = 0; i < points.size(); ++i) {
    if (std::isnan(points[i].cost.time) || std::isnan(points[i].cost.memory)) {
      throw std::invalid_argument("frontier: point " + std::to_string(i) + " has a NaN cost");
    }
  }
}

}  // namespace

Frontier Frontier::zero(Handle handle) { return Frontier({Point{Cost{0, 0}, handle}}); }

Frontier Frontier::from_points(std::vector<Point> raw) {
  check_not_nan(raw);
  std::stable_sort(raw.begin(), raw.end(),
                   [](const Point& a, const Point& b) { return cost_less(a.cost, b.cost); });
  return Frontier(prune_sorted(raw));
}

Frontier Frontier::from_sorted(std::vector<Point> sorted) {
  check_not_nan(sorted);
  for (size_t i = 1; i < sorted.size(); ++i) {
    const Cost prev = sorted[i - 1].cost;
    const Cost cur = sorted[i].cost;
    if (!(prev.time < cur.time && prev.memory > cur.memory)) {
      throw std::invalid_argument("frontier: point " + std::to_string(i) +
                                  " breaks the invariant (time strictly ascending, memory "
                                  "strictly descending)");
    }
  }
  return Frontier(std::move(sorted));
}

std::string Frontier::to_string() const {
  std::string out;
  char buf[64];
  for (const Point& p : points_) {
    std::snprintf(buf, sizeof buf, "(%g,%g)", p.cost.time, p.cost.memory);
    if (!out.empty()) out += ' ';
    out += buf;
  }
  return out;
}

Frontier minkowski_sum(const Frontier& a, const Frontier& b, const HandleCombiner& combine) {
  if (a.empty() || b.empty()) return Frontier();
  struct Candidate {
    Cost cost;
    uint32_t i, j;
  };
  const auto& pa = a.points();
  const auto& pb = b.points();
  std::vector<Candidate> candidates;
  candidates.reserve(pa.size() * pb.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    for (size_t j = 0; j < pb.size(); ++j) {
      candidates.push_back({pa[i].cost + pb[j].cost, static_cast<uint32_t>(i),
                            static_cast<uint32_t>(j)});
    }
  }
  // A sum of two frontiers is already sorted when either has one point.
  if (pa.size() > 1 && pb.size() > 1) {
    std::sort(candidates.begin(), candidates.end(), [](const Candidate& x, const Candidate& y) {
      if (cost_less(x.cost, y.cost)) return true;
      if (cost_less(y.cost, x.cost)) return false;
      return x.i != y.i ? x.i < y.i : x.j < y.j;
    });
  }
  std::vector<Frontier::Point> kept;
  double best_memory = std::numeric_limits<double>::infinity();
  for (const Candidate& c : candidates) {
    if (!(c.cost.memory < best_memory)) continue;
    best_memory = c.cost.memory;
    const Handle h = combine ? combine(pa[c.i].handle, pb[c.j].handle) : kNoHandle;
    kept.push_back({c.cost, h});
  }
  return Frontier::from_sorted(std::move(kept));
}

Frontier pareto_union(const Frontier& a, const Frontier& b) {
  std::vector<Frontier::Point> merged;
  merged.reserve(a.size() + b.size());
  // std::merge takes from the first range on equivalent keys: a's point wins a tie.
  std::merge(a.points().begin(), a.points().end(), b.points().begin(), b.points().end(),
             std::back_inserter(merged), [](const Frontier::Point& x, const Frontier::Point& y) {
               return cost_less(x.cost, y.cost);
             });
  return Frontier::from_sorted(prune_sorted(merged));
}

Frontier epsilon_prune(const Frontier& f, double delta) {
  if (!(delta >= 0)) throw std::invalid_argument("epsilon_prune: delta must be >= 0");
  if (delta == 0) return f;
  std::vector<Frontier::Point> kept;
  for (const Frontier::Point& p : f.points()) {
    if (kept.empty() || kept.back().cost.memory > (1 + delta) * p.cost.memory) kept.push_back(p);
  }
  return Frontier::from_sorted(std::move(kept));
}

}  // namespace tensoropt::planner
