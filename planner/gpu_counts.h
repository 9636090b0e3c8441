// The --gpus flag: a count ("8"), a list ("1,2,4,8") or a range ("1-64": the powers of two from
// the low end to the high end, plus the high end itself). Counts need not be powers of two.
// Returns the counts sorted ascending without repeats; throws InputError naming --gpus and the
// offending part for anything else (zero, negatives, junk, an empty or reversed range, more than
// 65,536 GPUs). Pure function.
#pragma once

#include <string>
#include <vector>

namespace tensoropt::planner {

std::vector<int> parse_gpu_counts(const std::string& spec);

}  // namespace tensoropt::planner
