#include "launcher/runtime/sharded_executor.h"

#include <algorithm>
#include <set>
#include <string>

#include "graph/error.h"
#include "graph/op_catalogue.h"
#include "planner/parallel/redistribute.h"

namespace tensoropt::runtime {
namespace {

using planner::Layout;
using planner::Placement;

bool listed(const std::vector<int>& v, int x) { return std::find(v.begin(), v.end(), x) != v.end(); }

// Per axis of a tensor of `global` shape: the first index of the shard at `coord` in `layout`
// (nested chunks in mesh-axis order, layout.h).
std::vector<int64_t> shard_offset(const Shape& global, const Layout& layout, const planner::DeviceMesh& mesh,
                                  const std::vector<int>& coord) {
  std::vector<int64_t> offset(global.size(), 0);
  Shape size = global;
  for (int a = 0; a < layout.size(); ++a) {
    if (!layout[a].is_shard()) continue;
    const auto d = static_cast<size_t>(layout[a].dim());
    const int p = mesh.axis(a).size, k = coord[static_cast<size_t>(a)];
    const int64_t c = (size[d] + p - 1) / p;
    offset[d] += std::min(static_cast<int64_t>(k) * c, size[d]);
    size[d] = planner::chunk_size(size[d], p, k);
  }
  return offset;
}

}  // namespace

Sharding sharding_of(const planner::StrategySpace& space, const std::vector<int>& assignment, const MeshContext& where) {
  const Graph& g = space.graph();
  const int axes = space.mesh().ndim();
  TO_CHECK(where.mesh != nullptr && where.mesh->ndim() == axes && assignment.size() == space.variables().size());
  Sharding s;
  s.where = where;
  s.in.resize(g.nodes.size());
  s.out.resize(g.nodes.size());
  s.home.assign(g.tensors.size(), Layout::replicated(axes));
  s.zero.assign(g.tensors.size(), false);
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    s.in[n].assign(g.nodes[n].inputs.size(), Layout::replicated(axes));
    s.out[n].assign(g.nodes[n].outputs.size(), Layout::replicated(axes));
  }
  std::set<int> has_variable;
  for (size_t v = 0; v < assignment.size(); ++v) {
    const planner::Variable& var = space.variables()[v];
    const planner::VarConfig& c = var.configs.at(static_cast<size_t>(assignment[v]));
    if (var.kind != planner::VarKind::Op) {
      s.home[static_cast<size_t>(var.tensor)] = c.layout;
      s.zero[static_cast<size_t>(var.tensor)] = var.kind == planner::VarKind::Parameter && c.zero == 2;
      has_variable.insert(var.tensor);
      continue;
    }
    const planner::OpConfig& oc = var.op_configs.at(static_cast<size_t>(c.op_config));
    s.in[static_cast<size_t>(var.node)] = oc.inputs;
    s.out[static_cast<size_t>(var.node)] = oc.outputs;
  }
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const Node& node = g.nodes[n];
    for (size_t o = 0; o < node.outputs.size(); ++o) {
      const int t = node.outputs[o];
      if (t >= 0 && !has_variable.count(t)) s.home[static_cast<size_t>(t)] = s.out[n][o];
    }
  }
  return s;
}

Array home_shard(const Sharding& s, const Graph& g, int t, const Array& global, Backend& backend, MemoryKind kind) {
  const Shape& shape = g.tensors[static_cast<size_t>(t)].shape;
  const Layout r = Layout::replicated(s.where.mesh->ndim());
  return run_transition(global, planner::redistribute(shape, static_cast<int>(dtype_size(global.dtype())), r,
                                                      s.home[static_cast<size_t>(t)], *s.where.mesh),
                        s.where, backend, kind);
}

ShardedExecutor::ShardedExecutor(const Graph& g, Backend& backend, std::map<int, Array>& state, const Sharding& sharding,
                                 LossKind loss)
    : g_(g), backend_(backend), state_(state), sh_(sharding), loss_(loss) {
  const size_t nt = g_.tensors.size();
  requires_grad_.assign(nt, false);
  last_forward_use_.assign(nt, -1);
  for (size_t t = 0; t < nt; ++t) {
    if (g_.tensors[t].kind == TensorKind::Parameter) {
      requires_grad_[t] = true;
      roots_.push_back(static_cast<int>(t));
    }
  }
  input_grad_.resize(g_.nodes.size());
  need_in_.resize(g_.nodes.size());
  need_out_.resize(g_.nodes.size());
  for (size_t i = 0; i < g_.nodes.size(); ++i) {
    const Node& n = g_.nodes[i];
    const OpKernel* k = backend_.kernel(n.op_type);
    if (!k || !k->forward) throw InputError("node " + n.label() + ": op '" + n.op_type + "' has no " + std::string(backend_.name()) + " kernel yet");
    kernels_.push_back(k);
    const OpDef* def = find_op(n.op_type);
    TO_CHECK(def != nullptr);
    bool backward = false;
    input_grad_[i].assign(n.inputs.size(), false);
    for (size_t q = 0; q < n.inputs.size(); ++q) {
      const int t = n.inputs[q];
      if (t < 0) continue;
      last_forward_use_[static_cast<size_t>(t)] = static_cast<int>(i);
      input_grad_[i][q] = k->backward && requires_grad_[static_cast<size_t>(t)] && !listed(def->nondiff_inputs, static_cast<int>(q));
      backward = backward || input_grad_[i][q];
    }
    for (int o : n.outputs)
      if (o >= 0) requires_grad_[static_cast<size_t>(o)] = backward && dtype_is_float(g_.tensors[static_cast<size_t>(o)].dtype);
    need_in_[i].assign(n.inputs.size(), false);
    need_out_[i].assign(n.outputs.size(), false);
    if (!backward) continue;
    OpView view(g_, n);
    for (const Saved& s : def->saved(view, input_grad_[i])) {
      if (s.tensor < 0) continue;
      for (size_t q = 0; q < n.inputs.size(); ++q) need_in_[i][q] = need_in_[i][q] || n.inputs[q] == s.tensor;
      for (size_t q = 0; q < n.outputs.size(); ++q) need_out_[i][q] = need_out_[i][q] || n.outputs[q] == s.tensor;
    }
  }
  if (g_.outputs.empty()) throw InputError(g_.source_path + ": the graph has no outputs");
  // What the optimizer updates: the local shard, or under ZeRO-2 this worker's chunk of it, flat.
  const std::vector<int> coord = sh_.where.mesh->coords(sh_.where.rank);
  for (int t : roots_) {
    Array& w = state_.at(t);
    if (!sh_.zero[static_cast<size_t>(t)]) {
      optimizer_weights_[t] = w;
      continue;
    }
    Flat f;
    std::vector<Placement> partial, split, whole;
    for (const Placement& p : sh_.home[static_cast<size_t>(t)].placements()) {
      const bool replicated = p.is_replicate();
      partial.push_back(replicated ? Placement::partial() : Placement::replicate());
      split.push_back(replicated ? Placement::shard(0) : Placement::replicate());
      whole.push_back(Placement::replicate());
    }
    f.partial = Layout(partial);
    f.split = Layout(split);
    f.whole = Layout(whole);
    f.size = w.numel();
    f.offset = shard_offset({f.size}, f.split, *sh_.where.mesh, coord)[0];
    f.length = planner::local_shape({f.size}, f.split, *sh_.where.mesh, coord)[0];
    optimizer_weights_[t] = w.view({f.size}).view_at(f.offset, {f.length});
    flat_[t] = f;
  }
  // Where each input's shard lies, for the kernels that need it (kernel.h, ShardInfo).
  shards_.resize(g_.nodes.size());
  for (size_t i = 0; i < g_.nodes.size(); ++i) {
    for (size_t q = 0; q < g_.nodes[i].inputs.size(); ++q) {
      const int t = g_.nodes[i].inputs[q];
      const Shape global = t >= 0 ? g_.tensors[static_cast<size_t>(t)].shape : Shape{};
      shards_[i].global.push_back(global);
      shards_[i].offset.push_back(t >= 0 ? shard_offset(global, sh_.in[i][q], *sh_.where.mesh, coord) : std::vector<int64_t>{});
    }
  }
}

Shape ShardedExecutor::local(int t, const Layout& l) const {
  return planner::local_shape(g_.tensors[static_cast<size_t>(t)].shape, l, *sh_.where.mesh, sh_.where.mesh->coords(sh_.where.rank));
}

Array ShardedExecutor::move(const Array& x, int t, const Layout& from, const Layout& to, MemoryKind kind) {
  const Shape& shape = g_.tensors[static_cast<size_t>(t)].shape;
  return run_transition(x, planner::redistribute(shape, static_cast<int>(dtype_size(x.dtype())), from, to, *sh_.where.mesh), sh_.where,
                        backend_, kind);
}

Array ShardedExecutor::move_gradient_back(const Array& grad, int t, const Layout& from, const Layout& to) {
  // The value went from -> to in forward; its gradient goes back by the dual plan.
  const Shape& shape = g_.tensors[static_cast<size_t>(t)].shape;
  const planner::RedistributePlan forward =
      planner::redistribute(shape, static_cast<int>(dtype_size(grad.dtype())), from, to, *sh_.where.mesh);
  return run_transition(grad, planner::backward_plan(forward, *sh_.where.mesh), sh_.where, backend_, MemoryKind::Transients);
}

double ShardedExecutor::loss_and_gradient(const Array& target) {
  const int out = g_.outputs[0];
  const Layout& home = sh_.home[static_cast<size_t>(out)];
  const int rank = static_cast<int>(g_.tensors[static_cast<size_t>(out)].shape.size());
  const bool ce = loss_ == LossKind::CrossEntropy;
  // The loss layout: partial sums reduced, and the class dimension whole for cross-entropy.
  std::vector<Placement> lp = home.placements(), tp;
  for (Placement& p : lp) {
    if (p.is_partial() || (ce && p.is_shard(rank - 1))) p = Placement::replicate();
    tp.push_back(ce && p.is_shard() && p.dim() >= rank - 1 ? Placement::replicate() : p);
  }
  const Layout loss_layout(lp), target_layout(tp);
  const Array& y = values_.at(out);
  Array yl = home == loss_layout ? y : move(y, out, home, loss_layout, MemoryKind::Transients);
  const Layout replicated = Layout::replicated(sh_.where.mesh->ndim());
  Array tl = run_transition(target,
                            planner::redistribute(target.shape(), static_cast<int>(dtype_size(target.dtype())), replicated, target_layout,
                                                  *sh_.where.mesh),
                            sh_.where, backend_, MemoryKind::Inputs);
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
  if (requires_grad_[static_cast<size_t>(out)]) {
    grads_[out] = home == loss_layout ? dy : move_gradient_back(dy, out, home, loss_layout);
  }
  return totals[1] > 0 ? totals[0] / totals[1] : 0.0;
}

double ShardedExecutor::train_step(const std::vector<Array>& inputs, const Array& target, const StepContext& ctx) {
  values_.clear();
  grads_.clear();
  kept_in_.assign(g_.nodes.size(), {});
  kept_out_.assign(g_.nodes.size(), {});
  states_.assign(g_.nodes.size(), {});
  for (int t : roots_) {
    root_grads_[t] = Array(runtime_dtype(g_.tensors[static_cast<size_t>(t)]), local(t, sh_.home[static_cast<size_t>(t)]),
                           backend_.allocator(), MemoryKind::Gradients);
    backend_.fill(root_grads_[t], 0.0);
  }
  TO_CHECK(inputs.size() == g_.inputs.size());
  for (size_t k = 0; k < inputs.size(); ++k) {
    const int t = g_.inputs[k];
    const Tensor& x = g_.tensors[static_cast<size_t>(t)];
    if (inputs[k].shape() != x.shape || inputs[k].dtype() != runtime_dtype(x)) {
      throw InputError("input '" + x.name + "' is " + inputs[k].str() + ", the model takes " + std::string(dtype_name(runtime_dtype(x))) +
                       shape_str(x.shape));
    }
    values_[t] = home_shard(sh_, g_, t, inputs[k], backend_, MemoryKind::Inputs);
  }
  auto value = [&](int t) -> const Array& {
    if (auto it = values_.find(t); it != values_.end()) return it->second;
    if (auto it = state_.find(t); it != state_.end()) return it->second;
    throw InternalError("sharded executor: tensor '" + g_.tensors[static_cast<size_t>(t)].name + "' has no value");
  };
  std::vector<bool> is_output(g_.tensors.size(), false);
  for (int t : g_.outputs) is_output[static_cast<size_t>(t)] = true;

  // Forward.
  for (size_t i = 0; i < g_.nodes.size(); ++i) {
    const Node& n = g_.nodes[i];
    const OpKernel& k = *kernels_[i];
    std::vector<Array> ins(n.inputs.size());
    kept_in_[i].resize(n.inputs.size());
    for (size_t q = 0; q < n.inputs.size(); ++q) {
      const int t = n.inputs[q];
      if (t < 0) continue;
      const Layout& home = sh_.home[static_cast<size_t>(t)];
      const Layout& need = sh_.in[i][q];
      ins[q] = home == need ? value(t) : move(value(t), t, home, need, need_in_[i][q] ? MemoryKind::Activations : MemoryKind::Transients);
      if (need_in_[i][q]) kept_in_[i][q] = ins[q];
    }
    std::vector<const Array*> in;
    for (size_t q = 0; q < n.inputs.size(); ++q) in.push_back(n.inputs[q] < 0 ? nullptr : &ins[q]);
    std::vector<Array> outs(n.outputs.size());
    std::vector<Array*> out;
    for (size_t o = 0; o < n.outputs.size(); ++o) {
      const int t = n.outputs[o];
      if (t < 0) {
        out.push_back(nullptr);
        continue;
      }
      const Shape shape = local(t, sh_.out[i][o]);
      if (o == 0 && k.aliases_input) {
        if (numel(shape) != in[0]->numel()) {
          throw InternalError("sharded executor: node " + n.label() + " views " + in[0]->str() + " (" + sh_.in[i][0].str() + ") as " +
                              shape_str(shape) + " (" + sh_.out[i][o].str() + ")");
        }
        outs[o] = in[0]->view(shape);
      }
      else outs[o] = Array(runtime_dtype(g_.tensors[static_cast<size_t>(t)]), shape, backend_.allocator(),
                           need_out_[i][o] ? MemoryKind::Activations : MemoryKind::Transients);
      out.push_back(&outs[o]);
    }
    k.forward(OpCall{n, static_cast<int>(i), in, out, states_[i], ctx, &shards_[i]});
    if (ctx.training) apply_state_updates(backend_, k, n, out, state_, &shards_[i]);
    kept_out_[i].resize(n.outputs.size());
    for (size_t o = 0; o < n.outputs.size(); ++o) {
      const int t = n.outputs[o];
      if (t < 0) continue;
      if (need_out_[i][o]) kept_out_[i][o] = outs[o];
      const Layout& home = sh_.home[static_cast<size_t>(t)];
      values_[t] = home == sh_.out[i][o] ? outs[o] : move(outs[o], t, sh_.out[i][o], home, MemoryKind::Transients);
    }
    for (int t : n.inputs) {
      if (t >= 0 && !is_output[static_cast<size_t>(t)] && last_forward_use_[static_cast<size_t>(t)] <= static_cast<int>(i)) values_.erase(t);
    }
  }

  const double loss = loss_and_gradient(target);
  values_.clear();

  // Backward.
  for (size_t i = g_.nodes.size(); i-- > 0;) {
    const Node& n = g_.nodes[i];
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
      const Layout& home = sh_.home[static_cast<size_t>(t)];
      douts[o] = home == sh_.out[i][o] ? it->second : move_gradient_back(it->second, t, sh_.out[i][o], home);
      dout.push_back(&douts[o]);
      any = true;
    }
    const bool backward = std::any_of(input_grad_[i].begin(), input_grad_[i].end(), [](bool b) { return b; });
    if (backward && any) {
      std::vector<const Array*> in, out;
      std::vector<Shape> in_shapes;
      for (size_t q = 0; q < n.inputs.size(); ++q) {
        const int t = n.inputs[q];
        in.push_back(t >= 0 && need_in_[i][q] ? &kept_in_[i][q] : nullptr);
        in_shapes.push_back(t >= 0 ? local(t, sh_.in[i][q]) : Shape{});
      }
      for (size_t o = 0; o < n.outputs.size(); ++o) out.push_back(n.outputs[o] >= 0 && need_out_[i][o] ? &kept_out_[i][o] : nullptr);
      std::vector<Array> dins(n.inputs.size());
      std::vector<Array*> din;
      for (size_t q = 0; q < n.inputs.size(); ++q) {
        if (!input_grad_[i][q]) {
          din.push_back(nullptr);
          continue;
        }
        dins[q] = Array(DType::F32, in_shapes[q], backend_.allocator(), MemoryKind::Transients);
        din.push_back(&dins[q]);
      }
      kernels_[i]->backward(GradCall{n, static_cast<int>(i), in, out, dout, din, in_shapes, states_[i], ctx, &shards_[i]});
      for (size_t q = 0; q < n.inputs.size(); ++q) {
        if (!input_grad_[i][q]) continue;
        const int t = n.inputs[q];
        const Layout& home = sh_.home[static_cast<size_t>(t)];
        Array d = home == sh_.in[i][q] ? dins[q] : move_gradient_back(dins[q], t, home, sh_.in[i][q]);
        if (auto root = root_grads_.find(t); root != root_grads_.end()) {
          backend_.accumulate(root->second, d);
        } else if (auto it = grads_.find(t); it != grads_.end()) {
          backend_.accumulate(it->second, d);
        } else {
          grads_[t] = d;
        }
      }
    }
    for (int t : n.outputs)
      if (t >= 0) grads_.erase(t);
    kept_in_[i].clear();
    kept_out_[i].clear();
    states_[i] = {};
  }
  // Gradient synchronisation: each parameter's gradient from gradient_layout(storage) into its
  // storage layout (replicated axes all-reduce), or under ZeRO-2 onto this worker's flat chunk
  // (replicated axes reduce-scatter).
  for (int t : roots_) {
    const Layout& storage = sh_.home[static_cast<size_t>(t)];
    const Layout from = planner::gradient_layout(storage);
    if (auto f = flat_.find(t); f != flat_.end()) {
      Array& g = root_grads_[t];
      g = move_flat(g.view({f->second.size}), f->second.size, f->second.partial, f->second.split, MemoryKind::Gradients);
    } else if (from != storage) {
      root_grads_[t] = move(root_grads_[t], t, from, storage, MemoryKind::Gradients);
    }
  }
  return loss;
}

Array ShardedExecutor::move_flat(const Array& x, int64_t size, const Layout& from, const Layout& to, MemoryKind kind) {
  return run_transition(x, planner::redistribute({size}, static_cast<int>(dtype_size(x.dtype())), from, to, *sh_.where.mesh), sh_.where,
                        backend_, kind);
}

void ShardedExecutor::after_optimizer_step() {
  for (const auto& [t, f] : flat_) {
    Array whole = move_flat(optimizer_weights_.at(t), f.size, f.split, f.whole, MemoryKind::Transients);
    Array flat = state_.at(t).view({f.size});
    backend_.copy_slab(whole, 0, 0, flat, 0, f.size);
  }
}

Array ShardedExecutor::whole_gradient(int t) {
  const Layout& storage = sh_.home[static_cast<size_t>(t)];
  Array local = root_grads_.at(t);
  if (auto f = flat_.find(t); f != flat_.end()) {
    local = move_flat(local, f->second.size, f->second.split, f->second.whole, MemoryKind::Transients).view(this->local(t, storage));
  }
  return move(local, t, storage, Layout::replicated(sh_.where.mesh->ndim()), MemoryKind::Transients);
}

const Array& ShardedExecutor::gradient(int tensor) const {
  auto it = root_grads_.find(tensor);
  TO_CHECK(it != root_grads_.end());
  return it->second;
}

}  // namespace tensoropt::runtime
