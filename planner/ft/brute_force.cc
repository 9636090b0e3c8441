// Exhaustive enumeration of strategies with an incrementally pruned candidate buffer.
#include "planner/ft/brute_force.h"

#include <chrono>
#include <stdexcept>
#include <string>

namespace tensoropt::planner {

FtResult solve_brute_force(const Problem& problem) {
  const auto start = std::chrono::steady_clock::now();
  validate(problem);
  const int n = problem.num_nodes();
  double strategies = 1;
  for (int v = 0; v < n; ++v) strategies *= problem.num_configs(v);
  if (strategies > static_cast<double>(kMaxBruteForceStrategies)) {
    throw std::length_error("brute force: " + std::to_string(strategies) +
                            " strategies, above the limit of " +
                            std::to_string(kMaxBruteForceStrategies));
  }
  const auto count = static_cast<int64_t>(strategies);
  // Candidates carry their enumeration index as handle; the kept frontier stays in front of the
  // buffer so that, with from_points' stable tie-breaking, the earliest strategy wins a tie.
  std::vector<Frontier::Point> buffer;
  Frontier kept;
  const auto flush = [&] {
    std::vector<Frontier::Point> all = kept.points();
    all.insert(all.end(), buffer.begin(), buffer.end());
    kept = Frontier::from_points(std::move(all));
    buffer.clear();
  };
  std::vector<int> assignment(static_cast<size_t>(n), 0);
  for (int64_t index = 0; index < count; ++index) {
    buffer.push_back({detail::evaluate_unchecked(problem, assignment), index});
    if (buffer.size() >= 4096 + 2 * kept.size()) flush();
    for (int v = n; v-- > 0;) {
      if (++assignment[static_cast<size_t>(v)] < problem.num_configs(v)) break;
      assignment[static_cast<size_t>(v)] = 0;
    }
  }
  flush();

  FtResult result;
  for (const Frontier::Point& p : kept.points()) {
    std::vector<int> a(static_cast<size_t>(n));
    int64_t rest = p.handle;
    for (int v = n; v-- > 0;) {
      a[static_cast<size_t>(v)] = static_cast<int>(rest % problem.num_configs(v));
      rest /= problem.num_configs(v);
    }
    result.points.push_back({p.cost, std::move(a)});
  }
  result.stats.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace tensoropt::planner
