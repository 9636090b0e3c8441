// Frontier construction, invariant checks and the sum/union/epsilon algebra.
#include "planner/frontier.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>

namespace tensoropt::planner {
namespace {

bool cost_less(Cost a, Cost b) {
  return a.time < b.time || (a.time == b.time && a.memory < b.memory);
}

// Sorted by (time, memory) with ties in input order: keeps each point whose memory is strictly
// below every point kept before it. One linear pass.
std::vector<Frontier::Point> prune_sorted(const std::vector<Frontier::Point>& sorted) {
  std::vector<Frontier::Point> kept;
  double best_memory = std::numeric_limits<double>::infinity();
  for (const Frontier::Point& p : sorted) {
    if (p.cost.memory < best_memory) {
      kept.push_back(p);
      best_memory = p.cost.memory;
    }
  }
  return kept;
}

void check_not_nan(const std::vector<Frontier::Point>& points) {
  for (size_t i = 0; i < points.size(); ++i) {
    if (std::isnan(points[i].cost.time) || std::isnan(points[i].cost.memory)) {
      throw std::invalid_argument("frontier: point " + std::to_string(i) + " has a NaN cost");
    }
  }
}

}  // namespace

Frontier Frontier::zero(Handle handle) { return Frontier({Point{Cost{0, 0}, handle}}); }

Frontier Frontier::from_points(std::vector<Point> raw) {
  check_not_nan(raw);
  std::stable_sort(raw.begin(), raw.end(),
                   [](const Point& a, const Point& b) { return cost_less(a.cost, b.cost); });
  return Frontier(prune_sorted(raw));
}

Frontier Frontier::from_sorted(std::vector<Point> sorted) {
  check_not_nan(sorted);
  for (size_t i = 1; i < sorted.size(); ++i) {
    const Cost prev = sorted[i - 1].cost;
    const Cost cur = sorted[i].cost;
    if (!(prev.time < cur.time && prev.memory > cur.memory)) {
      throw std::invalid_argument("frontier: point " + std::to_string(i) +
                                  " breaks the invariant (time strictly ascending, memory "
                                  "strictly descending)");
    }
  }
  return Frontier(std::move(sorted));
}

std::string Frontier::to_string() const {
  std::string out;
  char buf[64];
  for (const Point& p : points_) {
    std::snprintf(buf, sizeof buf, "(%g,%g)", p.cost.time, p.cost.memory);
    if (!out.empty()) out += ' ';
    out += buf;
  }
  return out;
}

// Both sides sorted by time: the sums a_i + b_j for a fixed index of the shorter side, taken in
// order along the longer side, are sorted too. The shorter side's lists are merged through a heap
// in (time, memory, i, j) order, so the first of equal costs is the one with the lowest (i, j).
// A list only ever offers its next sum whose memory beats the best memory kept so far (found by
// binary search: along a list the summed memory is non-increasing, rounding included), so the
// work follows the points that could survive rather than all |a| * |b| sums. The result equals
// sorting every sum and pruning.
// One side a single point: the other side shifted. Shifting keeps the order; rounding can make
// neighbours' times or memories equal, which the same keep/replace rule as below resolves.
static Frontier shifted(const Frontier& many, const Frontier::Point& one, bool one_is_left, const HandleCombiner& combine) {
  std::vector<Frontier::Point> kept;
  kept.reserve(many.size());
  double best_memory = std::numeric_limits<double>::infinity();
  for (const Frontier::Point& p : many.points()) {
    const Cost c = one_is_left ? one.cost + p.cost : p.cost + one.cost;
    if (!(c.memory < best_memory)) continue;
    best_memory = c.memory;
    if (!kept.empty() && kept.back().cost.time == c.time) kept.pop_back();
    const Handle h = !combine ? kNoHandle : one_is_left ? combine(one.handle, p.handle) : combine(p.handle, one.handle);
    kept.push_back({c, h});
  }
  return Frontier::from_sorted(std::move(kept));
}

Frontier minkowski_sum(const Frontier& a, const Frontier& b, const HandleCombiner& combine) {
  if (a.empty() || b.empty()) return Frontier();
  const auto& pa = a.points();
  const auto& pb = b.points();
  if (pa.size() == 1) return shifted(b, pa[0], true, combine);
  if (pb.size() == 1) return shifted(a, pb[0], false, combine);
  const bool a_short = pa.size() <= pb.size();
  const auto& shorter = a_short ? pa : pb;
  const auto& longer = a_short ? pb : pa;
  struct Head {
    Cost cost;
    uint32_t list;  // index into the shorter side
    uint32_t pos;   // index into the longer side
    uint32_t i, j;  // indices into a and b, for tie-breaking
  };
  const auto later = [](const Head& x, const Head& y) {  // priority_queue keeps the earliest on top
    if (cost_less(y.cost, x.cost)) return true;
    if (cost_less(x.cost, y.cost)) return false;
    return x.i != y.i ? x.i > y.i : x.j > y.j;
  };
  const auto head = [&](size_t list, size_t pos) {
    const Head h{shorter[list].cost + longer[pos].cost, static_cast<uint32_t>(list),
                 static_cast<uint32_t>(pos), 0, 0};
    Head out = h;
    out.i = a_short ? h.list : h.pos;
    out.j = a_short ? h.pos : h.list;
    return out;
  };
  std::vector<Head> heap;
  heap.reserve(shorter.size());
  for (size_t list = 0; list < shorter.size(); ++list) heap.push_back(head(list, 0));
  std::make_heap(heap.begin(), heap.end(), later);

  std::vector<Frontier::Point> kept;
  double best_memory = std::numeric_limits<double>::infinity();
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    const Head h = heap.back();
    heap.pop_back();
    if (h.cost.memory < best_memory) {
      best_memory = h.cost.memory;
      const Handle handle = combine ? combine(pa[h.i].handle, pb[h.j].handle) : kNoHandle;
      // Sums that differ by less than an ulp of time round to equal times, and a list offers its
      // next sum only after the previous one was taken: the later, lower-memory sum of equal time
      // dominates the kept one and replaces it.
      if (!kept.empty() && kept.back().cost.time == h.cost.time) kept.pop_back();
      kept.push_back({h.cost, handle});
    }
    // Next position along this list whose sum has memory below best_memory.
    const double base = shorter[h.list].cost.memory;
    size_t lo = h.pos + 1;
    size_t hi = longer.size();
    while (lo < hi) {
      const size_t mid = lo + (hi - lo) / 2;
      if (base + longer[mid].cost.memory < best_memory) {
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    if (lo < longer.size()) {
      heap.push_back(head(h.list, lo));
      std::push_heap(heap.begin(), heap.end(), later);
    }
  }
  return Frontier::from_sorted(std::move(kept));
}

Frontier pareto_union(const Frontier& a, const Frontier& b) {
  std::vector<Frontier::Point> merged;
  merged.reserve(a.size() + b.size());
  // std::merge takes from the first range on equivalent keys: a's point wins a tie.
  std::merge(a.points().begin(), a.points().end(), b.points().begin(), b.points().end(),
             std::back_inserter(merged), [](const Frontier::Point& x, const Frontier::Point& y) {
               return cost_less(x.cost, y.cost);
             });
  return Frontier::from_sorted(prune_sorted(merged));
}

bool covers(const Frontier& a, const Frontier& b, bool strict) {
  const auto& pa = a.points();
  const auto& pb = b.points();
  if (pb.empty()) return true;
  if (pa.empty()) return false;
  // Necessary: b's fastest point needs an a point no slower, b's smallest one no bigger.
  if (pa.front().cost.time > pb.front().cost.time || pa.back().cost.memory > pb.back().cost.memory) {
    return false;
  }
  // For each b point the a point of least memory among those no slower is the last one with
  // time <= its time (any other no slower has more memory, so if that one has q's cost, no
  // point of another cost dominates q); both sides ascend in time, so one pointer walks a.
  size_t i = 0;
  for (const Frontier::Point& q : pb) {
    while (i + 1 < pa.size() && pa[i + 1].cost.time <= q.cost.time) ++i;
    if (pa[i].cost.memory > q.cost.memory || (strict && pa[i].cost == q.cost)) return false;
  }
  return true;
}

namespace {

// The first p in [from, n) with base + points[p].memory < bound, or n. Along a frontier memory
// descends, so the test is monotone in p (rounding included); a gallop from `from` finds the
// answer in O(log distance), usually one probe.
size_t first_below(const Frontier::Point* points, size_t n, size_t from, double base, double bound) {
  if (from >= n) return n;
  if (base + points[from].cost.memory < bound) return from;
  size_t bad = from;  // known to fail
  size_t step = 1;
  size_t probe = n;
  while (true) {
    probe = bad + step;
    if (probe >= n) {
      probe = n;
      break;
    }
    if (base + points[probe].cost.memory < bound) break;
    bad = probe;
    step *= 2;
  }
  size_t lo = bad + 1;
  size_t hi = probe;  // the answer lies in [lo, hi]; hi == n stands for none
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (base + points[mid].cost.memory < bound) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo;
}

}  // namespace

// Per term the sums form lists: for each point of the shorter side (a "list"), the sums with the
// longer side's points in order ("positions"); along a list time ascends and memory descends
// (weakly, after rounding), and the lists' first sums ascend in time too. One heap holds each
// started list's next sum plus, per term, the first sum of its next list, so sums come out in
// non-decreasing time and a list costs nothing until its first sum is due. A popped sum is kept
// if its memory beats the best kept (replacing a kept point of equal time, which it dominates);
// then its list moves to the next position that could still beat the best, and, if it was its
// list's first sum, the next list that could (its memory at the longer side's last point beats
// the best) is queued. Every sum skipped has time >= the popped one and memory >= the best, so
// it is weakly dominated by a kept point.
void union_of_sums(std::span<const SumTerm> terms, std::vector<SumChoice>& out) {
  struct Side {
    const Frontier::Point* shorter;
    const Frontier::Point* longer;
    uint32_t n_short, n_long;
    bool a_short;
  };
  struct Head {
    Cost cost;
    uint32_t term, i, j;
  };
  thread_local std::vector<Side> sides;
  thread_local std::vector<Head> heap;
  out.clear();
  sides.clear();
  heap.clear();
  const auto later = [](const Head& x, const Head& y) {  // the heap keeps the earliest on top
    if (x.cost.time != y.cost.time) return x.cost.time > y.cost.time;
    if (x.cost.memory != y.cost.memory) return x.cost.memory > y.cost.memory;
    if (x.term != y.term) return x.term > y.term;
    return x.i != y.i ? x.i > y.i : x.j > y.j;
  };
  const auto push = [&](uint32_t term, size_t list, size_t pos) {
    const Side& s = sides[term];
    const Cost c = s.a_short ? s.shorter[list].cost + s.longer[pos].cost
                             : s.longer[pos].cost + s.shorter[list].cost;
    const uint32_t l = static_cast<uint32_t>(list);
    const uint32_t p = static_cast<uint32_t>(pos);
    heap.push_back({c, term, s.a_short ? l : p, s.a_short ? p : l});
    std::push_heap(heap.begin(), heap.end(), later);
  };
  for (const SumTerm& t : terms) {
    const bool a_short = t.a.size() <= t.b.size();
    const auto& sh = a_short ? t.a : t.b;
    const auto& lo = a_short ? t.b : t.a;
    sides.push_back({sh.data(), lo.data(), static_cast<uint32_t>(sh.size()),
                     static_cast<uint32_t>(lo.size()), a_short});
  }
  for (size_t t = 0; t < sides.size(); ++t) {
    if (sides[t].n_short > 0) push(static_cast<uint32_t>(t), 0, 0);
  }
  double best = std::numeric_limits<double>::infinity();
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    const Head h = heap.back();
    heap.pop_back();
    if (h.cost.memory < best) {
      best = h.cost.memory;
      if (!out.empty() && out.back().cost.time == h.cost.time) out.pop_back();
      out.push_back({h.cost, h.term, h.i, h.j});
    }
    const Side& s = sides[h.term];
    const size_t list = s.a_short ? h.i : h.j;
    const size_t pos = s.a_short ? h.j : h.i;
    if (pos == 0) {
      const size_t next = first_below(s.shorter, s.n_short, list + 1,
                                      s.longer[s.n_long - 1].cost.memory, best);
      if (next < s.n_short) push(h.term, next, 0);
    }
    const size_t next = first_below(s.longer, s.n_long, pos + 1, s.shorter[list].cost.memory, best);
    if (next < s.n_long) push(h.term, list, next);
  }
}

Frontier epsilon_prune(const Frontier& f, double delta) {
  if (!(delta >= 0)) throw std::invalid_argument("epsilon_prune: delta must be >= 0");
  if (delta == 0) return f;
  std::vector<Frontier::Point> kept;
  for (const Frontier::Point& p : f.points()) {
    if (kept.empty() || kept.back().cost.memory > (1 + delta) * p.cost.memory) kept.push_back(p);
  }
  return Frontier::from_sorted(std::move(kept));
}

}  // namespace tensoropt::planner
