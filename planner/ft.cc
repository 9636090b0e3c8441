// FT by variable elimination over frontier-valued factors; see ft.h for the contract.
#include "planner/ft.h"

#include <chrono>
#include <functional>
#include <cmath>
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

  void eliminate(int x, const std::vector<int>& scope) {
    std::vector<int> consumed;
    for (int id : by_node_[static_cast<size_t>(x)]) {
      if (factors_[static_cast<size_t>(id)].live) consumed.push_back(id);
    }
    TO_CHECK(!consumed.empty());
    double entries = 1;
    for (int v : scope) entries *= problem_.num_configs(v);
    if (entries > static_cast<double>(options_.max_factor_points)) refuse(x, scope, entries, 0);

    // Per consumed factor: its stride for each position of the new scope (0 if absent) and for x.
    const size_t m = consumed.size();
    std::vector<std::vector<int64_t>> stride_of(m, std::vector<int64_t>(scope.size(), 0));
    std::vector<int64_t> stride_x(m, -1);
    for (size_t j = 0; j < m; ++j) {
      const Factor& f = factors_[static_cast<size_t>(consumed[j])];
      for (size_t p = 0; p < f.scope.size(); ++p) {
        if (f.scope[p] == x) {
          stride_x[j] = f.stride[p];
          continue;
        }
        const auto it = std::lower_bound(scope.begin(), scope.end(), f.scope[p]);
        TO_CHECK(it != scope.end() && *it == f.scope[p]);
        stride_of[j][static_cast<size_t>(it - scope.begin())] = f.stride[p];
      }
      TO_CHECK(stride_x[j] >= 0);
    }

    Factor out;
    out.scope = scope;
    out.stride = row_major_strides(problem_, scope);
    out.table.resize(static_cast<size_t>(entries));
    const int kx = problem_.num_configs(x);
    stats_.entry_evaluations += static_cast<int64_t>(out.table.size()) * kx;
    // Sums are recorded in a scratch list first (handles <= -2 index it); only the points an
    // entry keeps get provenance records, made once per scratch node (memo).
    struct Pending {
      Handle left, right;
    };
    std::vector<Pending> scratch;
    std::vector<Handle> memo;
    const HandleCombiner combiner = [&scratch](Handle l, Handle r) {
      if (l == kNoHandle) return r;
      if (r == kNoHandle) return l;
      scratch.push_back({l, r});
      return static_cast<Handle>(-1 - static_cast<Handle>(scratch.size()));
    };
    const std::function<Handle(Handle)> materialize = [&](Handle h) -> Handle {
      if (h >= kNoHandle) return h;
      const size_t i = static_cast<size_t>(-2 - h);
      if (memo[i] == kNoHandle) {
        memo[i] = arena_.add_sum(materialize(scratch[i].left), materialize(scratch[i].right));
      }
      return memo[i];
    };
    struct Choice {
      int value;
      Handle handle;
    };
    std::vector<int> digit(scope.size(), 0);
    std::vector<int64_t> offset(m, 0);
    std::vector<Frontier::Point> raw;
    std::vector<Choice> choices;
    int64_t points = 0;
    for (size_t entry = 0; entry < out.table.size(); ++entry) {
      for (size_t j = 0; j < m; ++j) {
        offset[j] = 0;
        for (size_t p = 0; p < scope.size(); ++p) offset[j] += digit[p] * stride_of[j][p];
      }
      raw.clear();
      choices.clear();
      scratch.clear();
      for (int k = 0; k < kx; ++k) {
        const auto cell = [&](size_t j) -> const Frontier& {
          const Factor& f = factors_[static_cast<size_t>(consumed[j])];
          return f.table[static_cast<size_t>(offset[j] + k * stride_x[j])];
        };
        Frontier sum;
        const Frontier* acc = &cell(0);
        for (size_t j = 1; j < m; ++j) {
          sum = minkowski_sum(*acc, cell(j), combiner);
          acc = &sum;
        }
        for (const Frontier::Point& p : acc->points()) {
          raw.push_back({p.cost, static_cast<Handle>(choices.size())});
          choices.push_back({k, p.handle});
        }
      }
      Frontier chosen = epsilon_prune(Frontier::from_points(raw), delta_);
      std::vector<Frontier::Point> tagged;
      tagged.reserve(chosen.size());
      memo.assign(scratch.size(), kNoHandle);
      for (const Frontier::Point& p : chosen.points()) {
        const Choice& c = choices[static_cast<size_t>(p.handle)];
        tagged.push_back({p.cost, arena_.add_choice(x, c.value, materialize(c.handle))});
      }
      points += static_cast<int64_t>(tagged.size());
      if (points > options_.max_factor_points) refuse(x, scope, entries, points);
      out.table[entry] = Frontier::from_sorted(std::move(tagged));
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
