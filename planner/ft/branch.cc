// Branching on the carried node and whole-Problem dominance proofs; see branch.h.
#include "planner/ft/branch.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <cmath>
#include <limits>
#include <memory>

#include "planner/ft/ft_bounds.h"

namespace tensoropt::planner {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// KnownCosts' margin, and a relative slack wider than any rounding of a weighted minimum.
constexpr double kMargin = 1e-9;
constexpr double kSlack = 1e-9;
constexpr int kRounds = 5;
constexpr size_t kWeightsPerRound = 16;
// Branch only when at most 1 / kLeadShare of the carried node's configurations lead.
constexpr size_t kLeadShare = 3;

// The known costs as the thresholds of "beaten": a cost c is beaten when c >= t componentwise for
// some t of the staircase (time ascending, memory descending). Rounded up, so a cost counted
// beaten here is beaten by KnownCosts::beat too.
std::vector<Cost> thresholds(const std::vector<Cost>& known, double epsilon) {
  std::vector<Frontier::Point> raw;
  for (Cost u : known) {
    const double t = u.time * (1 + epsilon) / (1 - kMargin) * (1 + 1e-12);
    const double m = u.memory * (1 + epsilon) / (1 - kMargin) * (1 + 1e-12);
    raw.push_back({{t, m}, kNoHandle});
  }
  const Frontier staircase = Frontier::from_points(std::move(raw));
  std::vector<Cost> out;
  for (const Frontier::Point& p : staircase.points()) out.push_back(p.cost);
  return out;
}

}  // namespace

namespace {

// The proof of every_strategy_beaten for several candidate sets of strategies at once (the
// configurations of one node, or the whole Problem as one): minima(weights)[c][w] is candidate
// c's least weighted cost for weights[w]. Returns, per candidate, whether its every strategy is
// beaten. Each round asks minima once for all candidates still open.
std::vector<bool> prove_beaten(const std::vector<Cost>& known, double epsilon, size_t candidates,
                               const std::function<std::vector<std::vector<double>>(const std::vector<Cost>&)>& minima) {
  std::vector<bool> beaten(candidates, false);
  if (known.empty() || candidates == 0) return beaten;
  const std::vector<Cost> s = thresholds(known, epsilon);
  const size_t n = s.size();
  // Notch i < n: below-left of (s[i].time, s[i-1].memory), with s[-1].memory = infinity; notch n:
  // below s[n-1].memory at any time. A strategy not beaten lies strictly inside one of them.
  const auto notch = [&](size_t i) -> Cost {
    return {i < n ? s[i].time : kInf, i > 0 ? s[i - 1].memory : kInf};
  };
  std::vector<std::vector<size_t>> open(candidates);
  std::vector<bool> live(candidates, true);
  for (auto& o : open)
    for (size_t i = 0; i <= n; ++i) o.push_back(i);
  // Round 0: the two ends alone (cheap, and what fails most often); round 1: slopes (seconds per
  // byte) spread around the staircase's; then the local slopes at the notches still open.
  std::vector<Cost> weights = {{1, 0}, {0, 1}};
  const double span_t = s.back().time - s.front().time, span_m = s.front().memory - s.back().memory;
  const double slope = n > 1 && span_m > 0 && span_t > 0 ? span_t / span_m : s.front().time / std::max(1.0, s.front().memory);
  for (int round = 0; round < kRounds && !weights.empty(); ++round) {
    const std::vector<std::vector<double>> least = minima(weights);
    std::vector<double> slopes;
    for (size_t c = 0; c < candidates; ++c) {
      if (!live[c]) continue;
      std::vector<size_t> still;
      for (size_t i : open[c]) {
        const Cost at = notch(i);
        bool excluded = false;
        for (size_t k = 0; k < weights.size() && !excluded; ++k) {
          const Cost w = weights[k];
          const double value = (w.time > 0 ? w.time * at.time : 0) + (w.memory > 0 ? w.memory * at.memory : 0);
          excluded = value <= least[c][k] * (1 - kSlack);
        }
        if (!excluded) still.push_back(i);
      }
      const size_t before = open[c].size();
      open[c] = std::move(still);
      if (open[c].empty()) {
        beaten[c] = true;
        live[c] = false;
        continue;
      }
      // The ends are exact minima: no later weight closes them. A round of local slopes that
      // closes few notches: the rest lie in the staircase's non-convex bays, where no weighted
      // minimum reaches.
      if (open[c].front() == 0 || open[c].back() == n || (round >= 2 && open[c].size() * 10 > before * 9)) {
        live[c] = false;
        continue;
      }
      for (size_t i : open[c]) {
        const size_t lo = i >= 4 ? i - 4 : 0, hi = std::min(n - 1, i + 3);
        const double dt = s[hi].time - s[lo].time, dm = s[lo].memory - s[hi].memory;
        if (dt > 0 && dm > 0) slopes.push_back(dt / dm);
      }
    }
    weights.clear();
    if (std::none_of(live.begin(), live.end(), [](bool b) { return b; })) break;
    if (round == 0) {
      for (int f = -3; f <= 3; ++f) weights.push_back({1, slope * std::pow(4.0, f)});
      continue;
    }
    // Next: the staircase's local slope at each open notch, one weight per factor of 1.5.
    std::sort(slopes.begin(), slopes.end());
    double last = 0;
    for (double l : slopes) {
      if (last > 0 && l < last * 1.5) continue;
      weights.push_back({1, l});
      last = l;
    }
    if (weights.size() > kWeightsPerRound) {
      std::vector<Cost> spread;
      for (size_t k = 0; k < kWeightsPerRound; ++k) spread.push_back(weights[k * weights.size() / kWeightsPerRound]);
      weights = std::move(spread);
    }
  }
  return beaten;
}

}  // namespace

bool every_strategy_beaten(const Problem& problem, const EliminationOrder& order, const std::vector<Cost>& known,
                           double epsilon) {
  return prove_beaten(known, epsilon, 1, [&](const std::vector<Cost>& w) {
    return std::vector<std::vector<double>>{weighted_minima(problem, order, w)};
  })[0];
}

std::vector<bool> configurations_beaten(const Problem& problem, const EliminationOrder& order, int node,
                                        const std::vector<int>& configs, const std::vector<Cost>& known, double epsilon) {
  return prove_beaten(known, epsilon, configs.size(), [&](const std::vector<Cost>& w) {
    const std::vector<std::vector<double>> all = node_minima(problem, order, node, w);
    std::vector<std::vector<double>> out;
    for (int k : configs) out.push_back(all[static_cast<size_t>(k)]);
    return out;
  });
}

int carried_node(const EliminationOrder& order) {
  std::vector<int> count(order.order.size(), 0);
  for (const std::vector<int>& scope : order.scopes)
    if (scope.size() >= 2)
      for (int v : scope) ++count[static_cast<size_t>(v)];
  if (count.empty()) return -1;
  const auto best = std::max_element(count.begin(), count.end());
  return *best >= kMinCarried ? static_cast<int>(best - count.begin()) : -1;
}

FtResult solve_ft_branched(const Problem& problem, const FtOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  validate(problem);
  validate_options(options);  // before any proof reads the known costs
  const std::shared_ptr<const EliminationOrder> order =
      options.order ? options.order : std::make_shared<const EliminationOrder>(greedy_elimination_order(problem));
  const auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  const int nodes = problem.num_nodes();
  FtResult out;
  std::vector<Cost> known = options.known;
  std::vector<FrontierPoint> all;
  int solves = 0;
  // The Problem narrowed to the carried node x's configurations `set`, solved with the known
  // costs so far; its points join the known costs. With `prove`, it is first left out when those
  // costs beat its every strategy. The unproven rest skips that: each of its configurations has
  // just failed the proof, and their union's weighted minima are no higher, so a second try would
  // cost a few eliminations to close almost surely nothing (the result is the same either way:
  // solving a beaten set returns no point).
  const auto branch = [&](int x, std::vector<int> set, bool prove) {
    std::vector<std::vector<int>> keep(static_cast<size_t>(nodes));
    keep[static_cast<size_t>(x)] = std::move(set);
    Narrowed sub = narrow(problem, std::move(keep));
    auto sub_order = std::make_shared<const EliminationOrder>(elimination_order_of(sub.problem, order->order));
    if (prove && every_strategy_beaten(sub.problem, *sub_order, known, options.epsilon)) {
      out.stats.branches_left_out += static_cast<int>(sub.keep[static_cast<size_t>(x)].size());
      return;
    }
    FtOptions opt = options;
    opt.order = std::move(sub_order);
    opt.bounds = nullptr;  // FT finds the branch's own when it has known costs
    opt.known = known;
    if (options.progress) {
      const int done = solves;
      opt.progress = [&, done](const FtProgress& p) {
        FtProgress q = p;
        q.eliminated = done * p.total + p.eliminated;
        q.total = 2 * p.total;
        q.seconds = seconds();
        options.progress(q);
      };
    }
    ++solves;
    opt.max_points_built = points_left(options, out.stats.points_built);
    FtResult r = solve_ft(sub.problem, opt);
    accumulate(out.stats, r.stats);
    ++out.stats.branches;
    for (FrontierPoint& p : r.points) {
      known.push_back(p.cost);
      for (size_t v = 0; v < sub.keep.size(); ++v) p.assignment[v] = sub.keep[v][static_cast<size_t>(p.assignment[v])];
      all.push_back(std::move(p));
    }
  };
  int x = carried_node(*order);
  std::vector<int> lead, others;
  if (x >= 0) {
    // The configurations holding the fastest or the smallest strategy lead; the others can be
    // beaten by them, and are tried one by one.
    const std::vector<std::vector<double>> ends = node_minima(problem, *order, x, {{1, 0}, {0, 1}});
    double fastest = kInf, smallest = kInf;
    for (const std::vector<double>& e : ends) {
      fastest = std::min(fastest, e[0]);
      smallest = std::min(smallest, e[1]);
    }
    for (int k = 0; k < problem.num_configs(x); ++k) {
      const std::vector<double>& e = ends[static_cast<size_t>(k)];
      const bool leads = e[0] <= fastest * (1 + kSlack) || e[1] <= smallest * (1 + kSlack);
      (leads ? lead : others).push_back(k);
    }
    // Branching pays when the leading configurations are a small part of the whole: their solve
    // is then cheap next to solving all, and the proofs for the others cheaper still.
    if (others.empty() || lead.size() * kLeadShare > static_cast<size_t>(problem.num_configs(x))) x = -1;
  }
  if (x < 0) {
    // Not branched: solve_ft as it is, unless the known costs beat the whole Problem.
    if (every_strategy_beaten(problem, *order, known, options.epsilon)) {
      out.stats.width = order->width;
      out.stats.depth = order->depth;
      out.stats.branches_left_out = 1;
      out.stats.seconds = seconds();
      return out;
    }
    FtOptions whole = options;
    whole.order = order;
    FtResult r = solve_ft(problem, whole);
    r.stats.branches = 1;
    return r;
  }
  branch(x, lead, true);
  std::vector<int> rest;
  const std::vector<bool> beaten = configurations_beaten(problem, *order, x, others, known, options.epsilon);
  for (size_t i = 0; i < others.size(); ++i) {
    if (beaten[i]) {
      ++out.stats.branches_left_out;
    } else {
      rest.push_back(others[i]);
    }
  }
  if (!rest.empty()) branch(x, std::move(rest), false);
  // Among equal costs the lowest configuration of x, as FT keeps the lowest.
  std::stable_sort(all.begin(), all.end(), [x](const FrontierPoint& a, const FrontierPoint& b) {
    if (a.cost.time != b.cost.time) return a.cost.time < b.cost.time;
    if (a.cost.memory != b.cost.memory) return a.cost.memory < b.cost.memory;
    return a.assignment[static_cast<size_t>(x)] < b.assignment[static_cast<size_t>(x)];
  });
  for (FrontierPoint& p : all)
    if (out.points.empty() || p.cost.memory < out.points.back().cost.memory) out.points.push_back(std::move(p));
  out.stats.width = std::max(out.stats.width, order->width);
  out.stats.depth = std::max(out.stats.depth, order->depth);
  out.stats.seconds = seconds();
  return out;
}

}  // namespace tensoropt::planner
