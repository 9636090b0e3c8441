#include "launcher/runtime/transition.h"

#include <string>
#include <vector>

#include "graph/error.h"
#include "planner/parallel/layout.h"

namespace tensoropt::runtime {
namespace {

using planner::Layout;
using planner::Placement;
using planner::Step;
using planner::StepKind;

// The ceil rule's chunks of a dimension of n split p ways (layout.h).
struct Chunks {
  int64_t n;
  int p;
  int64_t len(int m) const { return planner::chunk_size(n, p, m); }
  int64_t lo(int m) const { return planner::chunk_offset(n, p, m); }
};

// dst = src, element for element (same dtype and element count).
void copy_all(Backend& backend, const Array& src, Array& dst) {
  Array flat = dst.view({dst.numel()});
  backend.copy_slab(src.view({src.numel()}), 0, 0, flat, 0, src.numel());
}

Shape with_dim(Shape s, int d, int64_t v) {
  s[static_cast<size_t>(d)] = v;
  return s;
}

// One step of a plan on this worker's shard.
class StepRunner {
 public:
  StepRunner(const planner::RedistributePlan& plan, const MeshContext& where, Backend& backend, DType dtype)
      : plan_(plan), where_(where), backend_(backend), dtype_(dtype), coord_(where.mesh->coords(where.rank)) {}

  // `layout` is the shard's layout before the step; `out` is the kind of the step's result; `owned`:
  // x may be overwritten.
  Array run(const Array& x, const Step& step, const Layout& layout, MemoryKind out, bool owned) {
    const int axis = step.mesh_axis;
    const comm::Group group{where_.mesh->group(where_.rank, axis)};
    const int p = group.size(), k = coord_[static_cast<size_t>(axis)];
    // The size of dimension d on this axis before the axis splits it.
    auto parent = [&](int d) {
      return planner::local_shape(plan_.shape, layout.with(axis, Placement::replicate()), *where_.mesh, coord_)[static_cast<size_t>(d)];
    };
    const Shape& xs = x.shape();
    switch (step.kind) {
      case StepKind::LocalSlice: {
        const int j = step.to.dim();
        const Chunks ch{x.dim(j), p};
        Array y = alloc(with_dim(xs, j, ch.len(k)), out);
        backend_.copy_slab(x, j, ch.lo(k), y, 0, ch.len(k));
        return y;
      }
      case StepKind::LocalPad: {
        const int i = step.from.dim();
        const Chunks ch{parent(i), p};
        Array y = alloc(with_dim(xs, i, ch.n), out);
        backend_.fill(y, 0.0);
        backend_.copy_slab(x, i, 0, y, ch.lo(k), ch.len(k));
        return y;
      }
      case StepKind::LocalPartial: {
        Array y = k == 0 ? copy_of(x, out) : alloc(xs, out);
        if (k != 0) backend_.fill(y, 0.0);
        return y;
      }
      case StepKind::AllReduce: {
        Array y = owned ? x : copy_of(x, out);
        where_.comm->all_reduce(y.raw(), y.numel(), y.dtype(), group);
        return y;
      }
      case StepKind::AllGather: {
        const int i = step.from.dim();
        const Chunks ch{parent(i), p};
        std::vector<int64_t> counts;
        for (int m = 0; m < p; ++m) counts.push_back(numel(with_dim(xs, i, ch.len(m))));
        const bool direct = planner::outer_size(xs, i) == 1;  // the gathered chunks are the result
        Array all = alloc({sum(counts)}, direct ? out : MemoryKind::Transients);
        where_.comm->all_gather_v(x.raw(), all.raw(), counts, x.dtype(), group);
        return direct ? all.view(with_dim(xs, i, ch.n)) : unpack(all, xs, i, ch, out);
      }
      case StepKind::ReduceScatter: {
        const int j = step.to.dim();
        const Chunks ch{x.dim(j), p};
        std::vector<int64_t> counts;
        Array packed = pack(x, j, ch, counts);
        Array y = alloc(with_dim(xs, j, ch.len(k)), out);
        where_.comm->reduce_scatter_v(packed.raw(), y.raw(), counts, x.dtype(), group);
        return y;
      }
      case StepKind::AllToAll: {
        const int i = step.from.dim(), j = step.to.dim();
        const Chunks ci{parent(i), p}, cj{x.dim(j), p};
        std::vector<int64_t> send, recv;
        Array packed = pack(x, j, cj, send);
        const Shape mine = with_dim(xs, j, cj.len(k));  // my chunk of j, member m's chunk of i
        for (int m = 0; m < p; ++m) recv.push_back(numel(with_dim(mine, i, ci.len(m))));
        const bool direct = planner::outer_size(mine, i) == 1;
        Array got = alloc({sum(recv)}, direct ? out : MemoryKind::Transients);
        where_.comm->all_to_all_v(packed.raw(), send, got.raw(), recv, x.dtype(), group);
        return direct ? got.view(with_dim(mine, i, ci.n)) : unpack(got, mine, i, ci, out);
      }
    }
    throw InternalError("run_transition: unknown step " + step.str());
  }

 private:
  Array alloc(Shape s, MemoryKind kind) { return Array(dtype_, std::move(s), backend_.allocator(), kind); }

  Array copy_of(const Array& x, MemoryKind kind) {
    Array y = alloc(x.shape(), kind);
    copy_all(backend_, x, y);
    return y;
  }

  // x's chunks of dimension d one after the other, chunk m's element count in counts[m]: x itself
  // when they already are.
  Array pack(const Array& x, int d, const Chunks& ch, std::vector<int64_t>& counts) {
    if (planner::outer_size(x.shape(), d) == 1) {
      for (int m = 0; m < ch.p; ++m) counts.push_back(numel(with_dim(x.shape(), d, ch.len(m))));
      return x.view({x.numel()});
    }
    Array packed = alloc({x.numel()}, MemoryKind::Transients);
    int64_t at = 0;
    for (int m = 0; m < ch.p; ++m) {
      const Shape piece = with_dim(x.shape(), d, ch.len(m));
      Array dst = packed.view_at(at, piece);
      backend_.copy_slab(x, d, ch.lo(m), dst, 0, ch.len(m));
      counts.push_back(numel(piece));
      at += counts.back();
    }
    return packed;
  }

  // The inverse of pack: `flat` holds the chunks of dimension d one after the other, each of
  // `piece`'s shape with dimension d the chunk's length; concatenated along d into a new array.
  Array unpack(const Array& flat, const Shape& piece, int d, const Chunks& ch, MemoryKind kind) {
    Array y = alloc(with_dim(piece, d, ch.n), kind);
    int64_t at = 0;
    for (int m = 0; m < ch.p; ++m) {
      const Shape part = with_dim(piece, d, ch.len(m));
      backend_.copy_slab(flat.view_at(at, part), d, 0, y, ch.lo(m), ch.len(m));
      at += numel(part);
    }
    return y;
  }

  static int64_t sum(const std::vector<int64_t>& v) {
    int64_t s = 0;
    for (int64_t x : v) s += x;
    return s;
  }

  const planner::RedistributePlan& plan_;
  const MeshContext& where_;
  Backend& backend_;
  DType dtype_;
  std::vector<int> coord_;
};

}  // namespace

Array run_transition(const Array& local, const planner::RedistributePlan& plan, const MeshContext& where, Backend& backend,
                     MemoryKind kind, bool consume_input) {
  TO_CHECK(where.mesh != nullptr && where.comm != nullptr);
  const std::vector<int> coord = where.mesh->coords(where.rank);
  const Shape expected = planner::local_shape(plan.shape, plan.from, *where.mesh, coord);
  if (local.shape() != expected) {
    throw InternalError("run_transition: rank " + std::to_string(where.rank) + " holds " + local.str() + ", layout " +
                        plan.from.str() + " of " + shape_str(plan.shape) + " gives it " + shape_str(expected));
  }
  StepRunner runner(plan, where, backend, local.dtype());
  Array x = local;
  Layout layout = plan.from;
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const Step& step = plan.steps[s];
    const bool last = s + 1 == plan.steps.size();
    x = runner.run(x, step, layout, last ? kind : MemoryKind::Transients, s > 0 || consume_input);
    layout = layout.with(step.mesh_axis, step.to);
  }
  if (plan.steps.empty() && local.kind() != kind) {
    Array y(local.dtype(), local.shape(), backend.allocator(), kind);
    copy_all(backend, local, y);
    return y;
  }
  return x;
}

}  // namespace tensoropt::runtime
