// Reference solver: the exact Pareto frontier of a Problem by enumerating every strategy.
//
// For tests and tiny problems. Strategies are enumerated in mixed-radix order (node 0 slowest)
// and costed by evaluate(); among strategies of equal cost the first enumerated is kept. Memory
// stays O(frontier) by pruning a buffer of candidates as it fills.
// Thread-safety: pure function. Errors: std::invalid_argument for an invalid Problem;
// std::length_error above kMaxBruteForceStrategies strategies.
#pragma once

#include <cstdint>

#include "planner/ft/ft.h"

namespace tensoropt::planner {

inline constexpr int64_t kMaxBruteForceStrategies = 10'000'000;

// Points sorted by time strictly ascending (memory strictly descending), each with one
// assignment achieving it. stats holds only seconds.
[[nodiscard]] FtResult solve_brute_force(const Problem& problem);

}  // namespace tensoropt::planner
