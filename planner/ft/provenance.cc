// Provenance arena: appending records and walking them back into an assignment.
#include "planner/ft/provenance.h"

#include <cstdint>
#include <stdexcept>
#include <string>

namespace tensoropt::planner {

Handle ProvenanceArena::add(Record r) {
  if (size_ == INT32_MAX) throw std::length_error("provenance: more than 2^31 - 1 records");
  if (size_ == static_cast<int64_t>(blocks_.size()) * kBlock) {
    blocks_.push_back(std::make_unique_for_overwrite<Record[]>(static_cast<size_t>(kBlock)));
  }
  blocks_.back()[static_cast<size_t>(size_ % kBlock)] = r;
  return size_++;
}

namespace {

// A handle as a record stores it: kNoHandle or an index below the arena's size.
int32_t stored(Handle h, int64_t size) {
  if (h < kNoHandle || h >= size) throw std::length_error("provenance: handle " + std::to_string(h) + " outside the arena");
  return static_cast<int32_t>(h);
}

}  // namespace

Handle ProvenanceArena::add_choice(int var, int value, Handle child, Handle other) {
  return add({var, value, stored(child, size_), stored(other, size_)});
}

Handle ProvenanceArena::add_sum(Handle left, Handle right) { return add({-1, 0, stored(left, size_), stored(right, size_)}); }

void ProvenanceArena::rebuild(Handle handle, std::vector<int>& assignment) const {
  std::vector<Handle> stack{handle};
  while (!stack.empty()) {
    const Handle h = stack.back();
    stack.pop_back();
    if (h == kNoHandle) continue;
    if (h < 0 || h >= size()) {
      throw std::logic_error("provenance: handle " + std::to_string(h) + " outside the arena");
    }
    const Record& r = at(h);
    if (r.var >= 0) {
      int& slot = assignment.at(static_cast<size_t>(r.var));
      if (slot != -1) {
        throw std::logic_error("provenance: node " + std::to_string(r.var) + " assigned twice");
      }
      slot = r.value;
    }
    stack.push_back(Handle{r.right});
    stack.push_back(Handle{r.left});
  }
}

}  // namespace tensoropt::planner
