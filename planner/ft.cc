// FT by variable elimination over frontier-valued factors; see ft.h for the contract.
#include "planner/ft.h"

#include <bit>
#include <chrono>
#include <cmath>
#include <functional>
#include <stdexcept>
#include <string>

#include "graph/error.h"
#include "planner/elimination_order.h"
#include "planner/provenance.h"

namespace tensoropt::planner {
namespace {

struct Factor {
  std::vector<int> scope;        // sorted node ids
  std::vector<int64_t> stride;   // [scope position] row-major, last position fastest
  std::vector<Frontier> table;   // [product of the scope's K]
  int64_t points = 0;
  bool live = true;

  int64_t bytes() const {
    return static_cast<int64_t>(table.size() * sizeof(Frontier)) +
           points * static_cast<int64_t>(sizeof(Frontier::Point));
  }
};

std::vector<int64_t> row_major_strides(const Problem& problem, const std::vector<int>& scope) {
  std::vector<int64_t> stride(scope.size());
  int64_t s = 1;
  for (size_t i = scope.size(); i-- > 0;) {
    stride[i] = s;
    s *= problem.num_configs(scope[i]);
  }
  return stride;
}

// Bit k' of weak (strict): configuration k' covers (strictly) this one's frontier.
struct CoverMask {
  uint64_t weak = 0;
  uint64_t strict = 0;
};

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
  int64_t index(const std::vector<int>& digit) const {
    int64_t at = 0;
    for (size_t p = 0; p < digit.size(); ++p) at += digit[p] * stride[p];
    return at;
  }
};

class Eliminator {
 public:
  Eliminator(const Problem& problem, const FtOptions& options)
      : problem_(problem), options_(options), start_(std::chrono::steady_clock::now()) {}

  FtResult run() {
    const EliminationOrder order = greedy_elimination_order(problem_);
    stats_.width = order.width;
    stats_.depth = order.depth;
    if (options_.epsilon > 0 && order.depth > 0) {
      delta_ = std::pow(1 + options_.epsilon, 1.0 / order.depth) - 1;
    }
    stats_.delta = delta_;
    add_initial_factors();
    for (size_t step = 0; step < order.order.size(); ++step) {
      eliminate(order.order[step], order.scopes[step]);
      if (options_.progress) {
        options_.progress({static_cast<int>(step) + 1, problem_.num_nodes(),
                           live_bytes_ + arena_.bytes(), elapsed()});
      }
    }
    return finish();
  }

 private:
  double elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

  Handle combine(Handle left, Handle right) {
    if (left == kNoHandle) return right;
    if (right == kNoHandle) return left;
    return arena_.add_sum(left, right);
  }

  void add_factor(Factor f) {
    for (const Frontier& fr : f.table) f.points += static_cast<int64_t>(fr.size());
    live_bytes_ += f.bytes();
    stats_.peak_bytes = std::max(stats_.peak_bytes, live_bytes_ + arena_.bytes());
    stats_.largest_factor_entries =
        std::max(stats_.largest_factor_entries, static_cast<int64_t>(f.table.size()));
    stats_.largest_factor_points = std::max(stats_.largest_factor_points, f.points);
    const int id = static_cast<int>(factors_.size());
    if (f.scope.empty()) finished_.push_back(id);
    for (int v : f.scope) by_node_[static_cast<size_t>(v)].push_back(id);
    factors_.push_back(std::move(f));
  }

  void add_initial_factors() {
    by_node_.assign(static_cast<size_t>(problem_.num_nodes()), {});
    for (int v = 0; v < problem_.num_nodes(); ++v) {
      Factor f;
      f.scope = {v};
      f.stride = {1};
      for (Cost c : problem_.node_cost[static_cast<size_t>(v)]) {
        f.table.push_back(Frontier::from_sorted({{c, kNoHandle}}));
      }
      add_factor(std::move(f));
    }
    for (const Problem::Edge& e : problem_.edges) {
      Factor f;
      const int ku = problem_.num_configs(e.u);
      const int kv = problem_.num_configs(e.v);
      f.scope = {std::min(e.u, e.v), std::max(e.u, e.v)};
      f.stride = row_major_strides(problem_, f.scope);
      f.table.resize(static_cast<size_t>(ku) * static_cast<size_t>(kv));
      for (int a = 0; a < ku; ++a) {
        for (int b = 0; b < kv; ++b) {
          const int64_t at = e.u < e.v ? int64_t{a} * kv + b : int64_t{b} * ku + a;
          f.table[static_cast<size_t>(at)] = Frontier::from_sorted(
              {{e.cost[static_cast<size_t>(a) * static_cast<size_t>(kv) + static_cast<size_t>(b)],
                kNoHandle}});
        }
      }
      add_factor(std::move(f));
    }
  }

  void refuse(int x, const std::vector<int>& scope, double entries, int64_t points) const {
    throw std::length_error(
        "FT: eliminating node " + std::to_string(x) + " builds a factor over " +
        std::to_string(scope.size()) + " nodes with " + std::to_string(static_cast<int64_t>(entries)) +
        " entries" + (points > 0 ? " holding at least " + std::to_string(points) + " points" : "") +
        ", above max_factor_points = " + std::to_string(options_.max_factor_points) +
        " (the elimination order has width " + std::to_string(stats_.width) + ")");
  }

  // Per elimination: the consumed factors, where each entry of the new factor finds its cells,
  // and what entries share (prefix sums, cover masks).
  struct Step {
    int x = 0;
    int kx = 0;
    std::vector<const Factor*> cells;             // consumed factors, in consumed order
    std::vector<std::vector<int64_t>> stride_of;  // [j][new scope position], 0 if absent
    std::vector<int64_t> stride_x;                // [j] stride of x in factor j
    size_t split = 1;                             // cells [0, split) form the prefix
    Group prefix_group, last_group;
    std::vector<Frontier> prefix;                 // [prefix index * kx + k], when split >= 2
    std::vector<char> prefix_built;               // [prefix index]
    std::vector<CoverMask> prefix_cover, last_cover;  // [index * kx + k], see cover_masks
    std::vector<char> prefix_cover_built, last_cover_built;
  };

  void eliminate(int x, const std::vector<int>& scope) {
    Step st;
    st.x = x;
    st.kx = problem_.num_configs(x);
    std::vector<int> consumed;
    for (int id : by_node_[static_cast<size_t>(x)]) {
      if (factors_[static_cast<size_t>(id)].live) consumed.push_back(id);
    }
    TO_CHECK(!consumed.empty());
    double entries = 1;
    for (int v : scope) entries *= problem_.num_configs(v);
    if (entries > static_cast<double>(options_.max_factor_points)) refuse(x, scope, entries, 0);

    const size_t m = consumed.size();
    st.stride_of.assign(m, std::vector<int64_t>(scope.size(), 0));
    st.stride_x.assign(m, -1);
    for (size_t j = 0; j < m; ++j) {
      const Factor& f = factors_[static_cast<size_t>(consumed[j])];
      st.cells.push_back(&f);
      for (size_t p = 0; p < f.scope.size(); ++p) {
        if (f.scope[p] == x) {
          st.stride_x[j] = f.stride[p];
          continue;
        }
        const auto it = std::lower_bound(scope.begin(), scope.end(), f.scope[p]);
        TO_CHECK(it != scope.end() && *it == f.scope[p]);
        st.stride_of[j][static_cast<size_t>(it - scope.begin())] = f.stride[p];
      }
      TO_CHECK(st.stride_x[j] >= 0);
    }
    // For configuration k the sum is the left fold c_0 + ... + c_{m-1} of the consumed cells in
    // consumed order (the order fixes the rounding). The fold of all but the last cell (the
    // prefix; with one cell, that cell, and the last is the zero frontier) depends on k and on
    // the scope positions those cells hold, not on the whole entry: it is built once per
    // distinct (k, those digits) and kept for this step.
    st.split = std::max<size_t>(1, m - 1);
    std::vector<bool> in_prefix(scope.size(), false);
    std::vector<bool> in_last(scope.size(), false);
    for (size_t p = 0; p < scope.size(); ++p) {
      for (size_t j = 0; j < st.split; ++j) in_prefix[p] = in_prefix[p] || st.stride_of[j][p] != 0;
      in_last[p] = m >= 2 && st.stride_of[m - 1][p] != 0;
    }
    st.prefix_group = Group(problem_, scope, in_prefix);
    st.last_group = Group(problem_, scope, in_last);
    const size_t kx = static_cast<size_t>(st.kx);
    if (st.split >= 2) {
      st.prefix.resize(static_cast<size_t>(st.prefix_group.count) * kx);
      st.prefix_built.assign(static_cast<size_t>(st.prefix_group.count), 0);
    }
    if (prune_configs(st)) {
      st.prefix_cover.resize(static_cast<size_t>(st.prefix_group.count) * kx);
      st.prefix_cover_built.assign(static_cast<size_t>(st.prefix_group.count), 0);
      st.last_cover.resize(static_cast<size_t>(st.last_group.count) * kx);
      st.last_cover_built.assign(static_cast<size_t>(st.last_group.count), 0);
    }
    scratch_.clear();
    memo_.clear();

    Factor out;
    out.scope = scope;
    out.stride = row_major_strides(problem_, scope);
    out.table.resize(static_cast<size_t>(entries));
    stats_.entry_evaluations += static_cast<int64_t>(out.table.size()) * st.kx;
    std::vector<int> digit(scope.size(), 0);
    int64_t points = 0;
    for (size_t entry = 0; entry < out.table.size(); ++entry) {
      out.table[entry] = build_entry(st, digit);
      points += static_cast<int64_t>(out.table[entry].size());
      if (points > options_.max_factor_points) refuse(x, scope, entries, points);
      for (size_t p = scope.size(); p-- > 0;) {  // odometer, last position fastest
        if (++digit[p] < problem_.num_configs(scope[p])) break;
        digit[p] = 0;
      }
    }
    add_factor(std::move(out));
    for (int id : consumed) {
      Factor& f = factors_[static_cast<size_t>(id)];
      live_bytes_ -= f.bytes();
      f = Factor{};
      f.live = false;
    }
  }

  static bool prune_configs(const Step& st) { return st.kx >= 2 && st.kx <= 64; }

  // One entry of the new factor: the union over k of prefix_k + last_k, pruned, each kept point
  // tagged with a provenance record. Configuration k is left out first when another one, k',
  // covers both its prefix and its last cell (covers(), frontier.h): every sum of k is then
  // weakly dominated by a sum of k', so the union's costs do not change. To keep the tie rule
  // (of equal costs the lowest k wins) k' must be lower than k or cover one of the two strictly
  // (then every sum of k is strictly dominated). This relation has no cycle (covering both ways
  // means equal frontiers, never strict), so every left-out k has a kept k' covering it.
  Frontier build_entry(Step& st, const std::vector<int>& digit) {
    const size_t m = st.cells.size();
    const size_t kx = static_cast<size_t>(st.kx);
    offset_.assign(m, 0);
    for (size_t j = 0; j < m; ++j) {
      for (size_t p = 0; p < digit.size(); ++p) offset_[j] += digit[p] * st.stride_of[j][p];
    }
    const auto cell = [&](size_t j, size_t k) -> const Frontier& {
      return st.cells[j]->table[static_cast<size_t>(offset_[j] + static_cast<int64_t>(k) * st.stride_x[j])];
    };
    const size_t prefix_at = static_cast<size_t>(st.prefix_group.index(digit));
    const size_t last_at = static_cast<size_t>(st.last_group.index(digit));
    if (st.split >= 2 && !st.prefix_built[prefix_at]) {
      for (size_t k = 0; k < kx; ++k) {
        Frontier sum = minkowski_sum(cell(0, k), cell(1, k), scratch_combiner_);
        for (size_t j = 2; j < st.split; ++j) sum = minkowski_sum(sum, cell(j, k), scratch_combiner_);
        st.prefix[prefix_at * kx + k] = std::move(sum);
      }
      st.prefix_built[prefix_at] = 1;
    }
    prefix_.resize(kx);
    last_.resize(kx);
    for (size_t k = 0; k < kx; ++k) {
      prefix_[k] = st.split >= 2 ? &st.prefix[prefix_at * kx + k] : &cell(0, k);
      last_[k] = m >= 2 ? &cell(m - 1, k) : &zero_;
    }
    terms_.clear();
    term_config_.clear();
    if (prune_configs(st)) {
      if (!st.prefix_cover_built[prefix_at]) {
        cover_masks(prefix_, &st.prefix_cover[prefix_at * kx]);
        st.prefix_cover_built[prefix_at] = 1;
      }
      if (!st.last_cover_built[last_at]) {
        cover_masks(last_, &st.last_cover[last_at * kx]);
        st.last_cover_built[last_at] = 1;
      }
      const CoverMask* pc = &st.prefix_cover[prefix_at * kx];
      const CoverMask* lc = &st.last_cover[last_at * kx];
      for (size_t k = 0; k < kx; ++k) {
        const uint64_t lower = (uint64_t{1} << k) - 1;
        const uint64_t by = pc[k].weak & lc[k].weak & (lower | pc[k].strict | lc[k].strict);
        if (by != 0) continue;
        terms_.push_back({prefix_[k]->points(), last_[k]->points()});
        term_config_.push_back(static_cast<int>(k));
      }
    } else {
      for (size_t k = 0; k < kx; ++k) {
        terms_.push_back({prefix_[k]->points(), last_[k]->points()});
        term_config_.push_back(static_cast<int>(k));
      }
    }
    union_of_sums(terms_, chosen_);
    if (delta_ > 0) {  // epsilon_prune on the costs, keeping the choices of the points it keeps
      std::vector<Frontier::Point> indexed;
      for (size_t c = 0; c < chosen_.size(); ++c) indexed.push_back({chosen_[c].cost, static_cast<Handle>(c)});
      const Frontier pruned = epsilon_prune(Frontier::from_sorted(std::move(indexed)), delta_);
      std::vector<SumChoice> kept;
      for (const Frontier::Point& p : pruned.points()) kept.push_back(chosen_[static_cast<size_t>(p.handle)]);
      chosen_ = std::move(kept);
    }
    memo_.resize(scratch_.size(), kNoHandle);
    std::vector<Frontier::Point> tagged;
    tagged.reserve(chosen_.size());
    for (const SumChoice& c : chosen_) {
      const SumTerm& t = terms_[c.term];
      const Handle sum = combine(materialize(t.a[c.i].handle), t.b[c.j].handle);
      tagged.push_back({c.cost, arena_.add_choice(st.x, term_config_[c.term], sum)});
    }
    return Frontier::from_sorted(std::move(tagged));
  }

  // masks[k]: bit k' set in weak (strict) when frontiers[k'] covers (strictly) frontiers[k].
  static void cover_masks(const std::vector<const Frontier*>& frontiers, CoverMask* masks) {
    for (size_t k = 0; k < frontiers.size(); ++k) {
      masks[k] = {};
      for (size_t other = 0; other < frontiers.size(); ++other) {
        if (other == k || !covers(*frontiers[other], *frontiers[k])) continue;
        masks[k].weak |= uint64_t{1} << other;
        if (covers(*frontiers[other], *frontiers[k], /*strict=*/true)) masks[k].strict |= uint64_t{1} << other;
      }
    }
  }

  // Prefix sums record their handle pairs in scratch_ first (handles <= -2 index it); only the
  // points an entry keeps get provenance records, made once per scratch node (memo_).
  Handle materialize(Handle h) {
    if (h >= kNoHandle) return h;
    const size_t i = static_cast<size_t>(-2 - h);
    if (memo_[i] == kNoHandle) {
      memo_[i] = combine(materialize(scratch_[i].left), materialize(scratch_[i].right));
    }
    return memo_[i];
  }

  FtResult finish() {
    Frontier total = Frontier::zero();
    for (int id : finished_) {
      const Factor& f = factors_[static_cast<size_t>(id)];
      TO_CHECK(f.live && f.table.size() == 1);
      total = minkowski_sum(total, f.table[0], [this](Handle l, Handle r) { return combine(l, r); });
    }
    stats_.peak_bytes = std::max(stats_.peak_bytes, live_bytes_ + arena_.bytes());
    stats_.provenance_records = arena_.size();

    // Rebuild every assignment and cost it by evaluate()'s sum, then re-establish the invariant
    // on those costs (the elimination adds in another order; with integral costs nothing changes).
    const size_t n = static_cast<size_t>(problem_.num_nodes());
    std::vector<std::vector<int>> assignments;
    std::vector<Frontier::Point> costed;
    for (const Frontier::Point& p : total.points()) {
      std::vector<int> a(n, -1);
      arena_.rebuild(p.handle, a);
      for (int k : a) TO_CHECK(k >= 0);
      costed.push_back({detail::evaluate_unchecked(problem_, a),
                        static_cast<Handle>(assignments.size())});
      assignments.push_back(std::move(a));
    }
    FtResult result;
    const Frontier final_frontier = Frontier::from_points(std::move(costed));
    for (const Frontier::Point& p : final_frontier.points()) {
      result.points.push_back({p.cost, std::move(assignments[static_cast<size_t>(p.handle)])});
    }
    stats_.seconds = elapsed();
    result.stats = stats_;
    return result;
  }

  const Problem& problem_;
  const FtOptions& options_;
  const std::chrono::steady_clock::time_point start_;
  double delta_ = 0;
  std::vector<Factor> factors_;
  std::vector<std::vector<int>> by_node_;  // [node] ids of factors whose scope holds it
  std::vector<int> finished_;              // ids of scope-free factors
  ProvenanceArena arena_;
  int64_t live_bytes_ = 0;
  FtStats stats_;
  // Scratch of the current step, reused between entries.
  struct Pending {
    Handle left, right;
  };
  std::vector<Pending> scratch_;
  std::vector<Handle> memo_;
  const HandleCombiner scratch_combiner_ = [this](Handle l, Handle r) {
    if (l == kNoHandle) return r;
    if (r == kNoHandle) return l;
    scratch_.push_back({l, r});
    return static_cast<Handle>(-1 - static_cast<Handle>(scratch_.size()));
  };
  const Frontier zero_ = Frontier::zero();
  std::vector<int64_t> offset_;
  std::vector<const Frontier*> prefix_, last_;
  std::vector<SumTerm> terms_;
  std::vector<int> term_config_;
  std::vector<SumChoice> chosen_;
};

}  // namespace

FtResult solve_ft(const Problem& problem, const FtOptions& options) {
  validate(problem);
  if (!std::isfinite(options.epsilon) || options.epsilon < 0) {
    throw std::invalid_argument("FT: epsilon must be finite and >= 0, got " +
                                std::to_string(options.epsilon));
  }
  if (options.max_factor_points < 1) {
    throw std::invalid_argument("FT: max_factor_points must be >= 1");
  }
  return Eliminator(problem, options).run();
}

}  // namespace tensoropt::planner
