// Tests of planner/ft/provenance.h: records rebuild the assignment they describe, 16 bytes each;
// bad handles are refused when added and when rebuilt; compaction keeps exactly what the roots
// reach, in order, and rebuilding from a rewritten root gives the same assignment.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <stdexcept>
#include <vector>

#include "planner/ft/provenance.h"

namespace tensoropt::planner {
namespace {

TEST_CASE("provenance: choice and sum records rebuild every node once") {
  ProvenanceArena arena;
  const Handle a = arena.add_choice(0, 3, kNoHandle);
  const Handle b = arena.add_choice(1, 1, kNoHandle);
  const Handle ab = arena.add_sum(a, b);
  const Handle c = arena.add_choice(2, 0, ab, kNoHandle);
  const Handle d = arena.add_choice(3, 2, kNoHandle);
  const Handle top = arena.add_choice(4, 5, c, d);
  std::vector<int> assignment(5, -1);
  arena.rebuild(top, assignment);
  CHECK(assignment == std::vector<int>{3, 1, 0, 2, 5});
  std::vector<int> part(5, -1);
  arena.rebuild(ab, part);
  CHECK(part == std::vector<int>{3, 1, -1, -1, -1});
  CHECK(arena.size() == 6);
  CHECK(arena.bytes() == 16 * (int64_t{1} << 16));  // one block of 2^16 records of 16 bytes
}

TEST_CASE("provenance: a handle outside the arena is refused, a node assigned twice is an error") {
  ProvenanceArena arena;
  const Handle a = arena.add_choice(0, 1, kNoHandle);
  CHECK_THROWS_AS((void)arena.add_choice(1, 0, a + 1), std::length_error);  // not yet in the arena
  CHECK_THROWS_AS((void)arena.add_sum(a, -2), std::length_error);
  CHECK_THROWS_AS((void)arena.add_sum(int64_t{1} << 40, a), std::length_error);
  const Handle twice = arena.add_sum(a, a);
  std::vector<int> assignment(2, -1);
  CHECK_THROWS_AS(arena.rebuild(twice, assignment), std::logic_error);
  std::vector<int> other(2, -1);
  CHECK_THROWS_AS(arena.rebuild(99, other), std::logic_error);
}

TEST_CASE("provenance: compaction keeps what the roots reach, in order, and frees empty blocks") {
  ProvenanceArena arena;
  const Handle dead = arena.add_choice(9, 9, kNoHandle);
  const Handle a = arena.add_choice(0, 3, kNoHandle);
  const Handle b = arena.add_choice(1, 1, kNoHandle);
  const Handle dead_sum = arena.add_sum(dead, b);
  const Handle ab = arena.add_sum(a, b);
  const Handle top = arena.add_choice(2, 4, ab, kNoHandle);
  (void)dead_sum;
  // Many dead records after: the arena spans several blocks.
  for (int i = 0; i < 200'000; ++i) (void)arena.add_choice(7, i, kNoHandle);
  CHECK(arena.bytes() == 16 * 4 * (int64_t{1} << 16));
  std::vector<Handle> roots{top, kNoHandle, a};
  arena.compact([&](const auto& fn) {
    for (Handle& h : roots) fn(h);
  });
  CHECK(arena.size() == 4);  // a, b, ab, top: the dead choice, its sum and the tail are gone
  CHECK(arena.made() == 200'006);
  CHECK(arena.bytes() == 16 * (int64_t{1} << 16));
  CHECK(roots == std::vector<Handle>{3, kNoHandle, 0});  // a, b, ab, top keep their order
  std::vector<int> assignment(3, -1);
  arena.rebuild(roots[0], assignment);
  CHECK(assignment == std::vector<int>{3, 1, 4});
  // Records added after a compaction name the new indices.
  const Handle more = arena.add_choice(3, 2, roots[0]);
  CHECK(more == 4);
  std::vector<int> four(4, -1);
  arena.rebuild(more, four);
  CHECK(four == std::vector<int>{3, 1, 4, 2});
  // A root outside the arena is refused; nothing reached: everything goes.
  std::vector<Handle> bad{more + 1};
  CHECK_THROWS_AS(arena.compact([&](const auto& fn) {
    for (Handle& h : bad) fn(h);
  }), std::length_error);
  arena.compact([](const auto&) {});
  CHECK(arena.size() == 0);
  CHECK(arena.bytes() == 0);
}

TEST_CASE("provenance: compaction of random DAGs rebuilds every root as before") {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    ProvenanceArena arena;
    // Leaves and sums over earlier records, as FT makes them: each record's children come before it.
    const int n = 50 + static_cast<int>(rng() % 400);
    std::vector<std::vector<int>> vars(static_cast<size_t>(n));  // nodes each record's tree assigns
    int next_var = 0;
    for (int h = 0; h < n; ++h) {
      if (h < 2 || rng() % 3 == 0) {
        (void)arena.add_choice(next_var, next_var % 5, kNoHandle);
        vars[static_cast<size_t>(h)] = {next_var++};
        continue;
      }
      // A choice over one earlier record, or a sum of two whose trees share no node.
      const int l = static_cast<int>(rng() % static_cast<unsigned>(h));
      int r = static_cast<int>(rng() % static_cast<unsigned>(h));
      std::vector<int> both = vars[static_cast<size_t>(l)];
      bool disjoint = r != l;
      for (int v : vars[static_cast<size_t>(r)])
        disjoint = disjoint && std::find(both.begin(), both.end(), v) == both.end();
      if (disjoint && rng() % 2) {
        (void)arena.add_sum(l, r);
        both.insert(both.end(), vars[static_cast<size_t>(r)].begin(), vars[static_cast<size_t>(r)].end());
      } else {
        (void)arena.add_choice(next_var, next_var % 3, l);
        both.push_back(next_var++);
      }
      vars[static_cast<size_t>(h)] = both;
    }
    std::vector<Handle> roots;
    for (int k = 0; k < 5; ++k) roots.push_back(static_cast<Handle>(rng() % static_cast<unsigned>(n)));
    std::vector<std::vector<int>> before;
    for (Handle h : roots) {
      std::vector<int> a(static_cast<size_t>(next_var), -1);
      arena.rebuild(h, a);
      before.push_back(a);
    }
    arena.compact([&](const auto& fn) {
      for (Handle& h : roots) fn(h);
    });
    CHECK(arena.size() <= n);
    for (size_t k = 0; k < roots.size(); ++k) {
      std::vector<int> a(static_cast<size_t>(next_var), -1);
      arena.rebuild(roots[k], a);
      CHECK(a == before[k]);
    }
    // Every record kept is reached: compacting again keeps the same number.
    const int64_t kept = arena.size();
    arena.compact([&](const auto& fn) {
      for (Handle& h : roots) fn(h);
    });
    CHECK(arena.size() == kept);
  }
}

}  // namespace
}  // namespace tensoropt::planner
