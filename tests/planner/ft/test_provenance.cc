// Tests of planner/ft/provenance.h: records rebuild the assignment they describe, 16 bytes each;
// bad handles are refused when added and when rebuilt.
#include <doctest/doctest.h>

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

}  // namespace
}  // namespace tensoropt::planner
