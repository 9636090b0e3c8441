// Conditioning on a few fixed nodes; see condition.h.
#include "planner/ft/condition.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include "planner/ft/branch.h"
#include "planner/ft/ft_bounds.h"

namespace tensoropt::planner {

namespace {

// The Problem with each of `nodes` narrowed to configuration `at[i]` and folded away.
Narrowed fixed(const Problem& problem, const std::vector<int>& nodes, const std::vector<int>& at) {
  std::vector<std::vector<int>> keep(static_cast<size_t>(problem.num_nodes()));
  for (size_t i = 0; i < nodes.size(); ++i) keep[static_cast<size_t>(nodes[i])] = {at[i]};
  Narrowed sub = narrow(problem, std::move(keep));
  sub.problem = fold_independent_edges(sub.problem);
  return sub;
}

}  // namespace

std::optional<std::vector<int>> conditioning_nodes(const Problem& problem, const OrderFits& fits,
                                                   const ScopeFits& scope_fits, double max_branches) {
  const int n = problem.num_nodes();
  std::vector<int> nodes;
  std::vector<bool> chosen(static_cast<size_t>(n), false);
  double branches = 1;
  while (true) {
    const Narrowed sub = fixed(problem, nodes, std::vector<int>(nodes.size(), 0));
    const EliminationOrder order = greedy_elimination_order(sub.problem);
    if (fits(sub.problem, order)) return nodes;
    std::vector<int> in_failing(static_cast<size_t>(n), 0);
    for (const std::vector<int>& scope : order.scopes)
      if (!scope_fits(sub.problem, scope))
        for (int v : scope) ++in_failing[static_cast<size_t>(v)];
    // In most failing scopes per branch it adds: a weight of 2 layouts before an op of 15.
    int best = -1;
    double best_score = 0;
    for (int v = 0; v < n; ++v) {
      const size_t i = static_cast<size_t>(v);
      if (chosen[i] || in_failing[i] == 0 || problem.num_configs(v) < 2) continue;
      const double score = in_failing[i] / std::log2(static_cast<double>(problem.num_configs(v)));
      if (best < 0 || score > best_score) {
        best = v;
        best_score = score;
      }
    }
    if (best < 0) return std::nullopt;  // the failing scopes hold no node left to fix
    branches *= problem.num_configs(best);
    if (branches > max_branches) return std::nullopt;
    chosen[static_cast<size_t>(best)] = true;
    nodes.push_back(best);
  }
}

FtResult solve_ft_conditioned(const Problem& problem, const std::vector<int>& nodes, const FtOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  validate(problem);
  validate_options(options);
  for (int v : nodes)
    if (v < 0 || v >= problem.num_nodes())
      throw std::invalid_argument("FT conditioning: node " + std::to_string(v) + " out of range");
  FtResult out;
  std::vector<Cost> known = options.known;
  std::vector<FrontierPoint> all;
  // Every assignment of the nodes (the last node fastest), its Problem, order and two ends: the
  // fastest and the smallest strategy (exact min-plus minima).
  struct Branch {
    Narrowed sub;
    std::shared_ptr<const EliminationOrder> order;
    double fastest = 0, smallest = 0;
  };
  std::vector<Branch> branches;
  std::vector<int> at(nodes.size(), 0);
  double fastest = 0, smallest = 0;
  while (true) {
    Branch b;
    b.sub = fixed(problem, nodes, at);
    b.order = std::make_shared<const EliminationOrder>(greedy_elimination_order(b.sub.problem));
    const std::vector<double> ends = weighted_minima(b.sub.problem, *b.order, {{1, 0}, {0, 1}});
    b.fastest = ends[0];
    b.smallest = ends[1];
    fastest = branches.empty() ? b.fastest : std::min(fastest, b.fastest);
    smallest = branches.empty() ? b.smallest : std::min(smallest, b.smallest);
    branches.push_back(std::move(b));
    size_t i = nodes.size();
    while (i > 0 && ++at[i - 1] == problem.num_configs(nodes[i - 1])) at[--i] = 0;
    if (i == 0) break;
  }
  // The branches holding the fastest or the smallest strategy first, then the others fastest
  // first: the points found early prove most of the rest beaten, unsolved.
  std::vector<size_t> sequence(branches.size());
  for (size_t i = 0; i < sequence.size(); ++i) sequence[i] = i;
  const auto leads = [&](const Branch& b) { return b.fastest <= fastest || b.smallest <= smallest; };
  std::stable_sort(sequence.begin(), sequence.end(), [&](size_t x, size_t y) {
    const bool lx = leads(branches[x]), ly = leads(branches[y]);
    if (lx != ly) return lx;
    return branches[x].fastest < branches[y].fastest;
  });
  int done = 0;
  for (size_t index : sequence) {
    Branch& b = branches[index];
    if (every_strategy_beaten(b.sub.problem, *b.order, known, options.epsilon)) {
      ++out.stats.branches_left_out;
      continue;
    }
    FtOptions opt = options;
    opt.order = b.order;
    opt.bounds = nullptr;  // FT finds the branch's own when it has known costs
    opt.known = known;
    if (options.progress) {
      opt.progress = [&, done](const FtProgress& p) {
        FtProgress q = p;
        q.eliminated = done * p.total + p.eliminated;
        q.total = static_cast<int>(branches.size()) * p.total;
        q.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        options.progress(q);
      };
    }
    ++done;
    opt.max_points_built = points_left(options, out.stats.points_built);
    FtResult r = solve_ft(b.sub.problem, opt);
    accumulate(out.stats, r.stats);
    ++out.stats.branches;
    for (FrontierPoint& p : r.points) {
      known.push_back(p.cost);
      for (size_t v = 0; v < b.sub.keep.size(); ++v) p.assignment[v] = b.sub.keep[v][static_cast<size_t>(p.assignment[v])];
      all.push_back(std::move(p));
    }
  }
  out.points = pareto_merge(std::move(all));  // of equal costs, the earliest solved branch's point
  out.stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace tensoropt::planner
