#include "launcher/elastic/handover.h"

#include <algorithm>

namespace tensoropt::elastic {
namespace {

using runtime::Array;

// The arrays of one dtype moved as one: packed on the root, broadcast, unpacked elsewhere.
void broadcast_packed(comm::Communicator& c, runtime::Backend& backend, int root, const std::vector<Array*>& arrays) {
  if (arrays.empty()) return;
  int64_t total = 0;
  for (const Array* a : arrays) total += a->numel();
  Array packed(arrays.front()->dtype(), {total}, backend.allocator(), runtime::MemoryKind::Transients);
  const auto each = [&](bool pack) {
    int64_t at = 0;
    for (Array* a : arrays) {
      Array flat = a->view({a->numel()});
      if (pack) backend.copy_slab(flat, 0, 0, packed, at, a->numel());
      else backend.copy_slab(packed, 0, at, flat, 0, a->numel());
      at += a->numel();
    }
  };
  if (c.rank() == root) each(true);
  c.broadcast(packed.raw(), total, packed.dtype(), root, c.world());
  if (c.rank() != root) each(false);
}

}  // namespace

void share_whole(comm::Communicator& c, runtime::Backend& backend, const Graph& g, int root, std::map<int, Array>& whole,
                 std::map<int, std::vector<Array>>& state, int64_t& steps, std::map<int, Array>& arrays, bool into_held) {
  const size_t tensors = g.tensors.size();
  std::vector<int64_t> keys(3 + 5 * tensors, 0);
  if (c.rank() == root) {
    keys[0] = steps;
    keys[1] = static_cast<int64_t>(whole.size());
    keys[2] = static_cast<int64_t>(state.size());
    size_t at = 3;
    for (const auto& [t, a] : whole) {
      keys[at++] = t;
      keys[at++] = static_cast<int64_t>(a.dtype());
    }
    for (const auto& [t, slots] : state) {
      keys[at++] = t;
      keys[at++] = static_cast<int64_t>(slots.size());
      keys[at++] = slots.empty() ? 0 : static_cast<int64_t>(slots.front().dtype());
    }
  }
  c.broadcast(keys.data(), static_cast<int64_t>(keys.size()), DType::I64, root, c.world());
  steps = keys[0];
  std::map<DType, std::vector<Array*>> by_dtype;
  size_t at = 3;
  for (int64_t i = 0; i < keys[1]; ++i, at += 2) {
    const int t = static_cast<int>(keys[at]);
    const auto dtype = static_cast<DType>(keys[at + 1]);
    auto held = whole.find(t);
    if (held != whole.end() && held->second.dtype() == dtype && (into_held || c.rank() == root)) arrays[t] = held->second;
    else arrays[t] = Array(dtype, g.tensors[static_cast<size_t>(t)].shape, backend.allocator(), runtime::MemoryKind::Parameters);
    by_dtype[dtype].push_back(&arrays.at(t));
  }
  std::map<int, std::vector<Array>> received;
  for (int64_t i = 0; i < keys[2]; ++i, at += 3) {
    const int t = static_cast<int>(keys[at]);
    const auto count = static_cast<size_t>(keys[at + 1]);
    const auto dtype = static_cast<DType>(keys[at + 2]);
    std::vector<Array> slots = c.rank() == root ? state.at(t) : std::vector<Array>{};
    auto held = state.find(t);
    if (c.rank() != root && into_held && held != state.end() && held->second.size() == count &&
        std::all_of(held->second.begin(), held->second.end(), [&](const Array& a) { return a.dtype() == dtype; }))
      slots = held->second;
    while (slots.size() < count) slots.emplace_back(dtype, arrays.at(t).shape(), backend.allocator(), runtime::MemoryKind::OptimizerState);
    received[t] = std::move(slots);
  }
  for (auto& [t, slots] : received)
    for (Array& slot : slots) by_dtype[slot.dtype()].push_back(&slot);
  for (auto& [dtype, list] : by_dtype) broadcast_packed(c, backend, root, list);
  state = std::move(received);
  whole.clear();
}

Agreement agree(comm::Communicator& c, const Held& mine) {
  const int n = c.world().size();
  constexpr size_t kEach = 4;
  std::vector<int64_t> all(kEach * static_cast<size_t>(n));
  const int64_t m[kEach] = {mine.whole_step, mine.reached, mine.history, mine.shard_step};
  c.all_gather(m, all.data(), kEach, DType::I64, c.world());
  const auto at = [&](int r) { return &all[kEach * static_cast<size_t>(r)]; };
  Agreement a;
  bool shards = true;
  int64_t newest_whole = -1;
  for (int r = 0; r < n; ++r) {
    const int64_t* h = at(r);
    a.reached = std::max(a.reached, h[1]);
    if (h[2] > at(a.history_root)[2]) a.history_root = r;
    shards = shards && h[3] >= 0 && h[3] == at(0)[3];
    newest_whole = std::max(newest_whole, h[0]);
    if (h[0] < 0) continue;
    const int64_t* best = a.root < 0 ? nullptr : at(a.root);
    if (!best || h[0] > best[0] || (h[0] == best[0] && h[2] > best[2])) a.root = r;
  }
  if (shards && at(0)[3] >= newest_whole) {
    a.shards = true;
    a.root = -1;
    a.step = at(0)[3];
  } else if (a.root >= 0) {
    a.step = at(a.root)[0];
    a.history_root = a.root;
  }
  return a;
}

void share_history(comm::Communicator& c, int root, nlohmann::ordered_json& history) {
  std::vector<uint8_t> bytes;
  if (c.rank() == root) bytes = nlohmann::ordered_json::to_cbor(history);
  int64_t size = static_cast<int64_t>(bytes.size());
  c.broadcast(&size, 1, DType::I64, root, c.world());
  bytes.resize(static_cast<size_t>(size));
  c.broadcast(bytes.data(), size, DType::U8, root, c.world());
  if (c.rank() != root) history = nlohmann::ordered_json::from_cbor(bytes);
}

}  // namespace tensoropt::elastic
