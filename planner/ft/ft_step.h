// The data one FT elimination works on (planner/ft/ft.cc, the only user): factor tables, cover
// masks, the dense numbering of scope digits, and what an elimination step shares between the
// entries it builds. Internal to FT; see ft.h for the algorithm and its contract.
// Thread-safety: plain values; cover_masks uses thread-local scratch.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "planner/ft/frontier.h"
#include "planner/ft/problem.h"

namespace tensoropt::planner::ft_detail {

using Points = std::span<const Frontier::Point>;

// A factor's table, flat: entry e (row-major over the scope, last position fastest) holds the
// frontier points[start[e], start[e + 1]).
struct Factor {
  std::vector<int> scope;        // sorted node ids
  std::vector<int64_t> stride;   // [scope position]
  std::vector<Frontier::Point> points;
  std::vector<int64_t> start;    // [entries + 1]
  bool live = true;

  size_t entries() const { return start.size() - 1; }
  Points cell(int64_t e) const {
    return {points.data() + start[static_cast<size_t>(e)], points.data() + start[static_cast<size_t>(e) + 1]};
  }
  int64_t bytes() const {
    return static_cast<int64_t>(points.capacity() * sizeof(Frontier::Point) + start.capacity() * sizeof(int64_t));
  }
};


// Bit k' of weak (strict): configuration k' covers (strictly) this one's frontier.
struct CoverMask {
  uint64_t weak = 0;
  uint64_t strict = 0;
};

// masks[k] over the frontiers of one group, for every k (coverage(), frontier.h). Most pairs fail
// the corner test (fastest point no slower, smallest point no bigger), done first.
void cover_masks(const std::vector<Points>& frontiers, CoverMask* masks);

// Dense numbering of the digits a subset of a factor's scope positions takes.
struct Group {
  std::vector<int64_t> stride;  // [scope position], 0 outside the subset
  int64_t count = 1;            // number of distinct indices

  Group() = default;
  Group(const Problem& problem, const std::vector<int>& scope, const std::vector<bool>& member)
      : stride(scope.size(), 0) {
    for (size_t p = scope.size(); p-- > 0;) {
      if (!member[p]) continue;
      stride[p] = count;
      count *= problem.num_configs(scope[p]);
    }
  }
  size_t index(const std::vector<int>& digit) const {
    int64_t at = 0;
    for (size_t p = 0; p < digit.size(); ++p) at += digit[p] * stride[p];
    return static_cast<size_t>(at);
  }
};

// A sum an entry kept, by position instead of handle: x's configuration, the prefix point (an
// index into the step's prefix folds when split >= 2, else into the first cell's entry) and the
// point of the last cell's entry.
struct ReplayChoice {
  Cost cost;
  int32_t config;
  int32_t prefix;
  int32_t last;
};

// One step's work, kept so that a later step with the same content replays it (ft.h "Repeated
// steps"). content is the step's signature, compared whole: x's and the scope's configuration
// counts, each consumed factor's place in the scope, entry bounds and every point's cost, bit for
// bit. Two steps with equal content compute the same folds and the same sums, so the positions
// recorded here, read against the later step's own factors, give its result with its own
// provenance. The entries' choices are kept before known-cost pruning, which depends on the step.
struct StepRecord {
  std::vector<uint64_t> content;
  std::vector<Cost> prefix_costs;                 // Step::prefix's costs
  std::vector<int64_t> prefix_begin, prefix_end;  // as in Step
  std::vector<int32_t> prefix_tuples;             // [prefix point * split + j]: its point of cell j
  std::vector<ReplayChoice> chosen;               // every entry's kept sums, in entry order
  std::vector<size_t> ends;                       // [entry]: end of its sums in chosen

  void shrink() {
    content.shrink_to_fit();
    prefix_costs.shrink_to_fit();
    prefix_begin.shrink_to_fit();
    prefix_end.shrink_to_fit();
    prefix_tuples.shrink_to_fit();
    chosen.shrink_to_fit();
    ends.shrink_to_fit();
  }
  int64_t bytes() const {
    return static_cast<int64_t>(content.capacity() * sizeof(uint64_t) + prefix_costs.capacity() * sizeof(Cost) +
                                (prefix_begin.capacity() + prefix_end.capacity()) * sizeof(int64_t) +
                                prefix_tuples.capacity() * sizeof(int32_t) + chosen.capacity() * sizeof(ReplayChoice) +
                                ends.capacity() * sizeof(size_t));
  }
};

// What one elimination shares between the entries of the factor it builds.
//
// For configuration k of x an entry's frontier is the left fold c_0 + ... + c_{m-1} of the
// consumed cells in consumed order (fewest points first; the order fixes the rounding). The fold of all but the last
// cell (the prefix; with one cell, that cell, and the last is the zero frontier) depends on k and
// on the scope positions those cells hold, not on the whole entry: it is built once per distinct
// (k, those digits), as are the cover masks of the prefixes and of the last cells.
struct Step {
  int x = 0;
  size_t kx = 0;
  std::vector<int> scope;
  std::vector<const Factor*> cells;             // consumed factors, in consumed order
  std::vector<std::vector<int64_t>> stride_of;  // [j][scope position], 0 if absent
  std::vector<int64_t> stride_x;                // [j] stride of x in factor j
  size_t split = 1;                             // cells [0, split) form the prefix
  Group prefix_group, last_group;
  std::vector<Frontier::Point> prefix;          // the prefix folds, when split >= 2
  std::vector<int64_t> prefix_begin, prefix_end;  // [prefix index * kx + k] into prefix
  bool prune = false;                           // configurations may be left out (2 <= kx <= 64)
  std::vector<CoverMask> prefix_cover, last_cover;  // [index * kx + k]
  const StepRecord* replay = nullptr;           // an earlier step with this content: its work is read back
  StepRecord* record = nullptr;                 // else, where this step's work is kept, when it may repeat

  int64_t offset(size_t j, const std::vector<int>& digit) const {
    int64_t at = 0;
    for (size_t p = 0; p < digit.size(); ++p) at += digit[p] * stride_of[j][p];
    return at;
  }
  Points cell(size_t j, int64_t offset_j, size_t k) const {
    return cells[j]->cell(offset_j + static_cast<int64_t>(k) * stride_x[j]);
  }
  Points prefix_fold(size_t at) const {
    return {prefix.data() + prefix_begin[at], prefix.data() + prefix_end[at]};
  }
};

// An entry's kept sums before provenance: the cost, x's configuration and the addends' handles.
struct Chosen {
  Cost cost;
  int config;
  Handle prefix, last;
};

}  // namespace tensoropt::planner::ft_detail
