// Two-objective Pareto frontiers of (time, memory) costs and their algebra (DESIGN.md "FT").
//
// A Frontier is a value: a list of mutually non-dominated points sorted by time strictly
// ascending, so memory strictly descending. Every way of building one either establishes that
// invariant (from_points sorts and prunes in one linear pass) or checks it (from_sorted).
// Each point carries an opaque provenance Handle; the algebra copies handles (pareto_union) or
// asks the caller to combine them (minkowski_sum) but never interprets them. FT uses handles to
// rebuild the strategy behind each point (planner/provenance.h).
//
// Algebra (both objectives minimised):
//   minkowski_sum(a, b)  series combine: every a_i + b_j, pruned. Identity: Frontier::zero();
//                        the empty frontier is absorbing.
//   pareto_union(a, b)   parallel combine (choice): a ∪ b, pruned. Identity: the empty Frontier.
//   epsilon_prune(f, d)  drops points that a kept point (1+d)-dominates.
// Ties: among points of equal cost the first in input order is kept: for from_points the earliest
// in the vector, for minkowski_sum the smallest left index then right index, for pareto_union the
// left operand's. All results are therefore deterministic.
//
// Thread-safety: Frontier is a value type; const access from many threads is safe.
// Errors: std::invalid_argument for a NaN coordinate, a broken invariant in from_sorted, or a
// negative/NaN epsilon_prune factor.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
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

// Makes the handle of a summed point from the handles of its two addends. Called in output order
// for each point that is kept when it is reached (a kept point whose time a later sum equals
// after rounding is replaced by it, so a few handles may go unused). Empty: results carry kNoHandle.
using HandleCombiner = std::function<Handle(Handle left, Handle right)>;

[[nodiscard]] Frontier minkowski_sum(const Frontier& a, const Frontier& b,
                                     const HandleCombiner& combine = {});

[[nodiscard]] Frontier pareto_union(const Frontier& a, const Frontier& b);

// Keeps the fastest point and then, scanning by time, every point whose memory is more than a
// factor (1+delta) below the last kept one. Every dropped point p then has a kept q with
// q.time <= p.time and q.memory <= (1+delta) p.memory (non-negative costs). delta = 0 is the
// identity. Throws std::invalid_argument if delta is negative or NaN.
[[nodiscard]] Frontier epsilon_prune(const Frontier& f, double delta);

}  // namespace tensoropt::planner
