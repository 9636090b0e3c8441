// The bookkeeping for elimination steps that repeat (ft.h "Repeated steps"), shared by FT and the
// scalar eliminations of planner/ft/ft_bounds.cc. A step spells its content, everything its result
// depends on, as a sequence of 64-bit words through a visitor (visit(fn) calls fn(word) for each
// word in order; the sequence must name its own lengths, so that no two contents spell alike).
// A step's record is kept from the second time its content's hash comes up (a step seen once
// costs 8 bytes); find() compares the whole content, so a hash collision never matches.
// Record: any type with a member `std::vector<uint64_t> content`.
// Thread-safety: none; one StepMemo per elimination.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace tensoropt::planner {

// Hash of a content sequence, fed one word at a time.
struct ContentHash {
  uint64_t value = 0x9E3779B97F4A7C15ull;
  void operator()(uint64_t word) { value = (value ^ word) * 0x100000001B3ull + (value >> 29); }
};

template <class Record>
class StepMemo {
 public:
  // The record kept under `hash` whose content `visit` spells, or null.
  template <class Visit>
  const Record* find(uint64_t hash, const Visit& visit) const {
    const auto it = by_hash_.find(hash);
    if (it == by_hash_.end()) return nullptr;
    for (size_t r : it->second) {
      const std::vector<uint64_t>& content = records_[r]->content;
      size_t i = 0;
      bool equal = true;
      visit([&](uint64_t word) {
        equal = equal && i < content.size() && content[i] == word;
        ++i;
      });
      if (equal && i == content.size()) return records_[r].get();
    }
    return nullptr;
  }
  // Whether a step with this hash came up before; the first call for a hash says no.
  bool seen_before(uint64_t hash) { return !seen_.insert(hash).second; }
  // Keeps a finished record (content filled) under hash.
  const Record& keep(uint64_t hash, std::unique_ptr<Record> record) {
    by_hash_[hash].push_back(records_.size());
    records_.push_back(std::move(record));
    return *records_.back();
  }

 private:
  std::vector<std::unique_ptr<Record>> records_;
  std::unordered_map<uint64_t, std::vector<size_t>> by_hash_;
  std::unordered_set<uint64_t> seen_;
};

}  // namespace tensoropt::planner
