// Cover masks of one elimination step's frontiers; see ft_step.h.
#include "planner/ft/ft_step.h"

#include <limits>

namespace tensoropt::planner::ft_detail {

// masks[k] over the frontiers of one group, for every k. Most pairs fail coverage()'s corner
// test (fastest point no slower, smallest point no bigger), done here inline first.
void cover_masks(const std::vector<Points>& frontiers, CoverMask* masks) {
  const size_t n = frontiers.size();
  thread_local std::vector<Cost> corner;  // (fastest time, smallest memory); +inf when empty
  corner.resize(n);
  constexpr double kInf = std::numeric_limits<double>::infinity();
  for (size_t k = 0; k < n; ++k) {
    const Points f = frontiers[k];
    corner[k] = f.empty() ? Cost{kInf, kInf} : Cost{f.front().cost.time, f.back().cost.memory};
  }
  for (size_t k = 0; k < n; ++k) {
    masks[k] = {};
    for (size_t other = 0; other < n; ++other) {
      if (other == k || corner[other].time > corner[k].time || corner[other].memory > corner[k].memory) continue;
      Coverage c;
      if (frontiers[other].size() == 1 && frontiers[k].size() == 1) {  // the corners are the points
        c = corner[other] == corner[k] ? Coverage::kWeak : Coverage::kStrict;
      } else {
        c = coverage(frontiers[other], frontiers[k]);
      }
      if (c != Coverage::kNone) masks[k].weak |= uint64_t{1} << other;
      if (c == Coverage::kStrict) masks[k].strict |= uint64_t{1} << other;
    }
  }
}

}  // namespace tensoropt::planner::ft_detail
