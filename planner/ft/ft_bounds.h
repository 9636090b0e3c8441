// Scalar companions of FT on the same elimination order (docs/design.md "FT (frontier tracking)"): exact single-objective
// minima, cheap next to the frontier-valued elimination, that let FT leave out partial strategies
// no completion of which can reach the frontier.
//
// outside_bounds: FT eliminates order.order[s] at step s and builds a factor over
// order.scopes[s] (entries row-major, the last scope node fastest, as FT stores them). That
// factor folds in some of the Problem's node and edge costs; the "outside" of an entry is the sum
// of all the others, over the assignments of the remaining nodes that agree with the entry. For
// every entry, the least outside time and, separately, the least outside memory: each an exact
// minimum, so together a lower bound (no completion is faster or smaller than either). A factor
// with an empty scope (a connected component finished) has one entry; its outside is the other
// components' minima.
//
// weighted_optima: for each weight w, an assignment minimising w.time * time + w.memory * memory
// exactly (one min-plus elimination in the same order for all the weights, then decoding
// backwards; of equal values the lowest configuration wins). Every supported point of the frontier
// (on its convex hull) is such an optimum for some weights; plan uses a few as known costs.
//
// KnownCosts: FT's test for "Known strategies" (ft.h): the known costs as a staircase scaled by
// 1 + epsilon, and the outside bounds of every step. beat(c): some known cost u has
// (1+epsilon) u.time <= (1 - 1e-9) c.time and (1+epsilon) u.memory <= c.memory (with the same
// margin on memory unless every memory cost of the Problem is a whole number, so that every sum
// is exact). beat_every_completion(q, step, entry): beat(q + the entry's outside bounds), which
// by the bounds' definition holds for every completion of the partial point q.
//
// Work: the elimination's entries times K_x times the factors consumed times the objectives, with
// plain doubles: tens of milliseconds on a transformer's space, far less than FT. Deterministic.
// Thread-safety: pure functions; a KnownCosts is immutable after construction.
// Errors: std::invalid_argument when the order does not match the Problem; weights must be
// finite and non-negative, not both zero.
#pragma once

#include <memory>
#include <vector>

#include "planner/ft/elimination_order.h"
#include "planner/ft/frontier.h"
#include "planner/ft/problem.h"

namespace tensoropt::planner {

struct OutsideBounds {
  std::vector<std::vector<Cost>> step;  // [step][entry]: least outside time, least outside memory
};

[[nodiscard]] OutsideBounds outside_bounds(const Problem& problem, const EliminationOrder& order);

class KnownCosts {
 public:
  // Throws std::invalid_argument when a known cost is negative or not finite. `bounds` must be
  // outside_bounds(problem, order); null: computed here.
  KnownCosts(const Problem& problem, const EliminationOrder& order, const std::vector<Cost>& known, double epsilon,
             std::shared_ptr<const OutsideBounds> bounds = nullptr);
  [[nodiscard]] bool beat(Cost c) const;
  [[nodiscard]] bool beat_every_completion(Cost q, size_t step, size_t entry) const {
    return beat(q + bounds_->step[step][entry]);
  }
  // Partial points of that entry that beat_every_completion surely leaves out, as a ceiling for
  // union_of_sums (frontier.h): the staircase shifted by the entry's outside bounds, with margins
  // (relative 1e-12) wide enough that a sum above it passes the exact test whatever the rounding.
  [[nodiscard]] SumCeiling ceiling(size_t step, size_t entry) const;

 private:
  static constexpr double kMargin = 1e-9;
  std::vector<Cost> staircase_;  // time ascending, memory descending
  std::shared_ptr<const OutsideBounds> bounds_;
  bool integral_memory_ = true;
};

// Each weight's least weighted cost over all strategies, as weighted_optima's elimination sums it
// (evaluate() of its assignment may differ in the last bits), holding only the elimination's live
// tables: memory for a few steps' tables, not all of them, so cheap for many weights at once.
[[nodiscard]] std::vector<double> weighted_minima(const Problem& problem, const EliminationOrder& order,
                                                  const std::vector<Cost>& weights);

// For each configuration k of `node`, each weight's least weighted cost over the strategies that
// give node configuration k ([k][weight]), by the same elimination and its outside minima: the
// min-marginals of one node, for the cost of one weighted_optima run.
[[nodiscard]] std::vector<std::vector<double>> node_minima(const Problem& problem, const EliminationOrder& order, int node,
                                                           const std::vector<Cost>& weights);

[[nodiscard]] std::vector<std::vector<int>> weighted_optima(const Problem& problem, const EliminationOrder& order,
                                                            const std::vector<Cost>& weights);

}  // namespace tensoropt::planner
