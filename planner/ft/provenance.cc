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
  ++made_;
  return size_++;
}

int32_t ProvenanceArena::stored(Handle h, int64_t size) {
  if (h < kNoHandle || h >= size) throw std::length_error("provenance: handle " + std::to_string(h) + " outside the arena");
  return static_cast<int32_t>(h);
}

void ProvenanceArena::renumber(std::vector<int32_t>& index) {
  // A record's children were added before it: one sweep down marks everything reached.
  for (int64_t h = size_; h-- > 0;) {
    if (!index[static_cast<size_t>(h)]) continue;
    const Record& r = at(h);
    if (r.left >= 0) index[static_cast<size_t>(r.left)] = 1;
    if (r.right >= 0) index[static_cast<size_t>(r.right)] = 1;
  }
  // One sweep up moves each kept record to its new index, at or below its old one (already read),
  // and its children, renumbered before it, to theirs.
  int32_t kept = 0;
  for (int64_t h = 0; h < size_; ++h) {
    int32_t& slot = index[static_cast<size_t>(h)];
    if (!slot) {
      slot = -1;
      continue;
    }
    Record r = at(h);
    if (r.left >= 0) r.left = index[static_cast<size_t>(r.left)];
    if (r.right >= 0) r.right = index[static_cast<size_t>(r.right)];
    at(kept) = r;
    slot = kept++;
  }
  size_ = kept;
  blocks_.resize(static_cast<size_t>((size_ + kBlock - 1) / kBlock));
}

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
