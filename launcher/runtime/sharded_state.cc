// The sharded executor's model state (sharded_executor.h): what the optimizer updates (a local
// shard, or under ZeRO-2 this worker's chunk of it, and float32 masters under mixed precision), the
// gradient buckets DDP-style data parallelism all-reduces, the gather of ZeRO-2 chunks after each
// optimizer step, and the whole model gathered or scattered for checkpoints across strategies.
#include <algorithm>
#include <map>
#include <vector>

#include "graph/error.h"
#include "launcher/runtime/sharded_executor.h"
#include "planner/parallel/collectives.h"
#include "planner/parallel/redistribute.h"

namespace tensoropt::runtime {

using planner::Layout;

void ShardedExecutor::setup_optimizer_weights() {
  // What the optimizer updates: the local shard, or under ZeRO-2 this worker's chunk of it, flat.
  const std::vector<int> coord = sh_.where.mesh->coords(sh_.where.rank);
  for (int t : plan_.roots) {
    Array& w = state_.at(t);
    // Mixed precision: the optimizer updates a float32 master (of the local shard, or of this
    // worker's ZeRO-2 chunk: optimizer state, as the planner counts it); forward and backward read
    // a bfloat16 working copy, refreshed from the master after each optimizer step.
    const bool mixed = bf16_ && w.dtype() == DType::F32;
    Array master;
    if (mixed) {
      master = Array(DType::F32, w.shape(), backend_.allocator(), MemoryKind::OptimizerState);
      backend_.convert(w, master);
      Array working(DType::BF16, w.shape(), backend_.allocator(), MemoryKind::Parameters);
      backend_.convert(w, working);
      w = std::move(working);
    }
    if (!sh_.plan.zero[static_cast<size_t>(t)]) {
      optimizer_weights_[t] = mixed ? master : w;
      continue;
    }
    Flat f;
    const planner::ZeroFlat z = planner::zero_flat(sh_.plan.home[static_cast<size_t>(t)]);
    f.partial = z.gradient;
    f.split = z.chunk;
    f.whole = z.whole;
    f.size = w.numel();
    f.offset = planner::shard_offset({f.size}, f.split, *sh_.where.mesh, coord)[0];
    f.length = planner::local_shape({f.size}, f.split, *sh_.where.mesh, coord)[0];
    if (mixed) {
      // Only this worker's chunk of the master is kept.
      Array chunk(DType::F32, {f.length}, backend_.allocator(), MemoryKind::OptimizerState);
      backend_.copy_slab(master.view({f.size}), 0, f.offset, chunk, 0, f.length);
      optimizer_weights_[t] = chunk;
    } else {
      optimizer_weights_[t] = w.view({f.size}).view_at(f.offset, {f.length});
    }
    flat_[t] = f;
  }
}

void ShardedExecutor::setup_buckets() {
  // Gradient buckets (data parallelism: every parameter without ZeRO-2), as DDP packs them and the
  // planner costs them (collectives.h, kGradientBucketBytes): in the order backward completes the
  // gradients, parameters whose gradients are all-reduced over the same mesh axes share a buffer of
  // at most one bucket's bytes (a larger parameter has its own); each gradient is a view into it.
  std::vector<int> order;
  for (int t : plan_.roots)
    if (!flat_.count(t)) order.push_back(t);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    const int da = plan_.gradient_done[static_cast<size_t>(a)], db = plan_.gradient_done[static_cast<size_t>(b)];
    return (da < 0 ? -1 : da) > (db < 0 ? -1 : db);  // backward reaches larger node indices first; unreached last
  });
  std::map<std::vector<int>, int> open;  // axes -> the bucket being filled
  std::vector<int64_t> elements;
  for (int t : order) {
    std::vector<int> axes;
    const Layout& storage = sh_.plan.home[static_cast<size_t>(t)];
    for (int a = 0; a < storage.size(); ++a)
      if (storage[a].is_replicate()) axes.push_back(a);
    const int64_t n = numel(local(t, storage));
    const auto bytes = static_cast<double>(n * dtype_size(gradient_dtype()));
    auto it = open.find(axes);
    if (it == open.end() || (elements[static_cast<size_t>(it->second)] > 0 &&
                             static_cast<double>(elements[static_cast<size_t>(it->second)] * dtype_size(gradient_dtype())) + bytes >
                                 planner::kGradientBucketBytes)) {
      buckets_.push_back(Bucket{axes, {}, Array(), 0});
      elements.push_back(0);
      it = open.insert_or_assign(axes, static_cast<int>(buckets_.size()) - 1).first;
    }
    buckets_[static_cast<size_t>(it->second)].params.push_back(t);
    bucket_of_[t] = it->second;
    elements[static_cast<size_t>(it->second)] += n;
  }
  for (size_t b = 0; b < buckets_.size(); ++b) {
    buckets_[b].buffer = Array(gradient_dtype(), {elements[b]}, backend_.allocator(), MemoryKind::Gradients);
    int64_t at = 0;
    for (int t : buckets_[b].params) {
      const Shape shape = local(t, sh_.plan.home[static_cast<size_t>(t)]);
      root_grads_[t] = buckets_[b].buffer.view_at(at, shape);
      at += numel(shape);
    }
  }
}

Array ShardedExecutor::move_flat(const Array& x, int64_t size, const Layout& from, const Layout& to, MemoryKind kind, bool consume) {
  return run_transition(x, planner::redistribute({size}, static_cast<int>(dtype_size(x.dtype())), from, to, *sh_.where.mesh), sh_.where,
                        backend_, kind, consume);
}

void ShardedExecutor::after_optimizer_step() {
  for (int t : plan_.roots) {
    const Array& master = optimizer_weights_.at(t);
    Array& w = state_.at(t);
    auto f = flat_.find(t);
    if (f == flat_.end()) {
      if (master.dtype() != w.dtype()) backend_.convert(master, w);  // the working copy follows its master
      continue;
    }
    // ZeRO-2: every worker's updated chunk, gathered (in the working dtype) into the local shard.
    Array chunk = master;
    if (master.dtype() != w.dtype()) {
      chunk = Array(w.dtype(), master.shape(), backend_.allocator(), MemoryKind::Transients);
      backend_.convert(master, chunk);
    }
    Array whole = move_flat(chunk, f->second.size, f->second.split, f->second.whole, MemoryKind::Transients);
    Array flat = w.view({f->second.size});
    backend_.copy_slab(whole, 0, 0, flat, 0, f->second.size);
  }
}

Array ShardedExecutor::whole_gradient(int t) {
  const Layout& storage = sh_.plan.home[static_cast<size_t>(t)];
  return move(local_from_optimizer(t, root_grads_.at(t)), t, storage, Layout::replicated(sh_.where.mesh->ndim()), MemoryKind::Transients);
}

// Parameter t's local shard from what the optimizer holds for it (its ZeRO-2 chunk, gathered).
Array ShardedExecutor::local_from_optimizer(int t, const Array& a) {
  auto f = flat_.find(t);
  if (f == flat_.end()) return a;
  return move_flat(a, f->second.size, f->second.split, f->second.whole, MemoryKind::Transients)
      .view(local(t, sh_.plan.home[static_cast<size_t>(t)]));
}

std::optional<LocalShards> ShardedExecutor::local_shards(const Optimizer& optimizer, bool gather) {
  LocalShards mine;
  for (int t : plan_.roots) {
    if (flat_.count(t) && !gather) return std::nullopt;
    // The optimizer's weights: the float32 master under mixed precision, else the shard itself.
    mine.params[t] = optimizer_weights_.at(t).dtype() != state_.at(t).dtype() ? local_from_optimizer(t, optimizer_weights_.at(t)) : state_.at(t);
    auto& slots = mine.slots[t];
    for (const Array& a : optimizer.state().at(t)) slots.push_back(local_from_optimizer(t, a));
  }
  return mine;
}

std::map<int, Array> ShardedExecutor::gather_whole(const Optimizer& optimizer, std::map<int, std::vector<Array>>& state) {
  const Layout replicated = Layout::replicated(sh_.where.mesh->ndim());
  LocalShards mine = *local_shards(optimizer, true);
  std::map<int, Array> whole = gather_buffers();
  for (int t : plan_.roots) {
    const Layout& home = sh_.plan.home[static_cast<size_t>(t)];
    whole[t] = move(mine.params.at(t), t, home, replicated, MemoryKind::Transients);
    auto& slots = state[t];
    for (const Array& a : mine.slots.at(t)) slots.push_back(move(a, t, home, replicated, MemoryKind::Transients));
  }
  return whole;
}

std::map<int, Array> ShardedExecutor::gather_buffers() {
  const Layout replicated = Layout::replicated(sh_.where.mesh->ndim());
  std::map<int, Array> whole;
  // Buffers: in the layout their first reader needs (its shard at its offset in the whole array).
  for (auto& [t, a] : state_) {
    const Tensor& x = g_.tensors[static_cast<size_t>(t)];
    if (x.kind != TensorKind::Buffer) continue;
    Layout spread = replicated;
    for (size_t i = 0; i < g_.nodes.size() && spread == replicated; ++i)
      for (size_t q = 0; q < g_.nodes[i].inputs.size(); ++q)
        if (g_.nodes[i].inputs[q] == t) spread = sh_.plan.in[i][q];
    if (spread == replicated) {
      // Worker 0's copy, broadcast to every worker into a copy of its own (the buffer itself stays).
      Array mine(a.dtype(), a.shape(), backend_.allocator(), MemoryKind::Transients);
      Array flat = mine.view({mine.numel()});
      backend_.copy_slab(a.view({a.numel()}), 0, 0, flat, 0, a.numel());
      sh_.where.comm->broadcast(mine.raw(), mine.numel(), mine.dtype(), 0, sh_.where.comm->world());
      whole[t] = mine;
      continue;
    }
    Array shard = move(a, t, replicated, spread, MemoryKind::Transients);  // my slice (no communication)
    whole[t] = move(shard, t, spread, replicated, MemoryKind::Transients);
  }
  return whole;
}

std::optional<std::map<int, Array>> ShardedExecutor::local_whole(const Optimizer& optimizer, std::map<int, std::vector<Array>>& state) const {
  const Layout replicated = Layout::replicated(sh_.where.mesh->ndim());
  for (int t : plan_.roots)
    if (sh_.plan.home[static_cast<size_t>(t)] != replicated || flat_.count(t)) return std::nullopt;
  for (size_t i = 0; i < g_.nodes.size(); ++i)
    for (size_t q = 0; q < g_.nodes[i].inputs.size(); ++q) {
      const int t = g_.nodes[i].inputs[q];
      if (t >= 0 && g_.tensors[static_cast<size_t>(t)].kind == TensorKind::Buffer && sh_.plan.in[i][q] != replicated) return std::nullopt;
    }
  std::map<int, Array> whole;
  for (int t : plan_.roots) {
    whole[t] = optimizer_weights_.at(t);  // the float32 master under mixed precision, else the parameter itself
    state[t] = optimizer.state().at(t);
  }
  for (const auto& [t, a] : state_)
    if (g_.tensors[static_cast<size_t>(t)].kind == TensorKind::Buffer) whole[t] = a;
  return whole;
}

void ShardedExecutor::scatter_state(const std::map<int, std::vector<Array>>& whole, Optimizer& optimizer, bool local) {
  for (auto& [t, slots] : optimizer.state()) {
    const std::vector<Array>& from = whole.at(t);
    TO_CHECK(from.size() == slots.size());
    for (size_t k = 0; k < slots.size(); ++k) {
      Array shard = local ? from[k] : home_shard(sh_, g_, t, from[k], backend_, MemoryKind::Transients);
      const int64_t at = flat_.count(t) ? flat_.at(t).offset : 0;
      Array flat = slots[k].view({slots[k].numel()});
      backend_.copy_slab(shard.view({shard.numel()}), 0, at, flat, 0, slots[k].numel());
    }
  }
}

const Array& ShardedExecutor::gradient(int tensor) const {
  auto it = root_grads_.find(tensor);
  TO_CHECK(it != root_grads_.end());
  return it->second;
}

}  // namespace tensoropt::runtime
