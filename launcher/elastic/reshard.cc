#include "launcher/elastic/reshard.h"

#include <algorithm>
#include <map>

#include "graph/error.h"

namespace tensoropt::elastic {
namespace {

using runtime::Array;

// A box of a global tensor: its first element and its size per dimension.
struct Box {
  std::vector<int64_t> at, size;
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : size) n *= d;
    return n;
  }
  bool operator==(const Box&) const = default;
  bool operator<(const Box& o) const { return std::tie(at, size) < std::tie(o.at, o.size); }
};

Box box_of(const Shape& shape, const Holding& h, int t, int rank) {
  const std::vector<int> coord = h.mesh.coords(rank);
  const planner::Layout& l = h.home[static_cast<size_t>(t)];
  return {planner::shard_offset(shape, l, h.mesh, coord), planner::local_shape(shape, l, h.mesh, coord)};
}

Box intersect(const Box& a, const Box& b) {
  Box r = a;
  for (size_t d = 0; d < a.at.size(); ++d) {
    const int64_t lo = std::max(a.at[d], b.at[d]), hi = std::min(a.at[d] + a.size[d], b.at[d] + b.size[d]);
    r.at[d] = lo;
    r.size[d] = std::max<int64_t>(0, hi - lo);
  }
  return r;
}

// The part of `src` (holding box `held`) that box `want` covers, as an array of want's size.
Array extract(runtime::Backend& backend, const Array& src, const Box& held, const Box& want) {
  Array cur = src;
  for (size_t d = 0; d < want.size.size(); ++d) {
    if (want.size[d] == cur.shape()[d]) continue;
    Shape s = cur.shape();
    s[d] = want.size[d];
    Array next(cur.dtype(), s, backend.allocator(), runtime::MemoryKind::Transients);
    backend.copy_slab(cur, static_cast<int>(d), want.at[d] - held.at[d], next, 0, want.size[d]);
    cur = next;
  }
  return cur;
}

// `piece` into `dst` at offsets `at` (per dimension, in dst's coordinates).
void place(runtime::Backend& backend, const Array& piece, Array& dst, std::vector<int64_t> at) {
  std::vector<size_t> dims;
  for (size_t d = 0; d < at.size(); ++d)
    if (piece.shape()[d] != dst.shape()[d]) dims.push_back(d);
  if (dims.empty()) {
    Array flat = dst.view({dst.numel()});
    backend.copy_slab(piece.view({piece.numel()}), 0, 0, flat, 0, piece.numel());
    return;
  }
  const size_t d = dims.front();
  const int dim = static_cast<int>(d);
  if (dims.size() == 1) {
    backend.copy_slab(piece, dim, 0, dst, at[d], piece.shape()[d]);
    return;
  }
  // Several dimensions narrower: the slab of dst along the first, placed into, then written back.
  Shape s = dst.shape();
  s[d] = piece.shape()[d];
  Array slab(dst.dtype(), s, backend.allocator(), runtime::MemoryKind::Transients);
  backend.copy_slab(dst, dim, at[d], slab, 0, piece.shape()[d]);
  const int64_t from = at[d];
  at[d] = 0;
  place(backend, piece, slab, at);
  backend.copy_slab(slab, dim, 0, dst, from, piece.shape()[d]);
}

// One piece of the exchange: tensor t's item k (0 the parameter, 1.. its slots), box `box`, from
// rank `from` to rank `to`.
struct Piece {
  int t = 0, k = 0, from = 0, to = 0;
  Box box;
};

}  // namespace

runtime::LocalShards reshard(comm::Communicator& c, runtime::Backend& backend, const Graph& g, const Holding& from, const Holding& to,
                             const runtime::LocalShards& mine) {
  const int me = c.rank(), world = c.world().size();
  TO_CHECK(from.workers <= world && to.workers <= world && from.workers > 0);
  // What moves, from rank 0: the slot count, then per parameter its tensor and the dtypes of the
  // parameter and its slots (bounded by the graph's tensor count).
  std::vector<int64_t> head(2 + 3 * g.tensors.size(), 0);
  if (me == 0) {
    head[0] = mine.slots.empty() ? 0 : static_cast<int64_t>(mine.slots.begin()->second.size());
    head[1] = static_cast<int64_t>(mine.params.size());
    size_t at = 2;
    for (const auto& [t, a] : mine.params) {
      head[at++] = t;
      head[at++] = static_cast<int64_t>(a.dtype());
      const std::vector<Array>& slots = mine.slots.at(t);
      head[at++] = static_cast<int64_t>(slots.empty() ? a.dtype() : slots.front().dtype());
    }
  }
  c.broadcast(head.data(), static_cast<int64_t>(head.size()), DType::I64, 0, c.world());
  const int items = 1 + static_cast<int>(head[0]);
  struct Moved {
    int t;
    DType param, slot;
  };
  std::vector<Moved> moved;
  for (int64_t i = 0; i < head[1]; ++i)
    moved.push_back({static_cast<int>(head[2 + 3 * i]), static_cast<DType>(head[3 + 3 * i]), static_cast<DType>(head[4 + 3 * i])});

  // Every piece, in an order every rank agrees on: tensor, item, receiver, sender.
  std::vector<Piece> pieces;
  for (const Moved& m : moved) {
    const Shape& shape = g.tensors[static_cast<size_t>(m.t)].shape;
    std::map<Box, std::vector<int>> holders;  // each distinct old box, and the old ranks holding it
    for (int r = 0; r < from.workers; ++r) holders[box_of(shape, from, m.t, r)].push_back(r);
    for (int q = 0; q < to.workers; ++q) {
      const Box want = box_of(shape, to, m.t, q);
      for (const auto& [held, ranks] : holders) {
        const Box part = intersect(want, held);
        if (part.numel() == 0) continue;
        const int sender = std::find(ranks.begin(), ranks.end(), q) != ranks.end() ? q : ranks[static_cast<size_t>(q) % ranks.size()];
        for (int k = 0; k < items; ++k) pieces.push_back({m.t, k, sender, q, part});
      }
    }
  }
  const auto dtype_of = [&](int t, int k) {
    for (const Moved& m : moved)
      if (m.t == t) return k == 0 ? m.param : m.slot;
    throw InternalError("reshard: tensor " + std::to_string(t) + " is not moved");
  };
  const auto held_item = [&](int t, int k) -> const Array& { return k == 0 ? mine.params.at(t) : mine.slots.at(t).at(static_cast<size_t>(k - 1)); };

  runtime::LocalShards out;
  if (me < to.workers) {
    for (const Moved& m : moved) {
      const Box want = box_of(g.tensors[static_cast<size_t>(m.t)].shape, to, m.t, me);
      out.params[m.t] = Array(m.param, want.size, backend.allocator(), runtime::MemoryKind::Parameters);
      for (int k = 1; k < items; ++k) out.slots[m.t].emplace_back(m.slot, want.size, backend.allocator(), runtime::MemoryKind::OptimizerState);
    }
  }
  // One exchange per dtype.
  std::vector<DType> dtypes;
  for (const Moved& m : moved)
    for (DType d : {m.param, m.slot})
      if (std::find(dtypes.begin(), dtypes.end(), d) == dtypes.end() && (d == m.param || items > 1)) dtypes.push_back(d);
  for (DType dtype : dtypes) {
    std::vector<int64_t> send(static_cast<size_t>(world), 0), recv(static_cast<size_t>(world), 0);
    for (const Piece& p : pieces) {
      if (dtype_of(p.t, p.k) != dtype) continue;
      if (p.from == me) send[static_cast<size_t>(p.to)] += p.box.numel();
      if (p.to == me) recv[static_cast<size_t>(p.from)] += p.box.numel();
    }
    int64_t sent = 0, received = 0;
    for (int r = 0; r < world; ++r) {
      sent += send[static_cast<size_t>(r)];
      received += recv[static_cast<size_t>(r)];
    }
    Array out_buf(dtype, {std::max<int64_t>(sent, 1)}, backend.allocator(), runtime::MemoryKind::Transients);
    Array in_buf(dtype, {std::max<int64_t>(received, 1)}, backend.allocator(), runtime::MemoryKind::Transients);
    // Packed by receiver, then in the pieces' order.
    std::vector<int64_t> offset(static_cast<size_t>(world), 0);
    for (int r = 1; r < world; ++r) offset[static_cast<size_t>(r)] = offset[static_cast<size_t>(r) - 1] + send[static_cast<size_t>(r) - 1];
    for (const Piece& p : pieces) {
      if (p.from != me || dtype_of(p.t, p.k) != dtype) continue;
      const Array& src = held_item(p.t, p.k);
      const Box held = box_of(g.tensors[static_cast<size_t>(p.t)].shape, from, p.t, me);
      const Array part = extract(backend, src, held, p.box);
      int64_t& at = offset[static_cast<size_t>(p.to)];
      backend.copy_slab(part.view({part.numel()}), 0, 0, out_buf, at, part.numel());
      at += part.numel();
    }
    c.all_to_all_v(out_buf.raw(), send, in_buf.raw(), recv, dtype, c.world());
    std::vector<int64_t> from_at(static_cast<size_t>(world), 0);
    for (int r = 1; r < world; ++r) from_at[static_cast<size_t>(r)] = from_at[static_cast<size_t>(r) - 1] + recv[static_cast<size_t>(r) - 1];
    for (const Piece& p : pieces) {
      if (p.to != me || dtype_of(p.t, p.k) != dtype) continue;
      Array piece(dtype, p.box.size, backend.allocator(), runtime::MemoryKind::Transients);
      int64_t& at = from_at[static_cast<size_t>(p.from)];
      Array flat = piece.view({piece.numel()});
      backend.copy_slab(in_buf, 0, at, flat, 0, piece.numel());
      at += piece.numel();
      Array& dst = p.k == 0 ? out.params.at(p.t) : out.slots.at(p.t).at(static_cast<size_t>(p.k - 1));
      const Box want = box_of(g.tensors[static_cast<size_t>(p.t)].shape, to, p.t, me);
      std::vector<int64_t> rel(p.box.at.size());
      for (size_t d = 0; d < rel.size(); ++d) rel[d] = p.box.at[d] - want.at[d];
      place(backend, piece, dst, rel);
    }
  }
  return out;
}

}  // namespace tensoropt::elastic
