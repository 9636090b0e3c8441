// Frontier construction, invariant checks and the sum/union/epsilon algebra.
#include "planner/ft/frontier.h"

#include <algorithm>
#include <bit>
#include <cstdint>
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

Frontier minkowski_sum(const Frontier& a, const Frontier& b, const HandleCombiner& combine) {
  const SumTerm term{a.points(), b.points()};
  thread_local std::vector<SumChoice> chosen;
  union_of_sums({&term, 1}, chosen);
  std::vector<Frontier::Point> kept;
  kept.reserve(chosen.size());
  for (const SumChoice& c : chosen) {
    kept.push_back({c.cost, combine ? combine(a.points()[c.i].handle, b.points()[c.j].handle) : kNoHandle});
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

Coverage coverage(std::span<const Frontier::Point> a, std::span<const Frontier::Point> b) {
  if (b.empty()) return Coverage::kStrict;
  if (a.empty()) return Coverage::kNone;
  // Necessary: b's fastest point needs an a point no slower, b's smallest one no bigger.
  if (a.front().cost.time > b.front().cost.time || a.back().cost.memory > b.back().cost.memory) {
    return Coverage::kNone;
  }
  // For each b point the a point of least memory among those no slower is the last one with
  // time <= its time (any other no slower has more memory, so if that one has q's cost, no
  // point of another cost dominates q); both sides ascend in time, so one pointer walks a.
  bool strict = true;
  size_t i = 0;
  for (const Frontier::Point& q : b) {
    while (i + 1 < a.size() && a[i + 1].cost.time <= q.cost.time) ++i;
    if (a[i].cost.memory > q.cost.memory) return Coverage::kNone;
    strict = strict && !(a[i].cost == q.cost);
  }
  return strict ? Coverage::kStrict : Coverage::kWeak;
}

namespace {

// The first p in [from, n) for which `holds` is true, or n, where `holds` is false then true along
// [from, n) (monotone): a gallop from `from` finds it in O(log distance), usually one probe.
template <typename Pred>
size_t first_true(size_t n, size_t from, const Pred& holds) {
  if (from >= n) return n;
  if (holds(from)) return from;
  size_t bad = from;  // known to fail
  size_t step = 1;
  size_t probe = n;
  while (true) {
    probe = bad + step;
    if (probe >= n) {
      probe = n;
      break;
    }
    if (holds(probe)) break;
    bad = probe;
    step *= 2;
  }
  size_t lo = bad + 1;
  size_t hi = probe;  // the answer lies in [lo, hi]; hi == n stands for none
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (holds(mid)) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo;
}

// The first p in [from, n) with base + points[p].memory < bound, or n. Along a frontier memory
// descends, so the test is monotone in p (rounding included).
size_t first_below(const Frontier::Point* points, size_t n, size_t from, double base, double bound) {
  return first_true(n, from, [&](size_t p) { return base + points[p].cost.memory < bound; });
}

// The first position p >= from of the list a + longer[p] that the leader list l + longer[q] does
// not beat: no q with (l + longer[q]).time <= (a + longer[p]).time and memory below it (or equal
// at a lower time). Such sums can never be kept: the leader's sum leaves the heap first and keeps
// the best memory at or below its own (or it was skipped for a bound already below it), so
// skipping them changes nothing but the work. q starts at the leader's last kept position (a time
// no later than any sum still to leave the heap) and only moves forward. Positions searched must
// also stay below `bound`, as first_below's.
size_t past_leader(Cost a, const Frontier::Point* longer, size_t n, size_t from, Cost l, const Frontier::Point* lead, size_t ln, size_t q, double bound) {
  size_t p = from;
  while (p < n) {
    const Cost sp = a + longer[p].cost;
    // The last q with l + lead[q] no slower than sp (times ascend along the list).
    if ((l + lead[q].cost).time > sp.time) return p;
    q = first_true(ln, q + 1, [&](size_t k) { return (l + lead[k].cost).time > sp.time; }) - 1;
    const Cost sq = l + lead[q].cost;
    if (!(sq.memory < sp.memory || (sq.memory == sp.memory && sq.time < sp.time))) return p;
    p = first_below(longer, n, p + 1, a.memory, std::min(bound, sq.memory));
  }
  return p;
}

// A sum waiting in union_of_sums' heap, ordered by (time, memory, term, i, j): unique keys, so
// the order in which sums leave the heap does not depend on the heap's layout. `key` is the time
// as an order-preserving integer (costs are finite), so the usual comparison is one integer
// compare and only equal times look further.
struct Head {
  uint64_t key;
  Cost cost;
  uint32_t term, i, j;
};

uint64_t time_key(double t) {
  const uint64_t bits = std::bit_cast<uint64_t>(t + 0.0);  // -0.0 + 0.0 is +0.0
  return bits >> 63 ? ~bits : bits | (uint64_t{1} << 63);
}

Head make_head(Cost cost, uint32_t term, uint32_t i, uint32_t j) { return {time_key(cost.time), cost, term, i, j}; }

bool earlier(const Head& x, const Head& y) {
  if (x.key != y.key) return x.key < y.key;
  if (x.cost.memory != y.cost.memory) return x.cost.memory < y.cost.memory;
  if (x.term != y.term) return x.term < y.term;
  return x.i != y.i ? x.i < y.i : x.j < y.j;
}

// Binary min-heap on earlier() of slots into `heads` (one per started list, updated in place):
// sifting moves 4-byte slots, not heads. replace_top re-sifts the top after its head changed.
class HeadHeap {
 public:
  void clear() {
    heads_.clear();
    h_.clear();
  }
  bool empty() const { return h_.empty(); }
  const Head& top() const { return heads_[h_.front()]; }
  void push(const Head& x) {
    const uint32_t slot = static_cast<uint32_t>(heads_.size());
    heads_.push_back(x);
    size_t i = h_.size();
    h_.push_back(slot);
    while (i > 0) {
      const size_t parent = (i - 1) / 2;
      if (!earlier(x, heads_[h_[parent]])) break;
      h_[i] = h_[parent];
      i = parent;
    }
    h_[i] = slot;
  }
  void pop() {
    const uint32_t last = h_.back();
    h_.pop_back();
    if (!h_.empty()) sift_down(last);
  }
  void replace_top(const Head& x) {
    heads_[h_.front()] = x;
    sift_down(h_.front());
  }

 private:
  void sift_down(uint32_t slot) {
    const Head& x = heads_[slot];
    const size_t n = h_.size();
    size_t i = 0;
    while (true) {
      size_t child = 2 * i + 1;
      if (child >= n) break;
      if (child + 1 < n) child += earlier(heads_[h_[child + 1]], heads_[h_[child]]);
      if (!earlier(heads_[h_[child]], x)) break;
      h_[i] = h_[child];
      i = child;
    }
    h_[i] = slot;
  }
  std::vector<Head> heads_;
  std::vector<uint32_t> h_;
};

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
// it is weakly dominated by a kept point. The list that made the last kept sum (the leader) also
// moves the others on before they re-enter the heap: a position whose sum one of the leader's
// later sums beats (past_leader) is skipped, so lists that trail the leader for a stretch cost a
// gallop instead of a heap pop per position (GPT-2 XL's factors: from 12 pops per kept sum to 3).
namespace {

// The least memory a sum of time >= t may have without being above the ceiling; t must not
// decrease between calls (sums leave union_of_sums' heap in time order).
class CeilingWalk {
 public:
  explicit CeilingWalk(const SumCeiling& c) : c_(c) {}
  double memory_at(double t) {
    while (next_ < c_.points.size() && c_.time_scale * c_.points[next_].time + c_.time_shift <= t) {
      memory_ = c_.memory_scale * c_.points[next_].memory + c_.memory_shift;
      ++next_;
    }
    return memory_;
  }

 private:
  const SumCeiling& c_;
  size_t next_ = 0;
  double memory_ = std::numeric_limits<double>::infinity();
};

}  // namespace

void union_of_sums(std::span<const SumTerm> terms, std::vector<SumChoice>& out, const SumCeiling& ceiling) {
  constexpr uint32_t kNoLeader = UINT32_MAX;
  struct Side {
    const Frontier::Point* shorter;
    const Frontier::Point* longer;
    uint32_t n_short, n_long;
    bool a_short;
  };
  thread_local std::vector<Side> sides;
  thread_local HeadHeap heap;
  out.clear();
  sides.clear();
  heap.clear();
  double best = std::numeric_limits<double>::infinity();
  CeilingWalk walk(ceiling);
  double bound = best;  // min(best, the ceiling's memory at the last sum's time)
  // The leader: the term, list and position of the last kept sum.
  struct Leader {
    uint32_t term = kNoLeader, list = 0, pos = 0;
  } lead;
  const auto offer = [&](const Head& h) {  // h leaves the heap
    bound = std::min(best, walk.memory_at(h.cost.time));
    if (h.cost.memory < bound) {
      best = h.cost.memory;
      if (!out.empty() && out.back().cost.time == h.cost.time) out.pop_back();
      out.push_back({h.cost, h.term, h.i, h.j});
      bound = best;
      if (!sides.empty()) {
        const Side& s = sides[h.term];
        lead = {h.term, s.a_short ? h.i : h.j, s.a_short ? h.j : h.i};
      }
    }
  };
  if (std::all_of(terms.begin(), terms.end(), [](const SumTerm& t) { return t.a.size() == 1 && t.b.size() == 1; })) {
    // Every term one sum (common: node and edge costs): they leave the heap in sorted order.
    thread_local std::vector<Head> singles;
    singles.clear();
    for (size_t t = 0; t < terms.size(); ++t) {
      singles.push_back(make_head(terms[t].a[0].cost + terms[t].b[0].cost, static_cast<uint32_t>(t), 0, 0));
    }
    std::sort(singles.begin(), singles.end(), earlier);
    for (const Head& h : singles) offer(h);
    return;
  }
  const auto head = [&](uint32_t term, size_t list, size_t pos) {
    const Side& s = sides[term];
    const uint32_t l = static_cast<uint32_t>(list);
    const uint32_t p = static_cast<uint32_t>(pos);
    if (s.a_short) return make_head(s.shorter[list].cost + s.longer[pos].cost, term, l, p);
    return make_head(s.longer[pos].cost + s.shorter[list].cost, term, p, l);
  };
  for (const SumTerm& t : terms) {
    const bool a_short = t.a.size() <= t.b.size();
    const auto& sh = a_short ? t.a : t.b;
    const auto& lo = a_short ? t.b : t.a;
    sides.push_back({sh.data(), lo.data(), static_cast<uint32_t>(sh.size()),
                     static_cast<uint32_t>(lo.size()), a_short});
  }
  for (size_t t = 0; t < sides.size(); ++t) {
    if (sides[t].n_short > 0) heap.push(head(static_cast<uint32_t>(t), 0, 0));
  }
  while (!heap.empty()) {
    const Head h = heap.top();
    offer(h);
    const Side& s = sides[h.term];
    const size_t list = s.a_short ? h.i : h.j;
    const size_t pos = s.a_short ? h.j : h.i;
    size_t next_pos = first_below(s.longer, s.n_long, pos + 1, s.shorter[list].cost.memory, bound);
    if (lead.term != kNoLeader && !(lead.term == h.term && lead.list == list) && next_pos < s.n_long) {
      const Side& ls = sides[lead.term];
      next_pos = past_leader(s.shorter[list].cost, s.longer, s.n_long, next_pos, ls.shorter[lead.list].cost, ls.longer,
                             ls.n_long, lead.pos, bound);
    }
    if (next_pos < s.n_long) {
      heap.replace_top(head(h.term, list, next_pos));
    } else {
      heap.pop();
    }
    if (pos == 0) {
      const size_t next_list = first_below(s.shorter, s.n_short, list + 1,
                                           s.longer[s.n_long - 1].cost.memory, bound);
      if (next_list < s.n_short) heap.push(head(h.term, next_list, 0));
    }
  }
}

Frontier epsilon_prune(const Frontier& f, double delta) {
  if (!(delta >= 0)) throw std::invalid_argument("epsilon_prune: delta must be >= 0");
  if (delta == 0) return f;
  return Frontier::from_sorted(epsilon_thin(f.points(), delta));
}

}  // namespace tensoropt::planner
