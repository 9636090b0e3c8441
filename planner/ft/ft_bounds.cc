// Min-plus elimination of several weighted scalar objectives at once; see ft_bounds.h.
#include "planner/ft/ft_bounds.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>

#include "planner/ft/step_memo.h"

namespace tensoropt::planner {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Objective o of a cost: weights[o].time * time + weights[o].memory * memory.
using Weights = std::vector<Cost>;

struct Table {
  std::vector<int> scope;       // sorted node ids
  std::vector<int64_t> stride;  // row-major, last position fastest
  std::vector<double> value;    // [entry * objectives + o]
};

// One elimination step's joint assignments: the step's scope, then x last. For each consumed
// table, its stride for each joint position (0 where the table does not hold that node).
struct Joint {
  std::vector<int> nodes;                    // scope..., x
  std::vector<int> configs;                  // [position]
  std::vector<std::vector<int64_t>> stride;  // [table][position]
};

// A step kept for steps with the same content (Elimination::visit_content).
struct Record {
  std::vector<uint64_t> content;  // visit_content's sequence
  std::vector<double> value;      // the step's table
};

// Min-plus elimination of several weighted objectives at once (each minimised on its own),
// mirroring FT's factor bookkeeping: the tables consumed at each step are the live ones holding x,
// in creation order, and the step's table gets id (nodes + edges + step).
class Elimination {
 public:
  // The values of the tables consumed by steps before `release_before` are released once consumed
  // (all of them with order.order.size(): then only minima() may be asked; node_minima(x) needs
  // those from x's step on), so the elimination holds its live tables, not all of them.
  Elimination(const Problem& problem, const EliminationOrder& order, const Weights& weights, size_t release_before = 0)
      : problem_(problem), order_(order), weights_(weights), n_(weights.size()) {
    const int n = problem.num_nodes();
    if (order.order.size() != static_cast<size_t>(n) || order.scopes.size() != order.order.size()) {
      throw std::invalid_argument("elimination order does not match the problem");
    }
    by_node_.assign(static_cast<size_t>(n), {});
    for (int v = 0; v < n; ++v) {
      Table t;
      t.scope = {v};
      t.stride = {1};
      for (Cost c : problem.node_cost[static_cast<size_t>(v)]) append(t.value, c);
      add(std::move(t));
    }
    for (const Problem::Edge& e : problem.edges) {
      Table t;
      t.scope = {std::min(e.u, e.v), std::max(e.u, e.v)};
      t.stride = row_major_strides(problem, t.scope);
      for (Cost c : costs_by_sorted_nodes(problem, e)) append(t.value, c);
      add(std::move(t));
    }
    first_created_ = static_cast<int>(tables_.size());
    std::vector<bool> live(tables_.size(), true);
    for (size_t s = 0; s < order.order.size(); ++s) {
      const int x = order.order[s];
      std::vector<int> consumed;
      std::vector<int> scope;
      for (int id : by_node_[static_cast<size_t>(x)]) {
        if (!live[static_cast<size_t>(id)]) continue;
        live[static_cast<size_t>(id)] = false;
        consumed.push_back(id);
        for (int u : tables_[static_cast<size_t>(id)].scope)
          if (u != x) scope.push_back(u);
      }
      std::sort(scope.begin(), scope.end());
      scope.erase(std::unique(scope.begin(), scope.end()), scope.end());
      if (scope != order.scopes[s]) throw std::invalid_argument("elimination order scope mismatch at step " + std::to_string(s));
      Table t;
      t.scope = scope;
      t.stride = row_major_strides(problem, scope);
      size_t entries = 1;
      for (int v : scope) entries *= static_cast<size_t>(problem.num_configs(v));
      consumed_.push_back(consumed);
      const Joint j = joint(s);
      // A model's repeated layers repeat steps: a step whose consumed tables equal an earlier
      // recorded step's, bit for bit and in the same places, takes its table.
      ContentHash hash;
      const auto visit = [&](const auto& fn) { visit_content(j, consumed, fn); };
      visit(std::ref(hash));
      if (const Record* same = memo_.find(hash.value, visit)) {
        t.value = same->value;
      } else {
        t.value.assign(entries * n_, kInf);
        std::vector<const double*> values;
        for (int id : consumed) values.push_back(tables_[static_cast<size_t>(id)].value.data());
        std::vector<double> acc(static_cast<size_t>(j.configs.back()) * n_);
        const size_t w = n_;
        for_each_entry(j, [&](int64_t entry, const int64_t* at, const int64_t* xs, int kx) {
          sum_over_x(values, at, xs, kx, w, acc.data());
          double* best = t.value.data() + entry * static_cast<int64_t>(w);
          for (int k = 0; k < kx; ++k) {
            const double* a = acc.data() + static_cast<size_t>(k) * w;
            for (size_t o = 0; o < w; ++o) best[o] = std::min(best[o], a[o]);
          }
        });
        if (memo_.seen_before(hash.value)) {
          auto r = std::make_unique<Record>();
          visit([&](uint64_t v) { r->content.push_back(v); });
          r->value = t.value;
          memo_.keep(hash.value, std::move(r));
        }
      }
      add(std::move(t));
      live.push_back(true);
      if (s < release_before)
        for (int id : consumed) std::vector<double>().swap(tables_[static_cast<size_t>(id)].value);
    }
  }

  // Each objective's minimum over all strategies: the sum of the tables of finished components
  // (empty scopes), which no step consumes.
  std::vector<double> minima() const {
    std::vector<double> sum(n_, 0.0);
    for (size_t s = 0; s < order_.order.size(); ++s)
      if (order_.scopes[s].empty()) add(sum, created(s), 0);
    return sum;
  }

  // Outside minima of every step's table (see ft_bounds.h), [step][entry * objectives + o].
  std::vector<std::vector<double>> outside() const { return n_ == 2 ? outside_for<2>() : outside_for<0>(); }

  // outside() with W objectives known at compile time (0: n_, at run time), so the inner loops
  // over objectives unroll for the usual two. The pass goes backwards and stops at step `first`:
  // the tables of the steps before it are left empty.
  template <size_t W>
  std::vector<std::vector<double>> outside_for(size_t first = 0) const {
    std::vector<std::vector<double>> out(tables_.size());
    const size_t steps = order_.order.size();
    // Finished components: each one's outside is the sum of the others' minima.
    std::vector<size_t> finished;
    for (size_t s = 0; s < steps; ++s)
      if (order_.scopes[s].empty()) finished.push_back(s);
    for (size_t s : finished) {
      std::vector<double> other(n_, 0.0);
      for (size_t t : finished)
        if (t != s) add(other, created(t), 0);
      out[static_cast<size_t>(first_created_) + s] = other;
    }
    for (size_t s = steps; s-- > first;) {
      const std::vector<double>& mine = out[static_cast<size_t>(first_created_) + s];
      const std::vector<int>& consumed = consumed_[s];
      const Joint j = joint(s);
      std::vector<const double*> values;
      for (int id : consumed) values.push_back(tables_[static_cast<size_t>(id)].value.data());
      const size_t m = consumed.size();
      const size_t w = W ? W : n_;
      bool any = false;
      for (size_t f = 0; f < m; ++f) {
        if (consumed[f] < first_created_) continue;
        out[static_cast<size_t>(consumed[f])].assign(tables_[static_cast<size_t>(consumed[f])].value.size(), kInf);
        any = true;
      }
      if (!any) continue;
      // Per (entry, k): the outer minimum plus the consumed tables before f (before[f]) and after
      // f (after[f]); f's outside candidate is their sum.
      const size_t kx = static_cast<size_t>(j.configs.back());
      std::vector<double> before((m + 1) * kx * w), after((m + 1) * kx * w);
      for_each_entry(j, [&](int64_t entry, const int64_t* at, const int64_t* xs, int) {
        const double* outer = mine.data() + entry * static_cast<int64_t>(w);
        for (size_t k = 0; k < kx; ++k) {
          std::copy_n(outer, w, &before[k * w]);
          std::fill_n(&after[(m * kx + k) * w], w, 0.0);
        }
        for (size_t g = 0; g < m; ++g)
          for (size_t k = 0; k < kx; ++k) {
            const double* v = values[g] + (at[g] + static_cast<int64_t>(k) * xs[g]) * static_cast<int64_t>(w);
            const double* b = &before[(g * kx + k) * w];
            double* nb = &before[((g + 1) * kx + k) * w];
            for (size_t o = 0; o < w; ++o) nb[o] = b[o] + v[o];
          }
        for (size_t g = m; g-- > 0;)
          for (size_t k = 0; k < kx; ++k) {
            const double* v = values[g] + (at[g] + static_cast<int64_t>(k) * xs[g]) * static_cast<int64_t>(w);
            const double* a = &after[((g + 1) * kx + k) * w];
            double* na = &after[(g * kx + k) * w];
            for (size_t o = 0; o < w; ++o) na[o] = a[o] + v[o];
          }
        for (size_t f = 0; f < m; ++f) {
          if (consumed[f] < first_created_) continue;
          std::vector<double>& theirs = out[static_cast<size_t>(consumed[f])];
          for (size_t k = 0; k < kx; ++k) {
            const double* b = &before[(f * kx + k) * w];
            const double* a = &after[((f + 1) * kx + k) * w];
            double* slot = theirs.data() + (at[f] + static_cast<int64_t>(k) * xs[f]) * static_cast<int64_t>(w);
            for (size_t o = 0; o < w; ++o) slot[o] = std::min(slot[o], b[o] + a[o]);
          }
        }
      });
    }
    std::vector<std::vector<double>> steps_out;
    for (size_t s = 0; s < steps; ++s) steps_out.push_back(std::move(out[static_cast<size_t>(first_created_) + s]));
    return steps_out;
  }

  // For each configuration k of the node eliminated at step s, each objective's least value over
  // the strategies with that node = k ([k * objectives + o]): the step's consumed tables' sum at
  // (entry, k) plus the entry's outside minimum, least over the entries.
  std::vector<double> node_minima(size_t s) const {
    const std::vector<std::vector<double>> outside_all = outside_for<0>(s + 1);
    const std::vector<double>& outer = outside_all[s];
    const Joint j = joint(s);
    std::vector<const double*> values;
    for (int id : consumed_[s]) values.push_back(tables_[static_cast<size_t>(id)].value.data());
    const size_t kx = static_cast<size_t>(j.configs.back());
    std::vector<double> best(kx * n_, kInf), acc(kx * n_);
    for_each_entry(j, [&](int64_t entry, const int64_t* at, const int64_t* xs, int k_count) {
      sum_over_x(values, at, xs, k_count, n_, acc.data());
      const double* o = outer.data() + entry * static_cast<int64_t>(n_);
      for (size_t k = 0; k < kx; ++k)
        for (size_t w = 0; w < n_; ++w) best[k * n_ + w] = std::min(best[k * n_ + w], acc[k * n_ + w] + o[w]);
    });
    return best;
  }

  // The assignment achieving objective o's minimum, decoded backwards.
  std::vector<int> argmin(size_t o) const {
    std::vector<int> a(static_cast<size_t>(problem_.num_nodes()), -1);
    for (size_t s = order_.order.size(); s-- > 0;) {
      const int x = order_.order[s];
      double best = kInf;
      int best_k = 0;
      for (int k = 0; k < problem_.num_configs(x); ++k) {
        a[static_cast<size_t>(x)] = k;
        double sum = 0;
        for (int id : consumed_[s]) {
          const Table& t = tables_[static_cast<size_t>(id)];
          int64_t at = 0;
          for (size_t p = 0; p < t.scope.size(); ++p) at += a[static_cast<size_t>(t.scope[p])] * t.stride[p];
          sum += t.value[static_cast<size_t>(at) * n_ + o];
        }
        if (sum < best) {
          best = sum;
          best_k = k;
        }
      }
      a[static_cast<size_t>(x)] = best_k;
    }
    return a;
  }

 private:
  void append(std::vector<double>& values, Cost c) const {
    for (const Cost& w : weights_) values.push_back(w.time * c.time + w.memory * c.memory);
  }
  void add(std::vector<double>& sum, const Table& t, int64_t entry) const {
    const double* v = t.value.data() + entry * static_cast<int64_t>(n_);
    for (size_t o = 0; o < n_; ++o) sum[o] += v[o];
  }

  void add(Table t) {
    const int id = static_cast<int>(tables_.size());
    for (int v : t.scope) by_node_[static_cast<size_t>(v)].push_back(id);
    tables_.push_back(std::move(t));
  }

  const Table& created(size_t step) const { return tables_[static_cast<size_t>(first_created_) + step]; }

  // A step's content, as FT's repeated steps (ft.h): the joint configuration counts, and per
  // consumed table its strides in the joint and its values' bits.
  template <class Fn>
  void visit_content(const Joint& j, const std::vector<int>& consumed, const Fn& fn) const {
    fn(j.configs.size());
    for (int c : j.configs) fn(static_cast<uint64_t>(c));
    for (size_t f = 0; f < consumed.size(); ++f) {
      for (int64_t stride : j.stride[f]) fn(static_cast<uint64_t>(stride));
      const std::vector<double>& value = tables_[static_cast<size_t>(consumed[f])].value;
      fn(value.size());
      for (double v : value) fn(std::bit_cast<uint64_t>(v));
    }
  }

  Joint joint(size_t s) const {
    Joint j;
    j.nodes = order_.scopes[s];
    j.nodes.push_back(order_.order[s]);
    for (int v : j.nodes) j.configs.push_back(problem_.num_configs(v));
    for (int id : consumed_[s]) {
      const Table& t = tables_[static_cast<size_t>(id)];
      std::vector<int64_t> stride(j.nodes.size(), 0);
      for (size_t p = 0; p < t.scope.size(); ++p) {
        const size_t at = static_cast<size_t>(std::find(j.nodes.begin(), j.nodes.end(), t.scope[p]) - j.nodes.begin());
        stride[at] = t.stride[p];
      }
      j.stride.push_back(std::move(stride));
    }
    return j;
  }

  // acc[k * w + o] = the sum over the consumed tables of their value for x's configuration k.
  static void sum_over_x(const std::vector<const double*>& values, const int64_t* at, const int64_t* xs, int kx,
                         size_t w, double* acc) {
    const size_t m = values.size();
    const int64_t ww = static_cast<int64_t>(w);
    for (int k = 0; k < kx; ++k) std::copy_n(values[0] + (at[0] + k * xs[0]) * ww, w, acc + static_cast<size_t>(k) * w);
    for (size_t f = 1; f < m; ++f) {
      const double* base = values[f] + at[f] * ww;
      const int64_t step = xs[f] * ww;
      if (w == 2) {
        for (int k = 0; k < kx; ++k) {
          acc[2 * k] += base[k * step];
          acc[2 * k + 1] += base[k * step + 1];
        }
      } else {
        for (int k = 0; k < kx; ++k)
          for (size_t o = 0; o < w; ++o) acc[static_cast<size_t>(k) * w + o] += base[k * step + static_cast<int64_t>(o)];
      }
    }
  }

  // Calls fn(entry of the step's table, [table] index into each consumed table at x's
  // configuration 0, [table] stride of x, K_x) for every entry, in order.
  template <class Fn>
  static void for_each_entry(const Joint& j, const Fn& fn) {
    const size_t positions = j.nodes.size();
    const size_t tables = j.stride.size();
    std::vector<int> digit(positions, 0);
    std::vector<int64_t> at(tables, 0), xs(tables);
    const size_t x = positions - 1;
    for (size_t f = 0; f < tables; ++f) xs[f] = j.stride[f][x];
    for (int64_t entry = 0;; ++entry) {
      fn(entry, at.data(), xs.data(), j.configs[x]);
      size_t p = x;
      while (p-- > 0) {
        for (size_t f = 0; f < tables; ++f) at[f] += j.stride[f][p];
        if (++digit[p] < j.configs[p]) break;
        for (size_t f = 0; f < tables; ++f) at[f] -= digit[p] * j.stride[f][p];
        digit[p] = 0;
      }
      if (p == static_cast<size_t>(-1)) return;
    }
  }

  const Problem& problem_;
  const EliminationOrder& order_;
  const Weights weights_;
  const size_t n_;
  std::vector<Table> tables_;
  std::vector<std::vector<int>> by_node_;
  std::vector<std::vector<int>> consumed_;  // [step] table ids
  int first_created_ = 0;
  StepMemo<Record> memo_;
};

}  // namespace

OutsideBounds outside_bounds(const Problem& problem, const EliminationOrder& order) {
  const std::vector<std::vector<double>> both = Elimination(problem, order, {{1, 0}, {0, 1}}).outside();
  OutsideBounds b;
  for (const std::vector<double>& step : both) {
    std::vector<Cost> costs(step.size() / 2);
    for (size_t e = 0; e < costs.size(); ++e) costs[e] = {step[2 * e], step[2 * e + 1]};
    b.step.push_back(std::move(costs));
  }
  return b;
}

KnownCosts::KnownCosts(const Problem& problem, const EliminationOrder& order, const std::vector<Cost>& known,
                       double epsilon, std::shared_ptr<const OutsideBounds> bounds)
    : bounds_(bounds ? std::move(bounds) : std::make_shared<const OutsideBounds>(outside_bounds(problem, order))) {
  if (bounds_->step.size() != order.order.size()) throw std::invalid_argument("FT: outside bounds of another elimination order");
  for (size_t s = 0; s < order.order.size(); ++s) {
    size_t entries = 1;
    for (int v : order.scopes[s]) entries *= static_cast<size_t>(problem.num_configs(v));
    if (bounds_->step[s].size() != entries) throw std::invalid_argument("FT: outside bounds of another elimination order");
  }
  std::vector<Frontier::Point> scaled;
  for (Cost c : known) {
    if (!std::isfinite(c.time) || !std::isfinite(c.memory) || c.time < 0 || c.memory < 0) {
      throw std::invalid_argument("FT: a known cost is negative or not finite");
    }
    scaled.push_back({{c.time * (1 + epsilon), c.memory * (1 + epsilon)}, kNoHandle});
  }
  const Frontier staircase = Frontier::from_points(std::move(scaled));
  for (const Frontier::Point& p : staircase.points()) staircase_.push_back(p.cost);
  const auto whole = [](Cost c) { return std::floor(c.memory) == c.memory && c.memory < 0x1p52; };
  for (const auto& costs : problem.node_cost)
    for (Cost c : costs) integral_memory_ = integral_memory_ && whole(c);
  for (const Problem::Edge& e : problem.edges)
    for (Cost c : e.cost) integral_memory_ = integral_memory_ && whole(c);
}

bool KnownCosts::beat(Cost c) const {
  // Of the known costs no slower than the margin allows, the last has the least memory.
  const double t = c.time * (1 - kMargin);
  auto it = std::upper_bound(staircase_.begin(), staircase_.end(), t, [](double v, const Cost& u) { return v < u.time; });
  if (it == staircase_.begin()) return false;
  --it;
  return it->memory <= (integral_memory_ ? c.memory : c.memory * (1 - kMargin));
}

SumCeiling KnownCosts::ceiling(size_t step, size_t entry) const {
  // A sum s above it has, for some known u (staircase_ holds u scaled by 1 + epsilon),
  //   s.time + o.time >= u.time / (1 - kMargin) + kSlack (u.time + o.time), and
  //   s.memory + o.memory >= u.memory [/ (1 - kMargin)] + kSlack (u.memory + o.memory),
  // so beat() finds u eligible and small enough: the slack exceeds every rounding of its sums.
  constexpr double kSlack = 1e-12;
  const Cost o = bounds_->step[step][entry];
  SumCeiling c;
  c.points = staircase_;
  c.time_scale = 1 / (1 - kMargin) + kSlack;
  c.time_shift = -o.time * (1 - kSlack);
  c.memory_scale = (integral_memory_ ? 1 : 1 / (1 - kMargin)) + kSlack;
  c.memory_shift = -o.memory * (1 - kSlack);
  return c;
}

namespace {

void check_weights(const char* who, const std::vector<Cost>& weights) {
  for (Cost w : weights) {
    if (!std::isfinite(w.time) || !std::isfinite(w.memory) || w.time < 0 || w.memory < 0 || w.time + w.memory <= 0) {
      throw std::invalid_argument(std::string(who) + ": weights must be finite, non-negative and not both zero");
    }
  }
}

}  // namespace

std::vector<std::vector<int>> weighted_optima(const Problem& problem, const EliminationOrder& order,
                                              const std::vector<Cost>& weights) {
  check_weights("weighted_optima", weights);
  std::vector<std::vector<int>> out;
  if (weights.empty()) return out;
  const Elimination e(problem, order, weights);
  for (size_t o = 0; o < weights.size(); ++o) out.push_back(e.argmin(o));
  return out;
}

std::vector<double> weighted_minima(const Problem& problem, const EliminationOrder& order, const std::vector<Cost>& weights) {
  check_weights("weighted_minima", weights);
  if (weights.empty()) return {};
  return Elimination(problem, order, weights, order.order.size()).minima();
}

std::vector<std::vector<double>> node_minima(const Problem& problem, const EliminationOrder& order, int node,
                                             const std::vector<Cost>& weights) {
  if (node < 0 || node >= problem.num_nodes()) throw std::invalid_argument("node_minima: no node " + std::to_string(node));
  check_weights("node_minima", weights);
  std::vector<std::vector<double>> out(static_cast<size_t>(problem.num_configs(node)));
  if (weights.empty()) return out;
  const size_t step = static_cast<size_t>(std::find(order.order.begin(), order.order.end(), node) - order.order.begin());
  const std::vector<double> flat = Elimination(problem, order, weights, step).node_minima(step);
  for (size_t k = 0; k < out.size(); ++k) out[k].assign(flat.begin() + static_cast<int64_t>(k * weights.size()), flat.begin() + static_cast<int64_t>((k + 1) * weights.size()));
  return out;
}

}  // namespace tensoropt::planner
