// The plot of `tensoropt simulate --plot FILE.svg`: the cumulative distribution of job completion
// times, one step curve per policy (x: completion time, log scale when it spans more than 10x;
// y: the fraction of jobs done within it), a legend naming each policy with its average.
// Pure function; same input -> identical bytes. Element classes: "cdf" (one path per policy),
// "legend", "tick-x", "tick-y".
#pragma once

#include <string>
#include <vector>

namespace tensoropt::cli {

struct CdfCurve {
  std::string label;           // "frontier (avg 12.8 min)"
  std::vector<double> values;  // completion times, seconds, any order; NaN, infinite or <= 0 skipped
};

std::string cdf_svg(const std::string& title, const std::vector<CdfCurve>& curves);

}  // namespace tensoropt::cli
