// Two-objective Pareto frontiers of (time, memory) costs and their algebra (docs/design.md "FT (frontier tracking)").
//
// A Frontier is a value: a list of mutually non-dominated points sorted by time strictly
// ascending, so memory strictly descending. Every way of building one either establishes that
// invariant (from_points sorts and prunes in one linear pass) or checks it (from_sorted).
// Each point carries an opaque provenance Handle; the algebra copies handles (pareto_union) or
// asks the caller to combine them (minkowski_sum) but never interprets them. FT uses handles to
// rebuild the strategy behind each point (planner/ft/provenance.h).
//
// Algebra (both objectives minimised):
//   minkowski_sum(a, b)  series combine: every a_i + b_j, pruned. Identity: Frontier::zero();
//                        the empty frontier is absorbing.
//   pareto_union(a, b)   parallel combine (choice): a ∪ b, pruned. Identity: the empty Frontier.
//   epsilon_prune(f, d)  drops points that a kept point (1+d)-dominates.
//   coverage(a, b)       every point of b weakly dominated by a point of a: then a ⊕ c covers
//                        b ⊕ c for every c, so b can be dropped from a union holding a.
//   union_of_sums(terms) the union over terms of a_t + b_t, pruned, without building each sum:
//                        FT's "for every configuration sum, then choose" in one merge.
// Ties: among points of equal cost the first in input order is kept: for from_points the earliest
// in the vector, for minkowski_sum (and union_of_sums) the smallest left index then right index
// (up to sums that round to equal times, see union_of_sums), for pareto_union the left operand's.
// All results are deterministic.
//
// Thread-safety: Frontier is a value type; const access from many threads is safe.
// Errors: std::invalid_argument for a NaN coordinate, a broken invariant in from_sorted, or a
// negative/NaN epsilon_prune factor.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace tensoropt::planner {

// A strategy's cost: seconds per training step and bytes per device, or any two additive,
// minimised quantities.
struct Cost {
  double time = 0;
  double memory = 0;

  friend Cost operator+(Cost a, Cost b) { return {a.time + b.time, a.memory + b.memory}; }
  friend bool operator==(Cost a, Cost b) = default;
};

// True when a is no worse than b in both coordinates (weak dominance; a cost dominates itself).
[[nodiscard]] inline bool weakly_dominates(Cost a, Cost b) {
  return a.time <= b.time && a.memory <= b.memory;
}

// Opaque provenance handle; kNoHandle marks a point with nothing to rebuild.
using Handle = int64_t;
inline constexpr Handle kNoHandle = -1;

class Frontier {
 public:
  struct Point {
    Cost cost;
    Handle handle = kNoHandle;
  };

  // The empty frontier: no strategy at all; identity of pareto_union.
  Frontier() = default;

  // The frontier {(0, 0)}: identity of minkowski_sum.
  [[nodiscard]] static Frontier zero(Handle handle = kNoHandle);

  // Any points, in any order: sorted by (time, memory), then dominated and duplicate-cost points
  // dropped (first in input order wins a tie). Throws std::invalid_argument on NaN.
  [[nodiscard]] static Frontier from_points(std::vector<Point> raw);

  // Points that already satisfy the invariant; throws std::invalid_argument naming the first
  // offending index otherwise.
  [[nodiscard]] static Frontier from_sorted(std::vector<Point> sorted);

  [[nodiscard]] const std::vector<Point>& points() const { return points_; }
  [[nodiscard]] size_t size() const { return points_.size(); }
  [[nodiscard]] bool empty() const { return points_.empty(); }

  // Canonical form for tests and messages: "(t,m) (t,m)", costs printed with %g.
  [[nodiscard]] std::string to_string() const;

 private:
  explicit Frontier(std::vector<Point> points) : points_(std::move(points)) {}
  std::vector<Point> points_;  // time strictly ascending, memory strictly descending
};

// Makes the handle of a summed point from the handles of its two addends. Called once per point
// of the result, in its order. Empty: results carry kNoHandle.
using HandleCombiner = std::function<Handle(Handle left, Handle right)>;

// Every a_i + b_j, pruned: union_of_sums over the one term (a, b), handles combined for the kept.
[[nodiscard]] Frontier minkowski_sum(const Frontier& a, const Frontier& b,
                                     const HandleCombiner& combine = {});

[[nodiscard]] Frontier pareto_union(const Frontier& a, const Frontier& b);

// How a covers b: kWeak when every point of b is weakly dominated by some point of a, kStrict
// when each by a point of a different cost, else kNone (a empty: kNone unless b is empty too).
// If a covers b, every sum b_i + c_j is weakly dominated by some a_k + c_j, rounding included
// (rounding is monotone); strictly: in exact arithmetic by a sum of a different cost. Linear in
// |a| + |b|, usually far less when a does not cover b.
enum class Coverage { kNone, kWeak, kStrict };
[[nodiscard]] Coverage coverage(std::span<const Frontier::Point> a, std::span<const Frontier::Point> b);

// One operand of union_of_sums: the Minkowski sum of two frontiers' point lists (invariant held).
struct SumTerm {
  std::span<const Frontier::Point> a;
  std::span<const Frontier::Point> b;
};

// A point of union_of_sums: its cost terms[term].a[i].cost + terms[term].b[j].cost.
struct SumChoice {
  Cost cost;
  uint32_t term = 0;
  uint32_t i = 0;
  uint32_t j = 0;
};

// Sums a caller will drop anyway, as an affine image of a staircase: a sum s is "above" the
// ceiling when some point k of `points` (time ascending, memory descending) has
//   s.time >= time_scale * points[k].time + time_shift  and
//   s.memory >= memory_scale * points[k].memory + memory_shift   (scales > 0).
// FT passes its known costs, shifted by an entry's outside bounds, with margins that make "above"
// imply "left out by known costs" whatever the rounding (ft.cc). Empty points: no ceiling.
struct SumCeiling {
  std::span<const Cost> points;
  double time_scale = 1, time_shift = 0, memory_scale = 1, memory_shift = 0;
};

// The Pareto frontier of the union over terms of minkowski_sum(a, b), as the (term, i, j) of each
// kept sum: out is cleared, then filled with time strictly ascending, memory strictly descending.
// Its costs equal those of pareto_union over the minkowski_sums (each cost computed as a_i + b_j,
// the same rounding). Work follows the sums that could survive, not the sum of |a| * |b|: one lazy
// merge in (time, memory, term, i, j) order over lists "a_i + b_j along the longer side"; a list
// starts only when its first sum is reached, and lists and positions whose memory cannot beat
// the best kept so far are skipped by search. Among equal costs the first reached is kept:
// the lowest (term, i, j) unless sums rounded to equal times; always deterministic.
// With a ceiling, the sums above it are neither kept nor searched: the result is the frontier
// less those sums, exactly (a sum dominated only by sums above the ceiling is above it too).
// Thread-safety: uses thread-local scratch; safe to call from several threads.
void union_of_sums(std::span<const SumTerm> terms, std::vector<SumChoice>& out, const SumCeiling& ceiling = {});

// Keeps the fastest point and then, scanning by time, every point whose memory is more than a
// factor (1+delta) below the last kept one. Every dropped point p then has a kept q with
// q.time <= p.time and q.memory <= (1+delta) p.memory (non-negative costs). delta = 0 is the
// identity. Throws std::invalid_argument if delta is negative or NaN.
[[nodiscard]] Frontier epsilon_prune(const Frontier& f, double delta);

// epsilon_prune's rule on any points with a `cost` (FT's FrontierPoint), sorted by time ascending
// and memory descending; delta as there, not checked.
template <typename Point>
std::vector<Point> epsilon_thin(std::vector<Point> sorted, double delta) {
  std::vector<Point> kept;
  for (Point& p : sorted)
    if (kept.empty() || kept.back().cost.memory > (1 + delta) * p.cost.memory) kept.push_back(std::move(p));
  return kept;
}

// The Pareto set of points from several solves (any type with a `cost`: FT's FrontierPoint, a
// plan's point): sorted by (time, memory), stable, so among equal
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

}  // namespace tensoropt::planner
