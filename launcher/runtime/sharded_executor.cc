#include "launcher/runtime/sharded_executor.h"

#include <algorithm>
#include <string>

#include "graph/error.h"
#include "graph/op_catalogue.h"
#include "planner/parallel/collectives.h"
#include "planner/parallel/redistribute.h"

namespace tensoropt::runtime {

using planner::Layout;
using planner::Placement;

Array home_shard(const Sharding& s, const Graph& g, int t, const Array& global, Backend& backend, MemoryKind kind) {
  const Shape& shape = g.tensors[static_cast<size_t>(t)].shape;
  const Layout r = Layout::replicated(s.where.mesh->ndim());
  return run_transition(global, planner::redistribute(shape, static_cast<int>(dtype_size(global.dtype())), r,
                                                      s.plan.home[static_cast<size_t>(t)], *s.where.mesh),
                        s.where, backend, kind);
}

ShardedExecutor::ShardedExecutor(const Graph& g, Backend& backend, std::map<int, Array>& state, const Sharding& sharding,
                                 LossKind loss, bool bf16)
    : g_(g), backend_(backend), state_(state), sh_(sharding), loss_(loss), bf16_(bf16) {
  TO_CHECK(sh_.where.mesh != nullptr && sh_.plan.mesh_axes == sh_.where.mesh->ndim() && sh_.plan.in.size() == g_.nodes.size() &&
           sh_.plan.home.size() == g_.tensors.size());
  for (const Node& n : g_.nodes) {
    const OpKernel* k = backend_.kernel(n.op_type);
    if (!k || !k->forward) throw InputError("node " + n.label() + ": op '" + n.op_type + "' has no " + std::string(backend_.name()) + " kernel yet");
    kernels_.push_back(k);
  }
  plan_ = step_schedule(g_, /*input_gradients=*/false, sh_.plan.recompute);
  check_backward_kernels(g_, kernels_, plan_, backend_.name());
  // A home value that some reader keeps as it is (its layout is the reader's) is an activation.
  home_kept_.assign(g_.tensors.size(), false);
  for (size_t i = 0; i < g_.nodes.size(); ++i) {
    for (size_t q = 0; q < g_.nodes[i].inputs.size(); ++q) {
      const int t = g_.nodes[i].inputs[q];
      if (t >= 0 && plan_.nodes[i].keep_input[q] && sh_.plan.in[i][q] == sh_.plan.home[static_cast<size_t>(t)]) home_kept_[static_cast<size_t>(t)] = true;
    }
  }
  if (g_.outputs.empty()) throw InputError(g_.source_path + ": the graph has no outputs");
  for (size_t i = 0; i < g_.nodes.size(); ++i)
    for (const auto& [o, q] : kernels_[i]->state_updates) {
      const int t = q >= 0 && q < static_cast<int>(g_.nodes[i].inputs.size()) ? g_.nodes[i].inputs[static_cast<size_t>(q)] : -1;
      if (t >= 0 && state_.count(t) && std::find(updated_buffers_.begin(), updated_buffers_.end(), t) == updated_buffers_.end())
        updated_buffers_.push_back(t);
    }
  setup_optimizer_weights();
  setup_buckets();
  const std::vector<int> coord = sh_.where.mesh->coords(sh_.where.rank);
  // Where each input's shard lies, for the kernels that need it (kernel.h, ShardInfo).
  shards_.resize(g_.nodes.size());
  for (size_t i = 0; i < g_.nodes.size(); ++i) {
    for (size_t q = 0; q < g_.nodes[i].inputs.size(); ++q) {
      const int t = g_.nodes[i].inputs[q];
      const Shape global = t >= 0 ? g_.tensors[static_cast<size_t>(t)].shape : Shape{};
      shards_[i].global.push_back(global);
      shards_[i].offset.push_back(t >= 0 ? planner::shard_offset(global, sh_.plan.in[i][q], *sh_.where.mesh, coord) : std::vector<int64_t>{});
    }
  }
}

Shape ShardedExecutor::local(int t, const Layout& l) const {
  return planner::local_shape(g_.tensors[static_cast<size_t>(t)].shape, l, *sh_.where.mesh, sh_.where.mesh->coords(sh_.where.rank));
}

Array ShardedExecutor::move(const Array& x, int t, const Layout& from, const Layout& to, MemoryKind kind, bool consume) {
  const Shape& shape = g_.tensors[static_cast<size_t>(t)].shape;
  return run_transition(x, planner::redistribute(shape, static_cast<int>(dtype_size(x.dtype())), from, to, *sh_.where.mesh), sh_.where,
                        backend_, kind, consume);
}

Array ShardedExecutor::move_gradient_back(const Array& grad, int t, const Layout& from, const Layout& to) {
  // The value went from -> to in forward; its gradient goes back by the dual plan.
  const Shape& shape = g_.tensors[static_cast<size_t>(t)].shape;
  const planner::RedistributePlan forward =
      planner::redistribute(shape, static_cast<int>(dtype_size(grad.dtype())), from, to, *sh_.where.mesh);
  return run_transition(grad, planner::backward_plan(forward, *sh_.where.mesh), sh_.where, backend_, MemoryKind::Transients);
}

std::pair<Layout, Layout> ShardedExecutor::loss_layouts() const {
  const int out = g_.outputs[0];
  const Layout& home = sh_.plan.home[static_cast<size_t>(out)];
  const int rank = static_cast<int>(g_.tensors[static_cast<size_t>(out)].shape.size());
  const bool ce = loss_ == LossKind::CrossEntropy;
  // The loss layout: partial sums reduced, and the class dimension whole for cross-entropy; the
  // target's: the same rows (labels have no class dimension).
  std::vector<Placement> lp = home.placements(), tp;
  for (Placement& p : lp) {
    if (p.is_partial() || (ce && p.is_shard(rank - 1))) p = Placement::replicate();
    tp.push_back(ce && p.is_shard() && p.dim() >= rank - 1 ? Placement::replicate() : p);
  }
  return {Layout(lp), Layout(tp)};
}

double ShardedExecutor::loss_and_gradient(const Array& tl) {
  const int out = g_.outputs[0];
  const Layout& home = sh_.plan.home[static_cast<size_t>(out)];
  const bool ce = loss_ == LossKind::CrossEntropy;
  const Layout loss_layout = loss_layouts().first;
  const Array& y = values_.at(out);
  Array yl = home == loss_layout ? y : move(y, out, home, loss_layout, MemoryKind::Transients);
  if (yl.dtype() == DType::BF16) yl = float32_copy(backend_, yl);  // the loss is computed in float32
  // Rows held by several workers (replicated axes) count at coordinate 0 of those axes only.
  const std::vector<int> coord = sh_.where.mesh->coords(sh_.where.rank);
  bool counts = true;
  for (int a = 0; a < loss_layout.size(); ++a) counts = counts && (!loss_layout[a].is_replicate() || coord[static_cast<size_t>(a)] == 0);
  Array dy(DType::F32, yl.shape(), backend_.allocator(), MemoryKind::Transients);
  const double mean = ce ? backend_.cross_entropy(yl, tl, &dy) : backend_.mse(yl, tl, &dy);
  double n = 0;
  if (ce) {
    std::vector<int64_t> labels(static_cast<size_t>(tl.numel()));
    backend_.read(tl, labels.data(), tl.bytes());
    for (int64_t l : labels) n += l >= 0;
  } else {
    n = static_cast<double>(yl.numel());
  }
  double totals[2] = {counts ? mean * n : 0.0, counts ? n : 0.0};
  sh_.where.comm->all_reduce(totals, 2, DType::F64, sh_.where.comm->world());
  if (counts && totals[1] > 0) backend_.scale(dy, n / totals[1]);
  else backend_.fill(dy, 0.0);
  if (plan_.requires_grad[static_cast<size_t>(out)]) {
    Array d = stored(dy, out, MemoryKind::Transients);
    grads_[out] = home == loss_layout ? d : move_gradient_back(d, out, home, loss_layout);
  }
  return totals[1] > 0 ? totals[0] / totals[1] : 0.0;
}

std::vector<Array> ShardedExecutor::run_node(size_t i, const std::vector<Array>& ins, const std::vector<MemoryKind>& kinds,
                                             const StepContext& ctx, bool updates) {
  const Node& n = g_.nodes[i];
  std::vector<const Array*> in;
  for (size_t q = 0; q < n.inputs.size(); ++q) in.push_back(n.inputs[q] < 0 ? nullptr : &ins[q]);
  std::vector<OutputSpec> outs(n.outputs.size());
  for (size_t o = 0; o < n.outputs.size(); ++o) {
    const int t = n.outputs[o];
    if (t < 0) continue;
    const Tensor& x = g_.tensors[static_cast<size_t>(t)];
    outs[o] = OutputSpec{true, local(t, sh_.plan.out[i][o]), runtime_dtype(x), storage_dtype(t), kinds[o]};
  }
  return forward_call(backend_, *kernels_[i], n, static_cast<int>(i), in, outs, states_[i], ctx, &shards_[i], updates ? &state_ : nullptr);
}

DType ShardedExecutor::storage_dtype(int t) const {
  const DType d = runtime_dtype(g_.tensors[static_cast<size_t>(t)]);
  return bf16_ && d == DType::F32 ? DType::BF16 : d;
}

Array ShardedExecutor::stored(const Array& a, int t, MemoryKind kind) const {
  if (a.dtype() == storage_dtype(t)) return a;
  Array r(storage_dtype(t), a.shape(), backend_.allocator(), kind);
  backend_.convert(a, r);
  return r;
}

const Array& ShardedExecutor::home_value(int t, const StepContext& ctx) {
  if (auto it = values_.find(t); it != values_.end()) return it->second;
  if (auto it = state_.find(t); it != state_.end()) return it->second;
  const int u = plan_.producer[static_cast<size_t>(t)];
  if (u < 0 || rerun_[static_cast<size_t>(u)]) {
    throw InternalError("sharded executor: tensor '" + g_.tensors[static_cast<size_t>(t)].name +
                        "' is needed in backward but was neither kept nor can be regenerated");
  }
  rerun(static_cast<size_t>(u), ctx);
  return values_.at(t);
}

Array ShardedExecutor::input_of(size_t i, size_t q, const StepContext& ctx) {
  if (kept_in_[i][q].defined()) return kept_in_[i][q];
  const int t = g_.nodes[i].inputs[q];
  const Layout& home = sh_.plan.home[static_cast<size_t>(t)];
  const Layout& need = sh_.plan.in[i][q];
  const Array& h = home_value(t, ctx);
  return home == need ? h : move(h, t, home, need, MemoryKind::Transients);
}

void ShardedExecutor::rerun(size_t i, const StepContext& ctx) {
  const Node& n = g_.nodes[i];
  const NodeSchedule& p = plan_.nodes[i];
  std::vector<Array> ins(n.inputs.size());
  for (size_t q = 0; q < n.inputs.size(); ++q) {
    if (n.inputs[q] < 0) continue;
    ins[q] = input_of(i, q, ctx);
    if (p.need_input[q]) kept_in_[i][q] = ins[q];
  }
  states_[i] = {};
  std::vector<Array> outs = run_node(i, ins, std::vector<MemoryKind>(n.outputs.size(), MemoryKind::Transients), ctx, false);
  for (size_t o = 0; o < n.outputs.size(); ++o) {
    const int t = n.outputs[o];
    if (t < 0) continue;
    if (p.need_output[o]) kept_out_[i][o] = outs[o];
    const Layout& home = sh_.plan.home[static_cast<size_t>(t)];
    values_.emplace(t, home == sh_.plan.out[i][o] ? outs[o] : move(outs[o], t, sh_.plan.out[i][o], home, MemoryKind::Transients));
  }
  rerun_[i] = true;
}

void ShardedExecutor::synchronise(int t) {
  const Layout& storage = sh_.plan.home[static_cast<size_t>(t)];
  auto full = full_grads_.find(t);
  if (auto f = flat_.find(t); f != flat_.end()) {
    Array g = full != full_grads_.end() ? full->second : Array(gradient_dtype(), local(t, storage), backend_.allocator(), MemoryKind::Transients);
    if (full == full_grads_.end()) backend_.fill(g, 0.0);
    root_grads_[t] = move_flat(g.view({f->second.size}), f->second.size, f->second.partial, f->second.split, MemoryKind::Gradients, true);
    if (full != full_grads_.end()) full_grads_.erase(full);
    return;
  }
  // Data parallelism: the parameter's bucket is all-reduced, in place, once all of it is complete.
  // The sum runs beside the rest of the backward (the communicator's async lane, in the order the
  // buckets complete, the same on every worker); train_step waits for every bucket at its end.
  Bucket& b = buckets_[static_cast<size_t>(bucket_of_.at(t))];
  if (++b.done < static_cast<int>(b.params.size())) return;
  for (int axis : b.axes) {
    const comm::Group group{sh_.where.mesh->group(sh_.where.rank, axis)};
    in_flight_.push_back(sh_.where.comm->all_reduce_async(b.buffer.raw(), b.buffer.numel(), b.buffer.dtype(), group));
  }
}

double ShardedExecutor::train_step(std::vector<Array> inputs, Array target, const StepContext& ctx) {
  begin_step();
  target = take_batch(inputs, std::move(target));
  std::vector<bool> is_output(g_.tensors.size(), false);
  for (int t : g_.outputs) is_output[static_cast<size_t>(t)] = true;
  for (size_t i = 0; i < g_.nodes.size(); ++i) forward_node(i, ctx, is_output);
  const double loss = loss_and_gradient(target);
  values_.clear();

  // Backward. A recomputing node runs its forward again; what a backward reads and nobody kept is
  // regenerated by its producers and moved into the layout the reader needs. A parameter's
  // gradient is synchronised as soon as it is complete (after the backward of its first reader).
  std::vector<std::vector<int>> done_after(g_.nodes.size());
  for (int t : plan_.roots) {
    const int d = plan_.gradient_done[static_cast<size_t>(t)];
    if (d >= 0) done_after[static_cast<size_t>(d)].push_back(t);
  }
  for (size_t i = g_.nodes.size(); i-- > 0;) {
    backward_node(i, ctx);
    for (int t : done_after[i]) synchronise(t);
    // Regenerated values live until no backward (or rerun) left reads them.
    for (auto it = values_.begin(); it != values_.end();) {
      const int until = plan_.earliest_need[static_cast<size_t>(it->first)];
      if (until >= 0 && until < static_cast<int>(i)) ++it;
      else it = values_.erase(it);
    }
  }
  values_.clear();
  // Parameters no backward reached (their gradient is zero) are synchronised last, in a fixed order.
  for (int t : plan_.roots)
    if (plan_.gradient_done[static_cast<size_t>(t)] < 0) synchronise(t);
  std::vector<std::unique_ptr<comm::Pending>> buckets = std::move(in_flight_);
  in_flight_.clear();
  for (auto& p : buckets) p->wait();
  return loss;
}

void ShardedExecutor::begin_step() {
  ++steps_begun_;
  if (keep_step_start_) {
    for (int t : updated_buffers_) {
      const Array& a = state_.at(t);
      auto it = step_start_.find(t);
      if (it == step_start_.end()) it = step_start_.emplace(t, Array(a.dtype(), a.shape(), backend_.allocator(), MemoryKind::Buffers)).first;
      Array dst = it->second.view({a.numel()});
      backend_.copy_slab(a.view({a.numel()}), 0, 0, dst, 0, a.numel());
    }
  }
  values_.clear();
  grads_.clear();
  full_grads_.clear();
  kept_in_.assign(g_.nodes.size(), {});
  kept_out_.assign(g_.nodes.size(), {});
  states_.assign(g_.nodes.size(), {});
  rerun_.assign(g_.nodes.size(), false);
  // Gradients accumulate in gradient_layout(storage): in their bucket, or under ZeRO-2 in a
  // transient buffer that lives from the first contribution to the reduce-scatter onto the chunk.
  in_flight_.clear();  // a step that threw left them: each waits for its collective as it goes
  for (Bucket& b : buckets_) {
    backend_.fill(b.buffer, 0.0);
    b.done = 0;
  }
}

void ShardedExecutor::rewind_buffers() {
  for (auto& [t, saved] : step_start_) {
    Array& a = state_.at(t);
    Array flat = a.view({a.numel()});
    backend_.copy_slab(saved.view({saved.numel()}), 0, 0, flat, 0, saved.numel());
  }
}

Array ShardedExecutor::take_batch(std::vector<Array>& inputs, Array target) {
  TO_CHECK(inputs.size() == g_.inputs.size());
  for (size_t k = 0; k < inputs.size(); ++k) {
    const int t = g_.inputs[k];
    const Tensor& x = g_.tensors[static_cast<size_t>(t)];
    if (inputs[k].shape() != x.shape || inputs[k].dtype() != runtime_dtype(x)) {
      throw InputError("input '" + x.name + "' is " + inputs[k].str() + ", the model takes " + std::string(dtype_name(runtime_dtype(x))) +
                       shape_str(x.shape));
    }
    // Under mixed precision the float inputs are stored as bfloat16 (converted whole, then sliced).
    values_[t] = home_shard(sh_, g_, t, stored(inputs[k], t, MemoryKind::Transients), backend_, MemoryKind::Inputs);
    inputs[k] = Array();  // the global batch: only this worker's shard stays
  }
  const Layout replicated = Layout::replicated(sh_.where.mesh->ndim());
  return run_transition(target,
                        planner::redistribute(target.shape(), static_cast<int>(dtype_size(target.dtype())), replicated,
                                              loss_layouts().second, *sh_.where.mesh),
                        sh_.where, backend_, MemoryKind::Inputs);
}

void ShardedExecutor::forward_node(size_t i, const StepContext& ctx, const std::vector<bool>& is_output) {
  // Each input in the layout the node's configuration needs (a moved copy when its home differs,
  // kept when the node keeps it), each output moved to its home.
  const Node& n = g_.nodes[i];
  const NodeSchedule& p = plan_.nodes[i];
  std::vector<Array> ins(n.inputs.size());
  kept_in_[i].resize(n.inputs.size());
  for (size_t q = 0; q < n.inputs.size(); ++q) {
    const int t = n.inputs[q];
    if (t < 0) continue;
    const Layout& home = sh_.plan.home[static_cast<size_t>(t)];
    const Layout& need = sh_.plan.in[i][q];
    // A parameter moved for this node (gathered from its shards) is not kept: its backward moves
    // it again, as FSDP gathers twice and the planner costs it (space.h, regathers()).
    const bool moved = !(home == need);
    const bool keep = p.keep_input[q] && !(moved && g_.tensors[static_cast<size_t>(t)].kind == TensorKind::Parameter);
    ins[q] = moved ? move(home_value(t, ctx), t, home, need, keep ? MemoryKind::Activations : MemoryKind::Transients) : home_value(t, ctx);
    if (keep) kept_in_[i][q] = ins[q];
  }
  std::vector<MemoryKind> kinds(n.outputs.size(), MemoryKind::Transients);
  for (size_t o = 0; o < n.outputs.size(); ++o) {
    const int t = n.outputs[o];
    if (t >= 0 && (p.keep_output[o] || (home_kept_[static_cast<size_t>(t)] && sh_.plan.home[static_cast<size_t>(t)] == sh_.plan.out[i][o]))) {
      kinds[o] = MemoryKind::Activations;
    }
  }
  std::vector<Array> outs = run_node(i, ins, kinds, ctx, ctx.training);
  if (p.recompute) states_[i] = {};
  kept_out_[i].resize(n.outputs.size());
  for (size_t o = 0; o < n.outputs.size(); ++o) {
    const int t = n.outputs[o];
    if (t < 0) continue;
    if (p.keep_output[o]) kept_out_[i][o] = outs[o];
    const Layout& home = sh_.plan.home[static_cast<size_t>(t)];
    values_[t] = home == sh_.plan.out[i][o] ? outs[o]
                                            : move(outs[o], t, sh_.plan.out[i][o], home,
                                                   home_kept_[static_cast<size_t>(t)] ? MemoryKind::Activations : MemoryKind::Transients);
  }
  for (int t : n.inputs) {
    if (t >= 0 && !is_output[static_cast<size_t>(t)] && plan_.last_forward_use[static_cast<size_t>(t)] <= static_cast<int>(i)) values_.erase(t);
  }
}

void ShardedExecutor::backward_node(size_t i, const StepContext& ctx) {
  const Node& n = g_.nodes[i];
  const NodeSchedule& p = plan_.nodes[i];
  std::vector<Array> douts(n.outputs.size());
  std::vector<const Array*> dout;
  bool any = false;
  for (size_t o = 0; o < n.outputs.size(); ++o) {
    const int t = n.outputs[o];
    auto it = t < 0 ? grads_.end() : grads_.find(t);
    if (it == grads_.end()) {
      dout.push_back(nullptr);
      continue;
    }
    const Layout& home = sh_.plan.home[static_cast<size_t>(t)];
    douts[o] = home == sh_.plan.out[i][o] ? it->second : move_gradient_back(it->second, t, sh_.plan.out[i][o], home);
    dout.push_back(&douts[o]);
    any = true;
  }
  if (p.backward && any) run_backward(i, dout, ctx);
  for (int t : n.outputs)
    if (t >= 0) grads_.erase(t);
  kept_in_[i].clear();
  kept_out_[i].clear();
  states_[i] = {};
}

void ShardedExecutor::run_backward(size_t i, std::vector<const Array*> dout, const StepContext& ctx) {
  const Node& n = g_.nodes[i];
  const NodeSchedule& p = plan_.nodes[i];
  if (p.recompute && !rerun_[i]) rerun(i, ctx);
  // Kernels read float32: bfloat16 saved tensors and gradients are handed over as copies.
  Float32Args f32(backend_, n.inputs.size() + 2 * n.outputs.size(), kernels_[i]->takes_bf16);
  for (auto& d : dout) d = f32(d);
  std::vector<const Array*> in, out;
  std::vector<Shape> in_shapes;
  for (size_t q = 0; q < n.inputs.size(); ++q) {
    const int t = n.inputs[q];
    if (t >= 0 && p.need_input[q] && !kept_in_[i][q].defined()) kept_in_[i][q] = input_of(i, q, ctx);
    in.push_back(t >= 0 && p.need_input[q] ? f32(&kept_in_[i][q]) : nullptr);
    in_shapes.push_back(t >= 0 ? local(t, sh_.plan.in[i][q]) : Shape{});
  }
  for (size_t o = 0; o < n.outputs.size(); ++o) out.push_back(n.outputs[o] >= 0 && p.need_output[o] ? f32(&kept_out_[i][o]) : nullptr);
  std::vector<Array> dins(n.inputs.size());
  std::vector<Array*> din;
  for (size_t q = 0; q < n.inputs.size(); ++q) {
    if (!p.input_grad[q]) {
      din.push_back(nullptr);
      continue;
    }
    dins[q] = Array(DType::F32, in_shapes[q], backend_.allocator(), MemoryKind::Transients);
    din.push_back(&dins[q]);
  }
  try {
    if (ctx.timer) ctx.timer->begin(n.op_type + " backward");
    kernels_[i]->backward(GradCall{n, static_cast<int>(i), in, out, dout, din, in_shapes, states_[i], ctx, &shards_[i]});
    if (ctx.timer) ctx.timer->end();
  } catch (const OutOfMemory& e) {
    throw e.with_context("node " + n.label() + " (backward)");
  }
  f32.clear();  // float32 copies: gone before the gradients are stored
  for (size_t q = 0; q < n.inputs.size(); ++q) {
    if (!p.input_grad[q]) continue;
    const int t = n.inputs[q];
    const Layout& home = sh_.plan.home[static_cast<size_t>(t)];
    // A gradient travels in its storage dtype (bfloat16 under mixed precision, as planned);
    // one that stays is accumulated from float32 directly (rounded once, as on one device).
    Array d = home == sh_.plan.in[i][q] ? dins[q] : move_gradient_back(stored(dins[q], t, MemoryKind::Transients), t, home, sh_.plan.in[i][q]);
    dins[q] = Array();
    add_gradient(t, d);
  }
}

void ShardedExecutor::add_gradient(int t, const Array& d) {
  if (flat_.count(t)) {
    auto it = full_grads_.find(t);
    if (it == full_grads_.end()) {
      it = full_grads_.emplace(t, Array(gradient_dtype(), d.shape(), backend_.allocator(), MemoryKind::Transients)).first;
      backend_.fill(it->second, 0.0);
    }
    backend_.accumulate(it->second, d);
  } else if (auto root = root_grads_.find(t); root != root_grads_.end()) {
    backend_.accumulate(root->second, d);
  } else if (auto it = grads_.find(t); it != grads_.end()) {
    backend_.accumulate(it->second, d);
  } else {
    grads_[t] = stored(d, t, MemoryKind::Transients);
  }
}

}  // namespace tensoropt::runtime
