// Configurations no frontier strategy can use, found before FT (DESIGN.md "FT").
//
// Configuration c of node v is dominated by configuration d of v when, whatever the neighbours of
// v choose, switching v from c to d makes the strategy strictly faster and no larger:
//   node(d) - node(c) + sum over v's edges of max over the neighbour's configurations
//   [edge(d, k) - edge(c, k)]
// is at most -tau in time and at most 0 in memory (computed per objective; the maxima make it an
// upper bound of the exact change for every assignment of the neighbours). tau is 1e-9 times an
// upper bound of any strategy's time, far above any rounding of a strategy's sum, so the switched
// strategy is strictly faster as FT sums it too. Memory is compared exactly when every memory cost
// is a whole number below 2^52 (every sum then exact); otherwise it must fall by 1e-9 times an
// upper bound of any strategy's memory. Every strategy using c is then strictly dominated by one
// using d (which may in turn be dominated: the chain ends, each step strictly faster), so no
// frontier point uses c, and dropping c changes neither the frontier nor which equal-cost strategy
// FT keeps (narrow() keeps the remaining configurations in their order).
//
// drop_dominated(problem): the Problem narrowed (problem.h narrow()) to the configurations not
// dominated, repeated until nothing more drops (a neighbour's dropped configuration can make
// another dominated). Never drops a node's last configuration. Work: per node, K^2 pairs times
// its edges' entries, a few passes: milliseconds on a transformer's space.
// Thread-safety: pure function. Errors: as validate() (std::invalid_argument).
#pragma once

#include "planner/ft/problem.h"

namespace tensoropt::planner {

[[nodiscard]] Narrowed drop_dominated(const Problem& problem);

}  // namespace tensoropt::planner
