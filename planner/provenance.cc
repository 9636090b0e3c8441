// Provenance arena: appending records and walking them back into an assignment.
#include "planner/provenance.h"

#include <stdexcept>
#include <string>

namespace tensoropt::planner {

Handle ProvenanceArena::add_choice(int var, int value, Handle child) {
  records_.push_back({var, value, child, kNoHandle});
  return static_cast<Handle>(records_.size()) - 1;
}

Handle ProvenanceArena::add_sum(Handle left, Handle right) {
  records_.push_back({-1, 0, left, right});
  return static_cast<Handle>(records_.size()) - 1;
}

void ProvenanceArena::rebuild(Handle handle, std::vector<int>& assignment) const {
  std::vector<Handle> stack{handle};
  while (!stack.empty()) {
    const Handle h = stack.back();
    stack.pop_back();
    if (h == kNoHandle) continue;
    if (h < 0 || h >= size()) {
      throw std::logic_error("provenance: handle " + std::to_string(h) + " outside the arena");
    }
    const Record& r = records_[static_cast<size_t>(h)];
    if (r.var >= 0) {
      int& slot = assignment.at(static_cast<size_t>(r.var));
      if (slot != -1) {
        throw std::logic_error("provenance: node " + std::to_string(r.var) + " assigned twice");
      }
      slot = r.value;
    }
    stack.push_back(r.right);
    stack.push_back(r.left);
  }
}

}  // namespace tensoropt::planner
