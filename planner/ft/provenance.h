// Back-pointers that rebuild the strategy behind every FT frontier point.
//
// An append-only arena of records addressed by Handle (planner/ft/frontier.h). A choice record says
// "node var takes configuration value, and the rest comes from its children"; a sum record says
// "the rest comes from left and from right". kNoHandle contributes nothing. Records form a tree
// per handle: FT consumes each factor exactly once, so following a final point's handle assigns
// every node exactly once. Records live in fixed-size blocks: growing never moves them.
//
// Most records die young: FT builds a point for every sum an entry keeps, and a later step reads
// only some of them. compact() drops the records no handle still in use reaches and renumbers the
// rest in their order, rewriting those handles; FT calls it between steps once the arena has
// doubled since the last compaction, so memory follows the records alive, and the work (linear
// in the records at each call) stays a constant factor of the records made.
//
// Ownership: the arena owns its records; handles are indices valid until the next compact().
// Thread-safety: one arena per solve; add() and compact() are not thread-safe, rebuild() (const)
// may run on several threads at once while nothing is added. Errors: rebuild() throws
// std::logic_error on a handle outside the arena or a node assigned twice (an FT bug); adding a
// record past 2^31 - 1, or one naming a handle outside the arena, throws std::length_error; so
// does compact() given a root outside the arena.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "planner/ft/frontier.h"

namespace tensoropt::planner {

class ProvenanceArena {
 public:
  [[nodiscard]] Handle add_choice(int var, int value, Handle child, Handle other = kNoHandle);
  [[nodiscard]] Handle add_sum(Handle left, Handle right);

  // Writes the configuration of every node reachable from handle into assignment (sized by the
  // caller, unassigned entries -1).
  void rebuild(Handle handle, std::vector<int>& assignment) const;

  // `visit_roots(fn)` calls fn(Handle&) on every handle still in use (kNoHandle allowed). The
  // records none of them reaches are dropped; the others keep their order and get the indices
  // 0, 1, ...; every root is rewritten to its record's new index. Rebuilding from a rewritten root
  // gives what rebuilding from the old one gave.
  template <class VisitRoots>
  void compact(const VisitRoots& visit_roots) {
    std::vector<int32_t> index(static_cast<size_t>(size_), 0);  // 1: reached; then the new index
    visit_roots([&](Handle& h) {
      if (stored(h, size_) >= 0) index[static_cast<size_t>(h)] = 1;
    });
    renumber(index);
    visit_roots([&](Handle& h) {
      if (h >= 0) h = index[static_cast<size_t>(h)];
    });
  }

  [[nodiscard]] int64_t size() const { return size_; }
  // Records added over the arena's life, the dropped ones included.
  [[nodiscard]] int64_t made() const { return made_; }
  [[nodiscard]] int64_t bytes() const {
    return static_cast<int64_t>(blocks_.size()) * kBlock * static_cast<int64_t>(sizeof(Record));
  }

 private:
  // 16 bytes: handles are stored as 32-bit indices (kNoHandle as -1); an arena of more than
  // 2^31 - 1 records (32 GiB) is refused.
  struct Record {
    int32_t var;    // -1 for a sum record
    int32_t value;  // configuration of var (choice records)
    int32_t left;   // a child (choice records) or the left addend
    int32_t right;  // the other child or the right addend, or kNoHandle
  };
  static constexpr int64_t kBlock = int64_t{1} << 16;  // records per block
  Handle add(Record r);
  // kNoHandle or an index below size; else std::length_error.
  static int32_t stored(Handle h, int64_t size);
  // index[h] is 1 for each root, else 0: marks what the roots reach, moves the reached records
  // down in order, frees the blocks left empty and sets index[h] to h's new index (-1 dropped).
  void renumber(std::vector<int32_t>& index);
  Record& at(Handle h) { return blocks_[static_cast<size_t>(h / kBlock)][static_cast<size_t>(h % kBlock)]; }
  const Record& at(Handle h) const {
    return blocks_[static_cast<size_t>(h / kBlock)][static_cast<size_t>(h % kBlock)];
  }
  std::vector<std::unique_ptr<Record[]>> blocks_;
  int64_t size_ = 0;
  int64_t made_ = 0;
};

}  // namespace tensoropt::planner
