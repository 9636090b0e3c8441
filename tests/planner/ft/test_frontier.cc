// Frontier algebra: construction and invariant, minkowski_sum and pareto_union with each side
// empty and both non-empty, ties, identities, epsilon_prune, a hand-worked example.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "planner/ft/frontier.h"

namespace tensoropt::planner {
namespace {

Frontier make(std::vector<Cost> costs) {
  std::vector<Frontier::Point> raw;
  for (size_t i = 0; i < costs.size(); ++i) raw.push_back({costs[i], static_cast<Handle>(i)});
  return Frontier::from_points(std::move(raw));
}

std::string handles(const Frontier& f) {
  std::string out;
  for (const Frontier::Point& p : f.points()) out += std::to_string(p.handle) + " ";
  return out;
}

}  // namespace

TEST_CASE("frontier: from_points sorts, drops dominated points and keeps the first of a tie") {
  const Frontier f = make({{3, 1}, {1, 5}, {2, 2}, {2, 4}, {4, 1}, {1, 5}, {5, 0.5}});
  CHECK(f.to_string() == "(1,5) (2,2) (3,1) (5,0.5)");
  CHECK(handles(f) == "1 2 0 6 ");  // (1,5) first came at index 1, not 5
  CHECK(Frontier().empty());
  CHECK(make({}).empty());
  CHECK(Frontier::zero().to_string() == "(0,0)");
}

TEST_CASE("frontier: from_sorted checks the invariant") {
  CHECK(Frontier::from_sorted({{{1, 3}, 0}, {{2, 1}, 1}}).size() == 2);
  CHECK_THROWS_AS((void)Frontier::from_sorted({{{1, 3}, 0}, {{2, 3}, 1}}), std::invalid_argument);
  CHECK_THROWS_AS((void)Frontier::from_sorted({{{1, 3}, 0}, {{1, 2}, 1}}), std::invalid_argument);
  CHECK_THROWS_AS((void)Frontier::from_sorted({{{2, 1}, 0}, {{1, 3}, 1}}), std::invalid_argument);
  CHECK_THROWS_AS((void)Frontier::from_points({{{NAN, 1}, 0}}), std::invalid_argument);
}

TEST_CASE("frontier: minkowski_sum with empty sides, identity and a worked example") {
  const Frontier a = make({{1, 4}, {3, 1}});
  const Frontier b = make({{0, 2}, {2, 0}});
  CHECK(minkowski_sum(Frontier(), b).empty());
  CHECK(minkowski_sum(a, Frontier()).empty());
  CHECK(minkowski_sum(Frontier(), Frontier()).empty());
  CHECK(minkowski_sum(Frontier::zero(), a).to_string() == a.to_string());
  CHECK(minkowski_sum(a, Frontier::zero()).to_string() == a.to_string());
  // Sums: (1,6) (3,4) (3,3) (5,1); (3,4) is dominated by (3,3).
  CHECK(minkowski_sum(a, b).to_string() == "(1,6) (3,3) (5,1)");
  CHECK(minkowski_sum(b, a).to_string() == "(1,6) (3,3) (5,1)");
}

TEST_CASE("frontier: minkowski_sum combines handles of survivors only, ties to the lowest indices") {
  const Frontier a = make({{0, 2}, {1, 1}});
  const Frontier b = make({{1, 1}, {2, 0}});
  // (0,2)+(2,0) = (2,2) ties (1,1)+(1,1) = (2,2): the smaller left index (0) wins.
  std::vector<std::pair<Handle, Handle>> calls;
  const Frontier s = minkowski_sum(a, b, [&](Handle l, Handle r) {
    calls.emplace_back(l, r);
    return 10 * l + r;
  });
  CHECK(s.to_string() == "(1,3) (2,2) (3,1)");
  CHECK(handles(s) == "0 1 11 ");
  CHECK(calls.size() == 3);
  CHECK(handles(minkowski_sum(a, b)) == "-1 -1 -1 ");
}

TEST_CASE("frontier: minkowski_sum keeps the invariant when sums round to equal times") {
  // 1 + 1e-17 == 1 in double: both sums have time 1; the lower-memory one must be the only one.
  const Frontier a = make({{1, 0}});
  const Frontier b = make({{0, 2}, {1e-17, 1}});
  CHECK(b.size() == 2);
  const Frontier s = minkowski_sum(a, b);
  CHECK(s.to_string() == "(1,1)");
  CHECK(minkowski_sum(b, a).to_string() == "(1,1)");
  // Longer runs: every point of b collapses onto time 1.
  const Frontier c = make({{0, 5}, {1e-17, 4}, {2e-17, 3}, {3e-17, 2}});
  CHECK(minkowski_sum(make({{1, 0}, {2, -1.5}}), c).to_string() == "(1,2) (2,0.5)");
}

TEST_CASE("frontier: pareto_union with empty sides, ties to the left operand") {
  const Frontier a = make({{1, 4}, {3, 1}});
  const Frontier b = make({{3, 1}, {2, 2}, {0, 9}});
  CHECK(pareto_union(Frontier(), b).to_string() == b.to_string());
  CHECK(pareto_union(a, Frontier()).to_string() == a.to_string());
  CHECK(pareto_union(Frontier(), Frontier()).empty());
  const Frontier u = pareto_union(a, b);
  CHECK(u.to_string() == "(0,9) (1,4) (2,2) (3,1)");
  CHECK(handles(u) == "2 0 1 1 ");  // the tied (3,1) comes from a (handle 1), not b (handle 0)
  const Frontier v = pareto_union(make({{5, 5}}), make({{7, 7}, {5, 5}}));
  CHECK(v.to_string() == "(5,5)");
  CHECK(handles(v) == "0 ");
  CHECK(handles(pareto_union(make({{9, 9}, {5, 5}}), make({{5, 5}}))) == "1 ");
}

TEST_CASE("frontier: epsilon_prune keeps a (1+delta)-cover and the fastest point") {
  const Frontier f = make({{1, 100}, {2, 99}, {3, 90}, {4, 89.5}, {5, 10}});
  CHECK(epsilon_prune(f, 0).to_string() == f.to_string());
  const Frontier g = epsilon_prune(f, 0.05);
  CHECK(g.to_string() == "(1,100) (3,90) (5,10)");
  for (const Frontier::Point& p : f.points()) {
    bool covered = false;
    for (const Frontier::Point& q : g.points()) {
      covered = covered || (q.cost.time <= 1.05 * p.cost.time && q.cost.memory <= 1.05 * p.cost.memory);
    }
    CHECK(covered);
  }
  CHECK_THROWS_AS((void)epsilon_prune(f, -0.1), std::invalid_argument);
  CHECK(epsilon_prune(Frontier(), 0.5).empty());
}

TEST_CASE("frontier: coverage, weak and strict") {
  const auto of = [](const Frontier& a, const Frontier& b) { return coverage(a.points(), b.points()); };
  const Frontier a = make({{1, 4}, {3, 1}});
  CHECK(of(a, a) == Coverage::kWeak);
  CHECK(of(a, make({{1, 5}, {2, 4}, {3, 1}})) == Coverage::kWeak);  // (3,1) only weakly: equal
  CHECK(of(a, make({{1, 5}, {2, 4}, {4, 1}})) == Coverage::kStrict);
  CHECK(of(a, make({{0.5, 9}})) == Coverage::kNone);                // faster than all of a
  CHECK(of(a, make({{9, 0.5}})) == Coverage::kNone);                // smaller than all of a
  CHECK(of(a, make({{2, 3}})) == Coverage::kNone);                  // between a's points
  CHECK(of(a, Frontier()) == Coverage::kStrict);
  CHECK(of(Frontier(), Frontier()) == Coverage::kStrict);
  CHECK(of(Frontier(), a) == Coverage::kNone);
}

namespace {

// Fixed-seed generator with a portable draw.
uint64_t next_random(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// A frontier of up to max_points points with small integer costs (many ties between sums).
Frontier random_frontier(uint64_t& state, int max_points) {
  std::vector<Cost> costs;
  const int n = static_cast<int>(next_random(state) % static_cast<uint64_t>(max_points + 1));
  for (int i = 0; i < n; ++i) {
    const double t = static_cast<double>(next_random(state) % 12);
    costs.push_back({t, static_cast<double>(12 - t + static_cast<double>(next_random(state) % 4))});
  }
  return make(costs);
}

}  // namespace

TEST_CASE("frontier: union_of_sums equals the pareto_union of the minkowski_sums") {
  uint64_t state = 11;
  int multi = 0;
  for (int round = 0; round < 500; ++round) {
    const int n_terms = static_cast<int>(next_random(state) % 5);
    std::vector<Frontier> a, b;
    for (int t = 0; t < n_terms; ++t) {
      a.push_back(random_frontier(state, round % 2 == 0 ? 3 : 9));
      b.push_back(random_frontier(state, round % 3 == 0 ? 1 : 7));
    }
    Frontier expected;
    std::vector<SumTerm> terms;
    for (int t = 0; t < n_terms; ++t) {
      expected = pareto_union(expected, minkowski_sum(a[static_cast<size_t>(t)], b[static_cast<size_t>(t)]));
      terms.push_back({a[static_cast<size_t>(t)].points(), b[static_cast<size_t>(t)].points()});
    }
    std::vector<SumChoice> got;
    union_of_sums(terms, got);
    std::vector<Frontier::Point> points;
    for (const SumChoice& c : got) {
      const SumTerm& t = terms[c.term];
      REQUIRE(c.i < t.a.size());
      REQUIRE(c.j < t.b.size());
      CHECK(t.a[c.i].cost + t.b[c.j].cost == c.cost);
      points.push_back({c.cost, kNoHandle});
    }
    CAPTURE(round);
    CHECK(Frontier::from_sorted(points).to_string() == expected.to_string());
    multi += got.size() > 2;
  }
  CHECK(multi > 100);
  std::vector<SumChoice> none{{}};
  union_of_sums({}, none);
  CHECK(none.empty());
}

TEST_CASE("frontier: union_of_sums with a ceiling is the frontier less the sums above it") {
  uint64_t state = 12;
  int dropped = 0, kept = 0;
  for (int round = 0; round < 400; ++round) {
    const int n_terms = 1 + static_cast<int>(next_random(state) % 4);
    std::vector<Frontier> a, b;
    std::vector<SumTerm> terms;
    for (int t = 0; t < n_terms; ++t) {
      a.push_back(random_frontier(state, 9));
      b.push_back(random_frontier(state, round % 3 == 0 ? 1 : 7));
    }
    for (int t = 0; t < n_terms; ++t) terms.push_back({a[static_cast<size_t>(t)].points(), b[static_cast<size_t>(t)].points()});
    std::vector<SumChoice> full;
    union_of_sums(terms, full);
    // A staircase around the sums' range, scaled and shifted (as FT's known costs are).
    const Frontier stairs = random_frontier(state, 6);
    std::vector<Cost> points;
    for (const Frontier::Point& p : stairs.points()) points.push_back(p.cost);
    SumCeiling ceiling{points, 1.5, 2.0 + static_cast<double>(next_random(state) % 5), 1.25, 3.0};
    const auto above = [&](Cost c) {
      for (Cost u : points)
        if (c.time >= ceiling.time_scale * u.time + ceiling.time_shift && c.memory >= ceiling.memory_scale * u.memory + ceiling.memory_shift) return true;
      return false;
    };
    std::vector<Cost> expected;
    for (const SumChoice& c : full)
      if (!above(c.cost)) expected.push_back(c.cost);
    std::vector<SumChoice> got;
    union_of_sums(terms, got, ceiling);
    std::vector<Cost> costs;
    for (const SumChoice& c : got) {
      const SumTerm& t = terms[c.term];
      CHECK(t.a[c.i].cost + t.b[c.j].cost == c.cost);
      costs.push_back(c.cost);
    }
    CAPTURE(round);
    CHECK(costs == expected);
    dropped += static_cast<int>(full.size() - got.size());
    kept += static_cast<int>(got.size());
  }
  CHECK(dropped > 100);  // the ceiling cuts
  CHECK(kept > 100);     // and leaves some
}

TEST_CASE("frontier: union_of_sums on long frontiers keeps what sorting every sum keeps, choices included") {
  // Long, jagged frontiers make lists that trail one another for long stretches (the sums the
  // leading list beats are skipped before they reach the heap); half the rounds have integer
  // costs, so equal sums across terms and lists are common.
  uint64_t state = 13;
  const auto staircase = [&](int n, bool integral) {
    std::vector<Cost> costs;
    double t = static_cast<double>(next_random(state) % 5), m = 4000;
    for (int i = 0; i < n; ++i) {
      const double dt = 1 + static_cast<double>(next_random(state) % 7), dm = 1 + static_cast<double>(next_random(state) % 9);
      t += integral ? dt : dt * 1.37;
      m -= integral ? dm : dm * 0.91;
      costs.push_back({t, m});
    }
    return make(costs);
  };
  int skipped = 0;
  for (int round = 0; round < 60; ++round) {
    const bool integral = round % 2 == 0;
    const int n_terms = 1 + static_cast<int>(next_random(state) % 6);
    std::vector<Frontier> a, b;
    std::vector<SumTerm> terms;
    for (int t = 0; t < n_terms; ++t) {
      a.push_back(staircase(1 + static_cast<int>(next_random(state) % 40), integral));
      b.push_back(staircase(50 + static_cast<int>(next_random(state) % 250), integral));
      if (next_random(state) % 2) std::swap(a.back(), b.back());
    }
    for (int t = 0; t < n_terms; ++t) terms.push_back({a[static_cast<size_t>(t)].points(), b[static_cast<size_t>(t)].points()});
    // The definition: every sum in (time, memory, term, i, j) order, kept when below all kept.
    std::vector<SumChoice> all;
    for (size_t t = 0; t < terms.size(); ++t)
      for (uint32_t i = 0; i < terms[t].a.size(); ++i)
        for (uint32_t j = 0; j < terms[t].b.size(); ++j)
          all.push_back({terms[t].a[i].cost + terms[t].b[j].cost, static_cast<uint32_t>(t), i, j});
    std::sort(all.begin(), all.end(), [](const SumChoice& x, const SumChoice& y) {
      return std::tie(x.cost.time, x.cost.memory, x.term, x.i, x.j) < std::tie(y.cost.time, y.cost.memory, y.term, y.i, y.j);
    });
    std::vector<SumChoice> expected;
    double best = std::numeric_limits<double>::infinity();
    for (const SumChoice& c : all) {
      if (c.cost.memory >= best) continue;
      best = c.cost.memory;
      expected.push_back(c);
    }
    std::vector<SumChoice> got;
    union_of_sums(terms, got);
    CAPTURE(round);
    REQUIRE(got.size() == expected.size());
    for (size_t k = 0; k < got.size(); ++k) {
      CAPTURE(k);
      CHECK(got[k].cost == expected[k].cost);
      CHECK(got[k].term == expected[k].term);
      CHECK(got[k].i == expected[k].i);
      CHECK(got[k].j == expected[k].j);
    }
    skipped += static_cast<int>(all.size() - got.size());
  }
  CHECK(skipped > 10000);
}

TEST_CASE("frontier: union_of_sums keeps the lowest (term, i, j) of equal costs") {
  const Frontier one = make({{1, 1}});
  const Frontier two = make({{0, 2}, {1, 1}});
  // Term 0: (1,1)+(0,2) = (1,3), (1,1)+(1,1) = (2,2); term 1 the same sums swapped.
  const std::vector<SumTerm> terms{{one.points(), two.points()}, {two.points(), one.points()}};
  std::vector<SumChoice> got;
  union_of_sums(terms, got);
  REQUIRE(got.size() == 2);
  CHECK((got[0].term == 0 && got[0].i == 0 && got[0].j == 0));
  CHECK((got[1].term == 0 && got[1].i == 0 && got[1].j == 1));
}

}  // namespace tensoropt::planner
