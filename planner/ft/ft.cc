// FT by variable elimination over frontier-valued factors; see ft.h for the contract.
#include "planner/ft/ft.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <numeric>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>

#include "planner/ft/elimination_order.h"
#include "planner/ft/ft_bounds.h"
#include "planner/ft/ft_step.h"
#include "planner/ft/thread_pool.h"
#include "planner/ft/provenance.h"
#include "planner/ft/step_memo.h"

// The engine's invariants: a violation is a bug here. It throws std::logic_error with the file and
// line (the engine knows nothing of the project's error types; callers report it as internal).
#define FT_CHECK(cond)                                                                                          \
  do {                                                                                                          \
    if (!(cond)) throw std::logic_error(std::string(__FILE__ ":") + std::to_string(__LINE__) + ": check failed: " #cond); \
  } while (0)

namespace tensoropt::planner {
namespace {

using namespace ft_detail;

class Eliminator {
 public:
  Eliminator(const Problem& problem, const FtOptions& options)
      : problem_(problem), options_(options), start_(std::chrono::steady_clock::now()) {
    threads_ = options.threads > 0 ? options.threads
                                   : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }

  FtResult run() {
    // A given order's scopes, width and depth are recomputed from its sequence of nodes (cheap
    // beside choosing it), so neither the factors nor the epsilon guarantee rest on them.
    const EliminationOrder order = options_.order ? elimination_order_of(problem_, options_.order->order)
                                                  : greedy_elimination_order(problem_);
    if (options_.order && order.scopes != options_.order->scopes) {
      throw std::invalid_argument("FT: the elimination order given does not have this problem's scopes");
    }
    stats_.width = order.width;
    stats_.depth = order.depth;
    if (options_.epsilon > 0 && order.depth > 0) {
      delta_ = std::pow(1 + options_.epsilon, 1.0 / order.depth) - 1;
    }
    stats_.delta = delta_;
    if (!options_.known.empty()) known_ = std::make_unique<KnownCosts>(problem_, order, options_.known, options_.epsilon, options_.bounds);
    add_initial_factors();
    for (size_t step = 0; step < order.order.size(); ++step) {
      step_ = step;
      eliminate(order.order[step], order.scopes[step]);
      if (options_.max_points_built > 0 && stats_.points_built > options_.max_points_built) {
        throw FtWorkLimit("FT: " + std::to_string(stats_.points_built) + " points built after " + std::to_string(step + 1) +
                          " of " + std::to_string(order.order.size()) + " eliminations, above max_points_built = " +
                          std::to_string(options_.max_points_built));
      }
      maybe_compact();
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

  // The provenance of points no live factor holds is dropped (provenance.h compact()) once the
  // arena has doubled since the last compaction and holds options.compact_records: a factor's
  // points are the only handles kept from one step to the next.
  void maybe_compact() {
    if (arena_.size() < std::max(options_.compact_records, 2 * compacted_size_)) return;
    arena_.compact([this](const auto& fn) {
      for (Factor& f : factors_)
        for (Frontier::Point& p : f.points) fn(p.handle);
    });
    compacted_size_ = arena_.size();
  }

  Handle combine(Handle left, Handle right) {
    if (left == kNoHandle) return right;
    if (right == kNoHandle) return left;
    return arena_.add_sum(left, right);
  }

  // Throws FtMemoryLimit when the factors, the provenance and `building` (bytes of a factor not
  // yet added) pass options.max_bytes.
  void check_memory(int64_t building) const {
    const int64_t held = live_bytes_ + arena_.bytes() + building;
    if (options_.max_bytes > 0 && held > options_.max_bytes) {
      throw FtMemoryLimit("FT: the working set reached " + std::to_string(held) + " bytes, above max_bytes = " +
                          std::to_string(options_.max_bytes));
    }
  }

  void add_factor(Factor f) {
    live_bytes_ += f.bytes();
    stats_.peak_bytes = std::max(stats_.peak_bytes, live_bytes_ + arena_.bytes());
    stats_.largest_factor_entries =
        std::max(stats_.largest_factor_entries, static_cast<int64_t>(f.entries()));
    stats_.largest_factor_points =
        std::max(stats_.largest_factor_points, static_cast<int64_t>(f.points.size()));
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
      f.start.push_back(0);
      for (Cost c : problem_.node_cost[static_cast<size_t>(v)]) {
        f.points.push_back({c, kNoHandle});
        f.start.push_back(static_cast<int64_t>(f.points.size()));
      }
      add_factor(std::move(f));
    }
    for (const Problem::Edge& e : problem_.edges) {
      Factor f;
      f.scope = {std::min(e.u, e.v), std::max(e.u, e.v)};
      f.stride = row_major_strides(problem_, f.scope);
      for (Cost c : costs_by_sorted_nodes(problem_, e)) f.points.push_back({c, kNoHandle});
      f.start.resize(f.points.size() + 1);
      for (size_t i = 0; i < f.start.size(); ++i) f.start[i] = static_cast<int64_t>(i);
      add_factor(std::move(f));
    }
  }

  void refuse(const Step& st, double entries, int64_t points) const {
    throw std::length_error(
        "FT: eliminating node " + std::to_string(st.x) + " builds a factor over " +
        std::to_string(st.scope.size()) + " nodes with " + std::to_string(static_cast<int64_t>(entries)) +
        " entries" + (points > 0 ? " holding at least " + std::to_string(points) + " points" : "") +
        ", above max_factor_points = " + std::to_string(options_.max_factor_points) +
        " (the elimination order has width " + std::to_string(stats_.width) + ")");
  }

  void eliminate(int x, const std::vector<int>& scope) {
    Step st;
    st.x = x;
    st.kx = static_cast<size_t>(problem_.num_configs(x));
    st.scope = scope;
    std::vector<int> consumed;
    std::vector<int> held;  // the consumed factors' scopes less x: the order's scope
    for (int id : by_node_[static_cast<size_t>(x)]) {
      const Factor& f = factors_[static_cast<size_t>(id)];
      if (!f.live) continue;
      consumed.push_back(id);
      for (int v : f.scope)
        if (v != x) held.push_back(v);
    }
    std::sort(held.begin(), held.end());
    held.erase(std::unique(held.begin(), held.end()), held.end());
    FT_CHECK(!consumed.empty() && held == scope);
    // Smallest frontiers first: the prefix folds shared between entries stay small and the big
    // factor is the last cell, whose sums union_of_sums visits lazily.
    std::stable_sort(consumed.begin(), consumed.end(), [&](int a, int b) {
      return factors_[static_cast<size_t>(a)].points.size() < factors_[static_cast<size_t>(b)].points.size();
    });
    const double entries = scope_entries(problem_, scope);
    if (entries > static_cast<double>(options_.max_factor_points)) refuse(st, entries, 0);
    layout(st, consumed);
    // Set st.replay, or st.record (owned by `recording`) when this step's content came up before.
    std::unique_ptr<StepRecord> recording;
    uint64_t content_hash = 0;
    if (options_.reuse) recording = find_or_start_record(st, content_hash);
    if (st.replay) {
      ++stats_.replayed_steps;
      replay_share(st);
    } else {
      share(st);
      if (recording && st.prefix.size() > static_cast<size_t>(INT32_MAX)) {  // positions are 32-bit
        recording.reset();
        st.record = nullptr;
      }
      if (recording) {
        for (const Frontier::Point& p : st.prefix) recording->prefix_costs.push_back(p.cost);
        recording->prefix_begin = st.prefix_begin;
        recording->prefix_end = st.prefix_end;
      }
    }

    Factor out;
    out.scope = scope;
    out.stride = row_major_strides(problem_, scope);
    out.start.assign(1, 0);
    stats_.entry_evaluations += static_cast<int64_t>(entries) * static_cast<int64_t>(st.kx);
    out.points = take_buffer();
    build_entries(st, static_cast<size_t>(entries), out);
    stats_.points_built += static_cast<int64_t>(out.points.size());
    if (recording) {
      recording->shrink();
      live_bytes_ += recording->bytes();
      records_.keep(content_hash, std::move(recording));
    }
    add_factor(std::move(out));
    for (int id : consumed) {
      Factor& f = factors_[static_cast<size_t>(id)];
      live_bytes_ -= f.bytes();
      give_buffer(std::move(f.points));
      f = Factor{};
      f.live = false;
    }
    give_buffer(std::move(st.prefix));
    scratch_.clear();
    memo_.clear();
  }

  // Point buffers of dead factors, kept (a few, the largest) for the next ones: growing fresh
  // memory costs page faults. Their capacity counts as held memory.
  std::vector<Frontier::Point> take_buffer() {
    if (spare_.empty()) return {};
    std::vector<Frontier::Point> b = std::move(spare_.back());
    spare_.pop_back();
    live_bytes_ -= static_cast<int64_t>(b.capacity() * sizeof(Frontier::Point));
    b.clear();
    return b;
  }
  void give_buffer(std::vector<Frontier::Point> b) {
    if (b.capacity() < 4096) return;
    live_bytes_ += static_cast<int64_t>(b.capacity() * sizeof(Frontier::Point));
    spare_.push_back(std::move(b));
    std::sort(spare_.begin(), spare_.end(), [](const auto& x, const auto& y) { return x.capacity() < y.capacity(); });
    if (spare_.size() > 4) {
      live_bytes_ -= static_cast<int64_t>(spare_.front().capacity() * sizeof(Frontier::Point));
      spare_.erase(spare_.begin());
    }
  }

  // Where each consumed factor's cells are, relative to the new scope and to x.
  void layout(Step& st, const std::vector<int>& consumed) const {
    const size_t m = consumed.size();
    st.stride_of.assign(m, std::vector<int64_t>(st.scope.size(), 0));
    st.stride_x.assign(m, -1);
    for (size_t j = 0; j < m; ++j) {
      const Factor& f = factors_[static_cast<size_t>(consumed[j])];
      st.cells.push_back(&f);
      for (size_t p = 0; p < f.scope.size(); ++p) {
        if (f.scope[p] == st.x) {
          st.stride_x[j] = f.stride[p];
          continue;
        }
        const auto it = std::lower_bound(st.scope.begin(), st.scope.end(), f.scope[p]);
        FT_CHECK(it != st.scope.end() && *it == f.scope[p]);
        st.stride_of[j][static_cast<size_t>(it - st.scope.begin())] = f.stride[p];
      }
      FT_CHECK(st.stride_x[j] >= 0);
    }
    st.split = std::max<size_t>(1, m - 1);
    std::vector<bool> in_prefix(st.scope.size(), false);
    std::vector<bool> in_last(st.scope.size(), false);
    for (size_t p = 0; p < st.scope.size(); ++p) {
      for (size_t j = 0; j < st.split; ++j) in_prefix[p] = in_prefix[p] || st.stride_of[j][p] != 0;
      in_last[p] = m >= 2 && st.stride_of[m - 1][p] != 0;
    }
    st.prefix_group = Group(problem_, st.scope, in_prefix);
    st.last_group = Group(problem_, st.scope, in_last);
    st.prune = st.kx >= 2 && st.kx <= 64;
  }

  // Builds what entries share: every prefix fold (its sums' handle pairs recorded in scratch_,
  // handles <= -2 indexing it) and the cover masks, in one pass over the entries in order.
  void share(Step& st) {
    const size_t kx = st.kx;
    const size_t m = st.cells.size();
    std::vector<char> prefix_done(static_cast<size_t>(st.prefix_group.count), 0);
    std::vector<char> last_done(static_cast<size_t>(st.last_group.count), 0);
    if (st.prune) {
      st.prefix_cover.resize(prefix_done.size() * kx);
      st.last_cover.resize(last_done.size() * kx);
    }
    if (st.split >= 2) {
      st.prefix = take_buffer();
      st.prefix_begin.resize(prefix_done.size() * kx);
      st.prefix_end.resize(prefix_done.size() * kx);
    }
    std::vector<int> digit(st.scope.size(), 0);
    std::vector<int64_t> offset(m);
    std::vector<Points> group(kx);
    std::vector<Frontier::Point> acc, next;
    // When recording, each fold point's points of the cells folded so far (j + 1 after cell j).
    std::vector<int32_t> acc_tuple, next_tuple;
    const auto extend = [&](const std::vector<int32_t>& from, size_t width, std::vector<int32_t>& to) {
      for (const SumChoice& c : chosen_) {
        to.insert(to.end(), from.begin() + static_cast<std::ptrdiff_t>(c.i * width),
                  from.begin() + static_cast<std::ptrdiff_t>((c.i + 1) * width));
        to.push_back(static_cast<int32_t>(c.j));
      }
    };
    const size_t entries = count_entries(st);
    for (size_t e = 0; e < entries; ++e) {
      for (size_t j = 0; j < m; ++j) offset[j] = st.offset(j, digit);
      const size_t pa = st.prefix_group.index(digit);
      if (!prefix_done[pa]) {
        prefix_done[pa] = 1;
        for (size_t k = 0; k < kx && st.split >= 2; ++k) {
          const Points first = st.cell(0, offset[0], k);
          acc.assign(first.begin(), first.end());
          if (st.record) {
            acc_tuple.resize(first.size());
            std::iota(acc_tuple.begin(), acc_tuple.end(), 0);
          }
          for (size_t j = 1; j + 1 < st.split; ++j) {
            next.clear();
            fold(acc, st.cell(j, offset[j], k), next);
            std::swap(acc, next);
            if (st.record) {
              next_tuple.clear();
              extend(acc_tuple, j, next_tuple);
              std::swap(acc_tuple, next_tuple);
            }
          }
          st.prefix_begin[pa * kx + k] = static_cast<int64_t>(st.prefix.size());
          fold(acc, st.cell(st.split - 1, offset[st.split - 1], k), st.prefix);
          st.prefix_end[pa * kx + k] = static_cast<int64_t>(st.prefix.size());
          if (st.record) extend(acc_tuple, st.split - 1, st.record->prefix_tuples);
        }
        if (st.prune) {
          for (size_t k = 0; k < kx; ++k) {
            group[k] = st.split >= 2 ? st.prefix_fold(pa * kx + k) : st.cell(0, offset[0], k);
          }
          cover_masks(group, &st.prefix_cover[pa * kx]);
        }
      }
      const size_t la = st.last_group.index(digit);
      if (st.prune && !last_done[la]) {
        last_done[la] = 1;
        for (size_t k = 0; k < kx; ++k) group[k] = m >= 2 ? st.cell(m - 1, offset[m - 1], k) : Points(zero_);
        cover_masks(group, &st.last_cover[la * kx]);
      }
      advance(st.scope, digit);
    }
  }

  // share() for a replayed step: the recorded prefix folds, each point's handle made from this
  // step's own cells (the same pairs as share() records, in a left fold).
  void replay_share(Step& st) {
    const StepRecord& r = *st.replay;
    if (st.split < 2) return;
    const size_t kx = st.kx;
    st.prefix = take_buffer();
    st.prefix.resize(r.prefix_costs.size());
    st.prefix_begin = r.prefix_begin;
    st.prefix_end = r.prefix_end;
    std::vector<char> prefix_done(static_cast<size_t>(st.prefix_group.count), 0);
    std::vector<int> digit(st.scope.size(), 0);
    const size_t entries = count_entries(st);
    for (size_t e = 0; e < entries; ++e, advance(st.scope, digit)) {
      const size_t pa = st.prefix_group.index(digit);
      if (prefix_done[pa]) continue;
      prefix_done[pa] = 1;
      for (size_t k = 0; k < kx; ++k) {
        for (int64_t p = r.prefix_begin[pa * kx + k]; p < r.prefix_end[pa * kx + k]; ++p) {
          const int32_t* tuple = &r.prefix_tuples[static_cast<size_t>(p) * st.split];
          Handle h = st.cell(0, st.offset(0, digit), k)[static_cast<size_t>(tuple[0])].handle;
          for (size_t j = 1; j < st.split; ++j) h = pending(h, st.cell(j, st.offset(j, digit), k)[static_cast<size_t>(tuple[j])].handle);
          st.prefix[static_cast<size_t>(p)] = {r.prefix_costs[static_cast<size_t>(p)], h};
        }
      }
    }
  }

  // Steps whose consumed factors hold at most this many points may be recorded for reuse: the
  // repeated layers of a model; the big factor carried along a chain never repeats.
  static constexpr size_t kRecordPoints = 1 << 15;

  // A step's content (step_memo.h): x's and the scope's configuration counts, then per consumed
  // factor its place in the scope, its entry bounds and every point's cost, bit for bit.
  template <class Fn>
  void visit_content(const Step& st, const Fn& fn) const {
    fn(st.kx);
    fn(st.cells.size());
    fn(st.scope.size());
    for (int v : st.scope) fn(static_cast<uint64_t>(problem_.num_configs(v)));
    for (size_t j = 0; j < st.cells.size(); ++j) {
      const Factor& f = *st.cells[j];
      fn(static_cast<uint64_t>(st.stride_x[j]));
      for (int64_t stride : st.stride_of[j]) fn(static_cast<uint64_t>(stride));
      fn(f.start.size());
      for (int64_t b : f.start) fn(static_cast<uint64_t>(b));
      fn(f.points.size());
      for (const Frontier::Point& p : f.points) {
        fn(std::bit_cast<uint64_t>(p.cost.time));
        fn(std::bit_cast<uint64_t>(p.cost.memory));
      }
    }
  }

  // For a step small enough to keep (kRecordPoints): sets st.replay when an earlier step's record
  // has st's content; else, from the second time the content's hash comes up, returns a new
  // record with that content and sets st.record to it. `hash` gets the content's hash.
  std::unique_ptr<StepRecord> find_or_start_record(Step& st, uint64_t& hash) {
    size_t points = 0;
    for (const Factor* f : st.cells) points += f->points.size();
    if (points > kRecordPoints) return nullptr;
    const auto visit = [&](const auto& fn) { visit_content(st, fn); };
    ContentHash h;
    visit(std::ref(h));
    hash = h.value;
    st.replay = records_.find(hash, visit);
    if (st.replay || !records_.seen_before(hash)) return nullptr;
    auto record = std::make_unique<StepRecord>();
    visit([&](uint64_t word) { record->content.push_back(word); });
    st.record = record.get();
    return record;
  }

  size_t count_entries(const Step& st) const {
    size_t n = 1;
    for (int v : st.scope) n *= static_cast<size_t>(problem_.num_configs(v));
    return n;
  }

  void advance(const std::vector<int>& scope, std::vector<int>& digit) const {
    for (size_t p = scope.size(); p-- > 0;) {  // odometer, last position fastest
      if (++digit[p] < problem_.num_configs(scope[p])) break;
      digit[p] = 0;
    }
  }

  // Appends acc + cell to sum, each kept sum's handle pair recorded in scratch_.
  void fold(Points acc, Points cell, std::vector<Frontier::Point>& sum) {
    const SumTerm term{acc, cell};
    union_of_sums({&term, 1}, chosen_);
    for (const SumChoice& c : chosen_) sum.push_back({c.cost, pending(acc[c.i].handle, cell[c.j].handle)});
  }

  Handle pending(Handle l, Handle r) {
    if (l == kNoHandle) return r;
    if (r == kNoHandle) return l;
    scratch_.push_back({l, r});
    return static_cast<Handle>(-1 - static_cast<Handle>(scratch_.size()));
  }

  // Only the points an entry keeps get provenance records, made once per scratch node (memo_).
  Handle materialize(Handle h) {
    if (h >= kNoHandle) return h;
    const size_t i = static_cast<size_t>(-2 - h);
    if (memo_[i] == kNoHandle) {
      memo_[i] = combine(materialize(scratch_[i].left), materialize(scratch_[i].right));
    }
    return memo_[i];
  }

  // Entries are computed in blocks, in parallel when the step is big enough (each block reads
  // only shared state and writes its own buffer), then given provenance records in entry order,
  // so the result does not depend on the number of threads.
  void build_entries(const Step& st, size_t entries, Factor& out) {
    int64_t work = 0;
    for (const Factor* f : st.cells) work += static_cast<int64_t>(f->points.size());
    work += static_cast<int64_t>(st.prefix.size());
    const size_t threads = work * static_cast<int64_t>(st.kx) >= kParallelWork && entries >= 4
                               ? std::min<size_t>(static_cast<size_t>(threads_), entries / 2) : 1;
    if (threads > 1) ++stats_.parallel_steps;
    const size_t block = std::max<size_t>(1, std::min<size_t>(16, entries / (threads * 4)));
    const size_t batch = threads * block * 8;  // entries computed before their records are made
    std::vector<std::vector<Chosen>> results((batch + block - 1) / block);
    std::vector<std::vector<size_t>> ends(results.size());
    std::vector<Recorded> recorded(st.record ? results.size() : 0);
    memo_.resize(scratch_.size(), kNoHandle);
    for (size_t first = 0; first < entries; first += batch) {
      const size_t last = std::min(entries, first + batch);
      const size_t blocks = (last - first + block - 1) / block;
      parallel_for(blocks, [&](size_t b) {
        const size_t begin = first + b * block;
        compute_block(st, begin, std::min(last, begin + block), results[b], ends[b], st.record ? &recorded[b] : nullptr);
      }, threads);
      if (st.record) {
        for (size_t b = 0; b < blocks; ++b) {
          std::vector<ReplayChoice>& chosen = st.record->chosen;
          const size_t base = chosen.size();
          chosen.insert(chosen.end(), recorded[b].chosen.begin(), recorded[b].chosen.end());
          for (size_t n : recorded[b].ends) st.record->ends.push_back(base + n);
        }
      }
      size_t needed = out.points.size();
      for (size_t b = 0; b < blocks; ++b) needed += results[b].size();
      if (needed > out.points.capacity()) out.points.reserve(std::max(needed, 2 * out.points.capacity()));
      for (size_t b = 0; b < blocks; ++b) {
        size_t at = 0;
        for (size_t end : ends[b]) {
          for (; at < end; ++at) {
            const Chosen& c = results[b][at];
            const Handle rest = materialize(c.prefix);
            out.points.push_back({c.cost, arena_.add_choice(st.x, c.config, rest, c.last)});
          }
          out.start.push_back(static_cast<int64_t>(out.points.size()));
          if (static_cast<int64_t>(out.points.size()) > options_.max_factor_points) {
            refuse(st, static_cast<double>(entries), static_cast<int64_t>(out.points.size()));
          }
        }
      }
      check_memory(out.bytes() + (st.record ? st.record->bytes() : 0));
    }
  }

  static constexpr int64_t kParallelWork = 200'000;
  static constexpr size_t kParallelRebuild = 1'000'000;  // points x nodes worth threads at the end


  // A block's sums as positions, before known-cost pruning, for the step's record.
  struct Recorded {
    std::vector<ReplayChoice> chosen;
    std::vector<size_t> ends;  // [entry of the block]
  };

  // One block of entries [begin, end): for each, the kept sums (out) and where they end (ends),
  // and with `record` the same as positions, before known-cost pruning.
  // Configuration k is left out first when another one, k', covers both its prefix and its last
  // cell (coverage(), frontier.h): every sum of k is then weakly dominated by a sum of k', so the
  // union's costs do not change. To keep the tie rule (of equal costs the lowest k wins) k' must
  // be lower than k or cover one of the two strictly (then every sum of k is strictly dominated).
  // This relation has no cycle (covering both ways means equal frontiers, never strict), so every
  // left-out k has a kept k' covering it.
  void compute_block(const Step& st, size_t begin, size_t end, std::vector<Chosen>& out,
                     std::vector<size_t>& ends, Recorded* record) const {
    const size_t kx = st.kx;
    const size_t m = st.cells.size();
    out.clear();
    ends.clear();
    if (record) {
      record->chosen.clear();
      record->ends.clear();
    }
    if (st.replay) return replay_block(st, begin, end, out, ends);
    std::vector<int> digit = digits_of(st, begin);
    std::vector<int64_t> offset(m);
    std::vector<SumTerm> terms;
    std::vector<int> config;
    std::vector<SumChoice> chosen;
    for (size_t e = begin; e < end; ++e) {
      for (size_t j = 0; j < m; ++j) offset[j] = st.offset(j, digit);
      const size_t pa = st.prefix_group.index(digit);
      const size_t la = st.last_group.index(digit);
      terms.clear();
      config.clear();
      for (size_t k = 0; k < kx; ++k) {
        if (st.prune) {
          const CoverMask& pc = st.prefix_cover[pa * kx + k];
          const CoverMask& lc = st.last_cover[la * kx + k];
          const uint64_t lower = (uint64_t{1} << k) - 1;
          if ((pc.weak & lc.weak & (lower | pc.strict | lc.strict)) != 0) continue;
        }
        const Points prefix = st.split >= 2 ? st.prefix_fold(pa * kx + k) : st.cell(0, offset[0], k);
        const Points last = m >= 2 ? st.cell(m - 1, offset[m - 1], k) : Points(zero_);
        terms.push_back({prefix, last});
        config.push_back(static_cast<int>(k));
      }
      // Known costs prune during the merge (sums surely left out are not searched), except when
      // recording (a replay prunes by its own bounds) or thinning (epsilon_prune sees every sum).
      union_of_sums(terms, chosen, known_ && delta_ == 0 && !record ? known_->ceiling(step_, e) : SumCeiling{});
      if (delta_ > 0) epsilon_filter(chosen);
      if (record) {
        for (const SumChoice& c : chosen) {
          const SumTerm& t = terms[c.term];
          const int64_t prefix = st.split >= 2 ? (t.a.data() - st.prefix.data()) + c.i : c.i;
          record->chosen.push_back({c.cost, config[c.term], static_cast<int32_t>(prefix), static_cast<int32_t>(c.j)});
        }
        record->ends.push_back(record->chosen.size());
      }
      if (known_) {
        std::erase_if(chosen, [&](const SumChoice& c) { return known_->beat_every_completion(c.cost, step_, e); });
      }
      for (const SumChoice& c : chosen) {
        const SumTerm& t = terms[c.term];
        out.push_back({c.cost, config[c.term], t.a[c.i].handle, t.b[c.j].handle});
      }
      ends.push_back(out.size());
      advance(st.scope, digit);
    }
  }

  // compute_block for a replayed step: the recorded sums, pruned by known costs as this step's
  // own, with the handles of this step's prefix folds and cells.
  void replay_block(const Step& st, size_t begin, size_t end, std::vector<Chosen>& out, std::vector<size_t>& ends) const {
    const StepRecord& r = *st.replay;
    const size_t m = st.cells.size();
    std::vector<int> digit = digits_of(st, begin);
    for (size_t e = begin; e < end; ++e, advance(st.scope, digit)) {
      const int64_t first = st.split >= 2 ? 0 : st.offset(0, digit);
      const int64_t last = m >= 2 ? st.offset(m - 1, digit) : 0;
      for (size_t i = e == 0 ? 0 : r.ends[e - 1]; i < r.ends[e]; ++i) {
        const ReplayChoice& c = r.chosen[i];
        if (known_ && known_->beat_every_completion(c.cost, step_, e)) continue;
        const size_t k = static_cast<size_t>(c.config);
        const Handle prefix = st.split >= 2 ? st.prefix[static_cast<size_t>(c.prefix)].handle
                                            : st.cell(0, first, k)[static_cast<size_t>(c.prefix)].handle;
        const Handle rest = m >= 2 ? st.cell(m - 1, last, k)[static_cast<size_t>(c.last)].handle : kNoHandle;
        out.push_back({c.cost, c.config, prefix, rest});
      }
      ends.push_back(out.size());
    }
  }

  // The scope digits of entry e (row-major, last position fastest).
  std::vector<int> digits_of(const Step& st, size_t e) const {
    std::vector<int> digit(st.scope.size(), 0);
    for (size_t p = st.scope.size(); p-- > 0;) {
      const size_t k = static_cast<size_t>(problem_.num_configs(st.scope[p]));
      digit[p] = static_cast<int>(e % k);
      e /= k;
    }
    return digit;
  }

  // epsilon_prune (frontier.h) on the costs, keeping the choices of the points it keeps.
  void epsilon_filter(std::vector<SumChoice>& chosen) const {
    std::vector<Frontier::Point> indexed;
    for (size_t c = 0; c < chosen.size(); ++c) indexed.push_back({chosen[c].cost, static_cast<Handle>(c)});
    const Frontier pruned = epsilon_prune(Frontier::from_sorted(std::move(indexed)), delta_);
    std::vector<SumChoice> kept;
    for (const Frontier::Point& p : pruned.points()) kept.push_back(chosen[static_cast<size_t>(p.handle)]);
    chosen = std::move(kept);
  }

  FtResult finish() {
    Frontier total = Frontier::zero();
    for (int id : finished_) {
      const Factor& f = factors_[static_cast<size_t>(id)];
      FT_CHECK(f.live && f.entries() == 1);
      const Points cell = f.cell(0);
      total = minkowski_sum(total, Frontier::from_sorted({cell.begin(), cell.end()}),
                            [this](Handle l, Handle r) { return combine(l, r); });
    }
    stats_.peak_bytes = std::max(stats_.peak_bytes, live_bytes_ + arena_.bytes());
    stats_.provenance_records = arena_.made();
    if (known_) {  // the components' sum: complete strategies, nothing outside
      std::vector<Frontier::Point> kept;
      for (const Frontier::Point& p : total.points())
        if (!known_->beat(p.cost)) kept.push_back(p);
      total = Frontier::from_sorted(std::move(kept));
    }
    if (options_.thin_above > 0 && total.points().size() > options_.thin_above) {
      total = epsilon_prune(total, options_.thin_epsilon);
      stats_.thinned = true;
    }

    // Rebuild every assignment and cost it by evaluate()'s sum, then re-establish the invariant
    // on those costs (the elimination adds in another order; with integral costs nothing changes).
    // Points are independent (the arena is only read): rebuilt on every thread.
    const size_t n = static_cast<size_t>(problem_.num_nodes());
    const std::vector<Frontier::Point>& points = total.points();
    std::vector<std::vector<int>> assignments(points.size());
    std::vector<Frontier::Point> costed(points.size());
    parallel_for(points.size(), [&](size_t k) {
      std::vector<int> a(n, -1);
      arena_.rebuild(points[k].handle, a);
      for (int c : a) FT_CHECK(c >= 0);
      costed[k] = {detail::evaluate_unchecked(problem_, a), static_cast<Handle>(k)};
      assignments[k] = std::move(a);
    }, points.size() * n >= kParallelRebuild ? static_cast<size_t>(threads_) : 1);
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
  int threads_ = 1;
  double delta_ = 0;
  size_t step_ = 0;                     // the elimination in progress
  std::unique_ptr<KnownCosts> known_;  // options.known, when given
  std::vector<Factor> factors_;
  std::vector<std::vector<int>> by_node_;  // [node] ids of factors whose scope holds it
  std::vector<int> finished_;              // ids of scope-free factors
  ProvenanceArena arena_;
  int64_t compacted_size_ = 0;  // the arena's size after its last compaction
  int64_t live_bytes_ = 0;
  FtStats stats_;
  // Prefix sums of the current step: handle pairs waiting for provenance records.
  struct Pending {
    Handle left, right;
  };
  std::vector<Pending> scratch_;
  std::vector<Handle> memo_;
  std::vector<SumChoice> chosen_;
  std::vector<std::vector<Frontier::Point>> spare_;  // see take_buffer
  StepMemo<StepRecord> records_;  // steps kept for reuse (find_or_start_record)
  const std::vector<Frontier::Point> zero_{Frontier::zero().points()};
};

}  // namespace

void accumulate(FtStats& total, const FtStats& s) {
  total.width = std::max(total.width, s.width);
  total.depth = std::max(total.depth, s.depth);
  total.delta = std::max(total.delta, s.delta);
  total.largest_factor_entries = std::max(total.largest_factor_entries, s.largest_factor_entries);
  total.entry_evaluations += s.entry_evaluations;
  total.largest_factor_points = std::max(total.largest_factor_points, s.largest_factor_points);
  total.points_built += s.points_built;
  total.peak_bytes = std::max(total.peak_bytes, s.peak_bytes);
  total.provenance_records += s.provenance_records;
  total.parallel_steps += s.parallel_steps;
  total.replayed_steps += s.replayed_steps;
  total.thinned = total.thinned || s.thinned;
}

void validate_options(const FtOptions& options) {
  if (!std::isfinite(options.epsilon) || options.epsilon < 0) {
    throw std::invalid_argument("FT: epsilon must be finite and >= 0, got " +
                                std::to_string(options.epsilon));
  }
  if (options.max_bytes < 0) throw std::invalid_argument("FT: max_bytes must be >= 0");
  if (!std::isfinite(options.thin_epsilon) || options.thin_epsilon < 0)
    throw std::invalid_argument("FT: thin_epsilon must be finite and >= 0");
  if (options.max_points_built < 0) throw std::invalid_argument("FT: max_points_built must be >= 0");
  if (options.max_factor_points < 1) {
    throw std::invalid_argument("FT: max_factor_points must be >= 1");
  }
  if (options.threads < 0) throw std::invalid_argument("FT: threads must be >= 0");
  for (Cost c : options.known) {
    if (!std::isfinite(c.time) || !std::isfinite(c.memory) || c.time < 0 || c.memory < 0) {
      throw std::invalid_argument("FT: a known cost is negative or not finite");
    }
  }
}

int64_t points_left(const FtOptions& options, int64_t spent) {
  if (options.max_points_built <= 0) return 0;
  return std::max<int64_t>(1, options.max_points_built - spent);
}

FtResult solve_ft(const Problem& problem, const FtOptions& options) {
  validate(problem);
  validate_options(options);
  return Eliminator(problem, options).run();
}

}  // namespace tensoropt::planner
