#include "planner/space.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <tuple>

#include "graph/error.h"
#include "planner/parallel/collectives.h"
#include "planner/parallel/kernel_workspace.h"

namespace tensoropt::planner {

Term comm_term(Purpose p, StepKind k) {
  TO_CHECK(is_collective(k));
  return static_cast<Term>(static_cast<int>(Term::CommFirst) + static_cast<int>(p) * 4 + static_cast<int>(k));
}

bool is_time_term(Term t) { return t <= Term::CommLast; }

std::string term_name(Term t) {
  switch (t) {
    case Term::ComputeForward: return "compute_forward";
    case Term::ComputeBackward: return "compute_backward";
    case Term::Recompute: return "recompute";
    case Term::OptimizerStep: return "optimizer_step";
    case Term::Weights: return "weights";
    case Term::Gradients: return "gradients";
    case Term::OptimizerState: return "optimizer_state";
    case Term::Activations: return "activations";
    case Term::DataInputs: return "data_inputs";
    case Term::Buffers: return "buffers_and_constants";
    case Term::Workspace: return "workspace";
    default: break;
  }
  int i = static_cast<int>(t) - static_cast<int>(Term::CommFirst);
  TO_CHECK(i >= 0 && i < 12);
  static const char* purposes[] = {"forward", "backward", "gradient_sync"};
  static const char* kinds[] = {"all_gather", "reduce_scatter", "all_reduce", "all_to_all"};
  return std::string("comm_") + purposes[i / 4] + "_" + kinds[i % 4];
}

Breakdown& Breakdown::operator+=(const Breakdown& o) {
  for (size_t i = 0; i < v.size(); ++i) v[i] += o.v[i];
  return *this;
}

double Breakdown::time() const {
  double s = 0;
  for (int i = 0; i < kTerms; ++i)
    if (is_time_term(static_cast<Term>(i))) s += v[static_cast<size_t>(i)];
  return s;
}

double Breakdown::memory() const {
  double s = 0;
  for (int i = 0; i < kTerms; ++i)
    if (!is_time_term(static_cast<Term>(i))) s += v[static_cast<size_t>(i)];
  return s;
}

int Variable::find_config(const std::string& config_name) const {
  for (size_t k = 0; k < configs.size(); ++k)
    if (configs[k].name == config_name) return static_cast<int>(k);
  return -1;
}

namespace {

bool contains(const std::vector<Saved>& saved, int tensor) {
  return std::any_of(saved.begin(), saved.end(), [&](const Saved& s) { return s.tensor == tensor; });
}

void add_unique(std::vector<Layout>& layouts, const Layout& l) {
  if (std::find(layouts.begin(), layouts.end(), l) == layouts.end()) layouts.push_back(l);
}

bool has_partial(const Layout& l) {
  return std::any_of(l.placements().begin(), l.placements().end(), [](const Placement& p) { return p.is_partial(); });
}

// Every tensor's collectives have sizes that fit in int64 (redistribute's requirement): at most
// 2^63 / 16,384 bytes = 512 TiB for one tensor on 16,384 GPUs. Per-device figures are smaller.
void check_sizes_fit(const Graph& g, const DeviceMesh& mesh, const Training& training) {
  for (const Tensor& t : g.tensors) {
    if (fits_on_mesh(t.shape, training.element_bytes(t), mesh)) continue;
    throw InputError(g.source_path + ": tensor '" + t.name + "' " + shape_str(t.shape) + " is too large to plan on " +
                     std::to_string(mesh.size()) + " GPUs: the bytes its collectives move would overflow 64 bits");
  }
}

}  // namespace

StrategySpace::StrategySpace(const Graph& graph, const DeviceMesh& mesh, const ComputeModel& compute,
                             const SpaceOptions& options)
    : graph_(&graph), mesh_(mesh), compute_(&compute), options_(options) {
  const Graph& g = graph;
  check_sizes_fit(g, mesh_, options_.training);
  node_costs_ = tensoropt::node_costs(g);
  const std::vector<bool> data_dependent = tensoropt::data_dependent(g);
  // Ops computing model state alone whose result a backward reads (a transposed weight): the
  // runtime does not keep it, and runs the op again there (launcher/runtime/step_plan.h).
  reruns_.assign(g.nodes.size(), false);
  for (const NodeCost& c : node_costs_)
    for (int t : c.state_read) {
      const int p = g.tensors[static_cast<size_t>(t)].producer;
      if (p >= 0) reruns_[static_cast<size_t>(p)] = true;
    }
  requires_grad_ = requires_grad(g);
  is_output_.assign(g.tensors.size(), false);
  for (int t : g.outputs) is_output_[static_cast<size_t>(t)] = true;

  // Uses of every tensor: (node, input position).
  std::vector<std::vector<std::pair<int, int>>> uses(g.tensors.size());
  for (size_t n = 0; n < g.nodes.size(); ++n)
    for (size_t i = 0; i < g.nodes[n].inputs.size(); ++i)
      if (int t = g.nodes[n].inputs[i]; t >= 0) uses[static_cast<size_t>(t)].emplace_back(static_cast<int>(n), static_cast<int>(i));

  // Op variables first (node n is variable n), so readers' configurations are known below.
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const Node& node = g.nodes[n];
    Variable v;
    v.kind = VarKind::Op;
    v.node = static_cast<int>(n);
    v.name = "op:" + (node.name.empty() ? "#" + std::to_string(n) : node.name);
    v.space = op_space(OpView(g, node));
    if (v.space.inputs.size() != node.inputs.size() || v.space.outputs.size() != node.outputs.size())
      throw InternalError(node.label() + ": iteration space has " + std::to_string(v.space.inputs.size()) + " inputs, " + std::to_string(v.space.outputs.size()) + " outputs");
    std::vector<bool> used(node.outputs.size(), false);
    for (size_t o = 0; o < node.outputs.size(); ++o) {
      int t = node.outputs[o];
      used[o] = t >= 0 && (!uses[static_cast<size_t>(t)].empty() || is_output_[static_cast<size_t>(t)]);
    }
    v.op_configs = enumerate_configs(v.space, mesh_, used);
    std::vector<Shape> in_shapes, out_shapes;
    for (int t : node.inputs) in_shapes.push_back(t >= 0 ? g.tensors[static_cast<size_t>(t)].shape : Shape{});
    for (int t : node.outputs) out_shapes.push_back(t >= 0 ? g.tensors[static_cast<size_t>(t)].shape : Shape{});
    std::erase_if(v.op_configs, [&](const OpConfig& c) { return !whole_shards(c, in_shapes, out_shapes, mesh_); });
    TO_CHECK(!v.op_configs.empty());
    vars_.push_back(std::move(v));
  }
  // Variables for sources and multi-use activations.
  tensor_var_.assign(g.tensors.size(), -1);
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    const Tensor& tensor = g.tensors[t];
    const auto& u = uses[t];
    VarKind kind;
    if (tensor.kind == TensorKind::Parameter && !u.empty()) {
      kind = VarKind::Parameter;
    } else if (tensor.kind == TensorKind::Input && !u.empty()) {
      kind = VarKind::Input;
    } else if (tensor.kind == TensorKind::Activation && u.size() + (is_output_[t] ? 1 : 0) > 1) {
      kind = VarKind::Tensor;
    } else {
      continue;
    }
    std::vector<Layout> layouts;
    if (kind == VarKind::Tensor) {
      const Node& p = g.nodes[static_cast<size_t>(tensor.producer)];
      int slot = static_cast<int>(std::find(p.outputs.begin(), p.outputs.end(), static_cast<int>(t)) - p.outputs.begin());
      for (const auto& c : vars_[static_cast<size_t>(tensor.producer)].op_configs) add_unique(layouts, c.outputs[static_cast<size_t>(slot)]);
    }
    // A parameter or data input is stored whole or split, never as partial sums: a reader that
    // needs its share of the sum (a bias added after a split reduction) takes it from a replicated
    // copy (LocalPartial, free).
    const bool source = kind != VarKind::Tensor;
    for (auto [n, i] : u) {
      for (const auto& c : vars_[static_cast<size_t>(n)].op_configs) {
        std::vector<Placement> p = c.inputs[static_cast<size_t>(i)].placements();
        if (source) std::replace_if(p.begin(), p.end(), [](const Placement& x) { return x.is_partial(); }, Placement::replicate());
        add_unique(layouts, Layout(p));
      }
    }
    Variable v;
    v.kind = kind;
    v.tensor = static_cast<int>(t);
    v.name = std::string(kind == VarKind::Parameter ? "param:" : kind == VarKind::Input ? "input:" : "tensor:") + tensor.name;
    if (kind == VarKind::Parameter && numel(tensor.shape) < options_.param_persistence) {
      layouts.assign(1, Layout::replicated(mesh_.ndim()));
    }
    for (const Layout& l : layouts) {
      bool replicated_axis = std::any_of(l.placements().begin(), l.placements().end(),
                                         [](const Placement& p) { return p.is_replicate(); });
      // ZeRO-1 is not offered: under this model it moves what ZeRO-2 moves and keeps more.
      bool zero = kind == VarKind::Parameter && options_.zero && replicated_axis && mesh_.size() > 1 && !tensor.shape.empty();
      for (int z : zero ? std::vector<int>{0, 2} : std::vector<int>{0}) {
        VarConfig c;
        c.layout = l;
        c.zero = z;
        c.name = l.str() + (z ? " zero-" + std::to_string(z) : "");
        v.configs.push_back(c);
      }
    }
    tensor_var_[t] = static_cast<int>(vars_.size());
    vars_.push_back(std::move(v));
  }
  // Links.
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const Node& node = g.nodes[n];
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      int t = node.inputs[i];
      if (t < 0) continue;
      const Tensor& tensor = g.tensors[static_cast<size_t>(t)];
      Link l;
      l.to = static_cast<int>(n);
      l.to_slot = static_cast<int>(i);
      l.tensor = t;
      l.gradient = node_costs_[n].input_grad[i];
      l.to_keeps = contains(node_costs_[n].saved, t);
      l.to_rereads = std::find(node_costs_[n].state_read.begin(), node_costs_[n].state_read.end(), t) != node_costs_[n].state_read.end();
      l.state = !data_dependent[static_cast<size_t>(t)];
      if (tensor_var_[static_cast<size_t>(t)] >= 0) {
        l.from = tensor_var_[static_cast<size_t>(t)];
      } else if (tensor.kind == TensorKind::Activation) {
        l.from = tensor.producer;
      } else {
        continue;  // buffers and constants: charged at the reader
      }
      if (tensor.kind == TensorKind::Activation && l.from == tensor.producer) {
        const Node& p = g.nodes[static_cast<size_t>(tensor.producer)];
        l.from_slot = static_cast<int>(std::find(p.outputs.begin(), p.outputs.end(), t) - p.outputs.begin());
        l.from_keeps = contains(node_costs_[static_cast<size_t>(tensor.producer)].saved, t);
      }
      links_.push_back(l);
    }
  }
  // Producer -> tensor variable links.
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    int tv = tensor_var_[t];
    if (tv < 0 || vars_[static_cast<size_t>(tv)].kind != VarKind::Tensor) continue;
    int p = g.tensors[t].producer;
    const Node& pn = g.nodes[static_cast<size_t>(p)];
    Link l;
    l.from = p;
    l.from_slot = static_cast<int>(std::find(pn.outputs.begin(), pn.outputs.end(), static_cast<int>(t)) - pn.outputs.begin());
    l.to = tv;
    l.tensor = static_cast<int>(t);
    l.from_keeps = contains(node_costs_[static_cast<size_t>(p)].saved, static_cast<int>(t));
    for (auto [n, i] : uses[t]) l.gradient = l.gradient || node_costs_[static_cast<size_t>(n)].input_grad[static_cast<size_t>(i)];
    links_.push_back(l);
  }
  // Recompute: ops whose outputs all go straight to op readers (selective: and that keep something
  // themselves; all: outputs nobody reads allowed too, except BatchNormalization's running
  // statistics, which a second forward would update again).
  std::vector<int> direct_readers(g.tensors.size(), 0);
  for (const Link& l : links_)
    if (l.from_slot >= 0 && vars_[static_cast<size_t>(l.to)].kind == VarKind::Op) ++direct_readers[static_cast<size_t>(l.tensor)];
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    Variable& v = vars_[n];
    bool keeps = options_.recompute_all, direct = true;
    for (const Saved& s : node_costs_[n].saved) {
      bool is_output = std::find(g.nodes[n].outputs.begin(), g.nodes[n].outputs.end(), s.tensor) != g.nodes[n].outputs.end();
      keeps = keeps || s.tensor < 0 || is_output;
    }
    const bool side_effects = g.nodes[n].op_type == "BatchNormalization";
    for (int t : g.nodes[n].outputs) {
      if (t < 0) continue;
      const size_t ut = static_cast<size_t>(t);
      const bool unused = !is_output_[ut] && tensor_var_[ut] < 0 && direct_readers[ut] == 0;
      if (options_.recompute_all && unused && !side_effects) continue;
      direct = direct && !is_output_[ut] && tensor_var_[ut] < 0 && direct_readers[ut] > 0;
    }
    v.may_recompute = options_.recompute && keeps && direct;
    for (size_t k = 0; k < v.op_configs.size(); ++k) {
      for (int r = 0; r < (v.may_recompute ? 2 : 1); ++r) {
        VarConfig c;
        c.op_config = static_cast<int>(k);
        c.recompute = r == 1;
        c.name = v.op_configs[k].str(v.space) + (r ? " recompute" : "");
        v.configs.push_back(c);
      }
    }
  }
  linked_.assign(g.tensors.size(), false);
  needed_.assign(g.tensors.size(), false);
  for (const Link& l : links_) {
    if (l.from_slot >= 0) linked_[static_cast<size_t>(l.tensor)] = true;
    if (l.from_keeps || l.to_keeps) needed_[static_cast<size_t>(l.tensor)] = true;
  }
  for (size_t i = 0; i < vars_.size(); ++i) {
    if (!by_name_.emplace(vars_[i].name, static_cast<int>(i)).second) {
      // Duplicate node names: disambiguate by index, keeping names unique and stable.
      vars_[i].name += "#" + std::to_string(i);
      by_name_.emplace(vars_[i].name, static_cast<int>(i));
    }
  }
  // The step's schedule (step_peak): where each variable's holdings are freed, where each link's
  // redistribution runs, and which gradients are in flight across which ops.
  position_.assign(vars_.size(), -1);
  for (size_t i = 0; i < vars_.size(); ++i) {
    const Variable& v = vars_[i];
    if (v.kind == VarKind::Op) position_[i] = v.node;
    if (v.kind == VarKind::Tensor) position_[i] = g.tensors[static_cast<size_t>(v.tensor)].producer;
  }
  link_position_.assign(links_.size(), -1);
  for (size_t e = 0; e < links_.size(); ++e) {
    const Link& l = links_[e];
    const Variable& to = vars_[static_cast<size_t>(l.to)];
    link_position_[e] = to.kind == VarKind::Op ? to.node : position_[static_cast<size_t>(l.from)];
    const Variable& from = vars_[static_cast<size_t>(l.from)];
    int& first = position_[static_cast<size_t>(l.from)];
    if (from.kind == VarKind::Parameter && to.kind == VarKind::Op) first = first < 0 ? to.node : std::min(first, to.node);
  }
  for (size_t node = 0; node < g.nodes.size(); ++node) {
    const std::vector<int>& outs = g.nodes[node].outputs;
    for (size_t o = 0; o < outs.size(); ++o) {
      const int t = outs[o];
      if (t < 0 || !requires_grad_[static_cast<size_t>(t)]) continue;
      int last = is_output_[static_cast<size_t>(t)] ? static_cast<int>(g.nodes.size()) : -1;  // the loss reads it last
      for (auto [reader, slot] : uses[static_cast<size_t>(t)])
        if (node_costs_[static_cast<size_t>(reader)].input_grad[static_cast<size_t>(slot)]) last = std::max(last, reader);
      if (last > static_cast<int>(node) + 1) flights_.push_back({static_cast<int>(node), static_cast<int>(o), t, static_cast<int>(node) + 1, last});
    }
  }
  // Regenerated outputs of ops that may recompute: made again at the first backward that reads one
  // (a reader that keeps it, or the op's own), held until the op's backward.
  std::vector<int> regenerated_flight(g.tensors.size(), -1);  // per tensor, one link pass below
  for (size_t node = 0; node < g.nodes.size(); ++node) {
    if (!vars_[node].may_recompute) continue;
    const std::vector<int>& outs = g.nodes[node].outputs;
    for (size_t o = 0; o < outs.size(); ++o) {
      if (outs[o] < 0) continue;
      regenerated_flight[static_cast<size_t>(outs[o])] = static_cast<int>(flights_.size());
      flights_.push_back({static_cast<int>(node), static_cast<int>(o), outs[o], static_cast<int>(node), static_cast<int>(node) + 1, true});
    }
  }
  for (const Link& l : links_) {
    const int f = l.from_slot < 0 ? -1 : regenerated_flight[static_cast<size_t>(l.tensor)];
    if (f < 0 || !l.to_keeps || vars_[static_cast<size_t>(l.to)].kind != VarKind::Op) continue;
    int& last = flights_[static_cast<size_t>(f)].last;
    last = std::max(last, vars_[static_cast<size_t>(l.to)].node + 1);
  }
  param_flight_.assign(vars_.size(), -1);
  for (size_t i = 0; i < vars_.size(); ++i) {
    if (vars_[i].kind != VarKind::Parameter) continue;
    int first = -1, last = -1;
    for (auto [reader, slot] : uses[static_cast<size_t>(vars_[i].tensor)]) {
      if (!node_costs_[static_cast<size_t>(reader)].input_grad[static_cast<size_t>(slot)]) continue;
      first = first < 0 ? reader : std::min(first, reader);
      last = std::max(last, reader);
    }
    if (last > first) {
      param_flight_[i] = static_cast<int>(flights_.size());
      flights_.push_back({static_cast<int>(i), -1, vars_[i].tensor, first, last});
    }
  }
  // Bytes that step_peak reads for every strategy, per configuration: each link's tensor in its
  // writer's and its reader's layout, each flight's gradient (step_peak runs once per frontier
  // point, so these are looked up rather than recomputed from shapes).
  link_from_bytes_.resize(links_.size());
  link_to_bytes_.resize(links_.size());
  for (size_t e = 0; e < links_.size(); ++e) {
    const Link& l = links_[e];
    for (size_t k = 0; k < vars_[static_cast<size_t>(l.from)].configs.size(); ++k)
      link_from_bytes_[e].push_back(static_cast<double>(local_bytes(l.tensor, from_layout(l, static_cast<int>(k)))));
    for (size_t k = 0; k < vars_[static_cast<size_t>(l.to)].configs.size(); ++k)
      link_to_bytes_[e].push_back(static_cast<double>(local_bytes(l.tensor, to_layout(l, static_cast<int>(k)))));
  }
  flight_bytes_.resize(flights_.size());
  for (size_t f = 0; f < flights_.size(); ++f)
    for (size_t k = 0; k < vars_[static_cast<size_t>(flights_[f].var)].configs.size(); ++k)
      flight_bytes_[f].push_back(flight_bytes_of(flights_[f], static_cast<int>(k)));
  // The Problem.
  building_ = true;
  tensor_shape_id_.assign(g.tensors.size(), -1);
  var_terms_.resize(vars_.size());
  workspace_.resize(vars_.size());
  problem_.node_cost.resize(vars_.size());
  for (size_t i = 0; i < vars_.size(); ++i) {
    for (size_t k = 0; k < vars_[i].configs.size(); ++k) {
      const Variable& v = vars_[i];
      const VarConfig& c = v.configs[k];
      Breakdown b;
      switch (v.kind) {
        case VarKind::Op: b = op_terms(v, c); break;
        case VarKind::Parameter: b = parameter_terms(v, c); break;
        case VarKind::Input: b[Term::DataInputs] = static_cast<double>(local_bytes(v.tensor, c.layout)); break;
        case VarKind::Tensor: b = tensor_terms(v, c); break;
      }
      var_terms_[i].push_back(b);
      workspace_[i].push_back(v.kind == VarKind::Op          ? op_workspace(i, static_cast<int>(k))
                              : v.kind == VarKind::Parameter ? parameter_workspace(v, c)
                                                             : 0.0);
      problem_.node_cost[i].push_back({b.time(), b.memory()});
    }
  }
  // Every link's transitions first, so link_terms() reads them by index, while building and after.
  // A link's terms depend on its configurations only through the two layouts and whether each end
  // recomputes: each such class pair is costed once (by its first configurations) and copied.
  link_offset_.resize(links_.size());
  problem_.edges.reserve(links_.size());
  std::vector<int32_t> from_ids, to_ids, from_class, to_class, from_first, to_first;
  const auto classify = [](const std::vector<int32_t>& keys, std::vector<int32_t>& cls, std::vector<int32_t>& first) {
    cls.clear();
    first.clear();
    for (size_t k = 0; k < keys.size(); ++k) {
      size_t c = 0;
      while (c < first.size() && keys[static_cast<size_t>(first[c])] != keys[k]) ++c;
      if (c == first.size()) first.push_back(static_cast<int32_t>(k));
      cls.push_back(static_cast<int32_t>(c));
    }
  };
  std::vector<int32_t> keys, class_comm;
  std::vector<std::pair<double, double>> class_held;
  std::vector<Cost> costs;
  for (size_t e = 0; e < links_.size(); ++e) {
    const Link& l = links_[e];
    const int ku = static_cast<int>(vars_[static_cast<size_t>(l.from)].configs.size());
    const int kv = static_cast<int>(vars_[static_cast<size_t>(l.to)].configs.size());
    from_ids.clear();
    to_ids.clear();
    for (int a = 0; a < ku; ++a) from_ids.push_back(layout_id(from_layout(l, a)));
    for (int b = 0; b < kv; ++b) to_ids.push_back(layout_id(to_layout(l, b)));
    keys.clear();
    for (int a = 0; a < ku; ++a) keys.push_back(from_ids[static_cast<size_t>(a)] * 2 + (recomputes(l.from, a) ? 1 : 0));
    classify(keys, from_class, from_first);
    keys.clear();
    for (int b = 0; b < kv; ++b) keys.push_back(to_ids[static_cast<size_t>(b)] * 2 + (recomputes(l.to, b) ? 1 : 0));
    classify(keys, to_class, to_first);
    // The transition and the held activations depend on the two layouts and recompute flags
    // only, so on the class pair too: found per class pair, then laid out per configuration pair.
    class_comm.clear();
    class_held.clear();
    for (int32_t a : from_first)
      for (int32_t b : to_first) {
        const int32_t f = from_ids[static_cast<size_t>(a)], t = to_ids[static_cast<size_t>(b)];
        class_comm.push_back(f == t ? -1 : transition_index(l.tensor, from_layout(l, a), f, to_layout(l, b), t, l.gradient, regathers(l, a, b)));
        class_held.push_back(link_activations(static_cast<int>(e), a, b, f == t));
      }
    link_offset_[e] = comm_link_.size();
    for (int a = 0; a < ku; ++a)
      for (int b = 0; b < kv; ++b) {
        const size_t c = static_cast<size_t>(from_class[static_cast<size_t>(a)]) * to_first.size() + static_cast<size_t>(to_class[static_cast<size_t>(b)]);
        comm_link_.push_back(class_comm[c]);
        link_held_.push_back(class_held[c]);
      }
    costs.clear();
    for (int32_t a : from_first)
      for (int32_t b : to_first) {
        const Breakdown t = link_terms(static_cast<int>(e), a, b);
        costs.push_back({t.time(), t.memory()});
      }
    Problem::Edge edge;
    edge.u = l.from;
    edge.v = l.to;
    edge.cost.reserve(static_cast<size_t>(ku) * static_cast<size_t>(kv));
    for (int a = 0; a < ku; ++a)
      for (int b = 0; b < kv; ++b)
        edge.cost.push_back(costs[static_cast<size_t>(from_class[static_cast<size_t>(a)]) * to_first.size() +
                                  static_cast<size_t>(to_class[static_cast<size_t>(b)])]);
    problem_.edges.push_back(std::move(edge));
  }
  for (size_t e = 0; e < links_.size(); ++e) {
    const Link& l = links_[e];
    peak_links_.push_back({l.from, l.to, position_[static_cast<size_t>(l.from)], position_[static_cast<size_t>(l.to)], link_position_[e],
                           static_cast<int32_t>(vars_[static_cast<size_t>(l.to)].configs.size()), link_offset_[e],
                           vars_[static_cast<size_t>(l.to)].kind == VarKind::Op});
  }
  building_ = false;
  comm_cache_ = {};
  layout_ids_ = {};
  shape_ids_ = {};
  tensor_shape_id_ = {};
  validate(problem_);
}

bool StrategySpace::carry_peak_bound(const std::vector<int>& reference) {
  TO_CHECK(!bound_carried_ && reference.size() == vars_.size());
  if (graph_->nodes.empty()) return false;
  const int last = static_cast<int>(graph_->nodes.size()) - 1;
  int op = -1;
  for (size_t i = 0; i < vars_.size(); ++i)
    if (vars_[i].kind == VarKind::Op && position_[i] == last) op = static_cast<int>(i);
  if (op < 0) return false;
  const std::vector<double>& own = workspace_[static_cast<size_t>(op)];
  if (own.empty() || *std::min_element(own.begin(), own.end()) <= 0) return false;
  // Nothing is held after the last position, so there the peak is transient + in flight. Which
  // link the bound follows: one carrying model state first (a weight gathered for the op: the
  // summed memory counts it stored split, and only the transient shows the gathered copy, so this
  // is where the summed frontier is blind), then the one with the largest transient under the
  // reference, then the one whose transient can be largest.
  std::tuple<bool, double, double> best{false, 0.0, 0.0};
  std::vector<int> a = reference;
  for (size_t e = 0; e < peak_links_.size(); ++e) {
    const PeakLink& l = peak_links_[e];
    if (l.to != op || l.link_position != last) continue;
    double most = 0;
    for (int x = 0; x < static_cast<int>(vars_[static_cast<size_t>(l.from)].configs.size()); ++x)
      for (int y = 0; y < l.kv; ++y) {
        a[static_cast<size_t>(l.from)] = x;
        a[static_cast<size_t>(l.to)] = y;
        most = std::max(most, link_transient(l, a));
      }
    const std::tuple<bool, double, double> key{links_[e].state, link_transient(l, reference), most};
    if (most > 0 && (bound_link_ < 0 || key > best)) {
      best = key;
      bound_link_ = static_cast<int>(e);
    }
  }
  const auto add_var = [&](size_t var, size_t config, double bytes) {
    if (bytes == 0) return;
    auto it = std::find_if(bound_vars_.begin(), bound_vars_.end(), [&](const BoundTerms& t) { return t.var == var; });
    if (it == bound_vars_.end()) it = bound_vars_.insert(it, {var, std::vector<double>(vars_[var].configs.size(), 0.0), {}});
    it->bytes[config] += bytes;
  };
  if (bound_link_ < 0) {
    for (size_t k = 0; k < own.size(); ++k) add_var(static_cast<size_t>(op), k, own[k]);
  } else {
    const PeakLink& l = peak_links_[static_cast<size_t>(bound_link_)];
    const size_t ku = vars_[static_cast<size_t>(l.from)].configs.size();
    const auto kv = static_cast<size_t>(l.kv);
    bound_pair_.assign(ku * kv, 0.0);
    for (size_t x = 0; x < ku; ++x)
      for (size_t y = 0; y < kv; ++y) {
        a[static_cast<size_t>(l.from)] = static_cast<int>(x);
        a[static_cast<size_t>(l.to)] = static_cast<int>(y);
        bound_pair_[x * kv + y] = std::max(own[y], link_transient(l, a));
      }
  }
  for (const Flight& f : flights_) {
    if (!(f.first <= last && last < f.last)) continue;
    for (size_t k = 0; k < vars_[static_cast<size_t>(f.var)].configs.size(); ++k)
      add_var(static_cast<size_t>(f.var), k, flight_bytes(f, static_cast<int>(k)));
  }
  // Carried only where it is the reference's whole workspace: where the peak lies elsewhere the
  // bound would miss it, and FT would trade summed memory for a bound that does not decide it.
  if (peak_bound(reference) != workspace(reference)) {
    bound_vars_.clear();
    bound_link_ = -1;
    bound_pair_.clear();
    return false;
  }
  // Added to the Problem; the costs it had are kept, so drop_peak_bound() restores them exactly.
  bound_carried_ = true;
  for (BoundTerms& t : bound_vars_) {
    t.before = problem_.node_cost[t.var];
    for (size_t k = 0; k < t.bytes.size(); ++k) problem_.node_cost[t.var][k].memory += t.bytes[k];
  }
  if (bound_link_ >= 0) {
    Problem::Edge& edge = problem_.edges[static_cast<size_t>(bound_link_)];
    TO_CHECK(edge.u == peak_links_[static_cast<size_t>(bound_link_)].from && edge.cost.size() == bound_pair_.size());
    unbound_edge_ = edge.cost;
    for (size_t at = 0; at < bound_pair_.size(); ++at) edge.cost[at].memory += bound_pair_[at];  // [from config][to config]
  }
  return true;
}

void StrategySpace::drop_peak_bound() {
  if (!bound_carried_) return;
  for (BoundTerms& t : bound_vars_) problem_.node_cost[t.var] = std::move(t.before);
  if (bound_link_ >= 0) problem_.edges[static_cast<size_t>(bound_link_)].cost = std::move(unbound_edge_);
  unbound_edge_.clear();
  bound_carried_ = false;
  bound_vars_.clear();
  bound_link_ = -1;
  bound_pair_.clear();
}

double StrategySpace::peak_bound(const std::vector<int>& assignment) const {
  TO_CHECK(assignment.size() == vars_.size());
  double b = 0;
  for (const BoundTerms& t : bound_vars_) b += t.bytes[static_cast<size_t>(assignment[t.var])];
  if (bound_link_ >= 0) {
    const PeakLink& l = peak_links_[static_cast<size_t>(bound_link_)];
    b += bound_pair_[l.pair(assignment) - l.offset];
  }
  return b;
}

int StrategySpace::find_variable(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? -1 : it->second;
}

int64_t StrategySpace::local_bytes(int tensor, const Layout& layout) const {
  const Tensor& t = graph_->tensors[static_cast<size_t>(tensor)];
  return max_local_bytes(t.shape, options_.training.element_bytes(t), layout, mesh_);
}

const Layout& StrategySpace::from_layout(const Link& l, int config) const {
  const Variable& v = vars_[static_cast<size_t>(l.from)];
  const VarConfig& c = v.configs[static_cast<size_t>(config)];
  if (v.kind == VarKind::Op) return v.op_configs[static_cast<size_t>(c.op_config)].outputs[static_cast<size_t>(l.from_slot)];
  return c.layout;
}

const Layout& StrategySpace::to_layout(const Link& l, int config) const {
  const Variable& v = vars_[static_cast<size_t>(l.to)];
  const VarConfig& c = v.configs[static_cast<size_t>(config)];
  if (v.kind == VarKind::Op) return v.op_configs[static_cast<size_t>(c.op_config)].inputs[static_cast<size_t>(l.to_slot)];
  return c.layout;
}

bool StrategySpace::recomputes(int var, int config) const {
  const Variable& v = vars_[static_cast<size_t>(var)];
  return v.kind == VarKind::Op && v.configs[static_cast<size_t>(config)].recompute;
}

size_t StrategySpace::TransitionKeyHash::operator()(const TransitionKey& k) const {
  uint64_t h = static_cast<uint32_t>(k.shape);
  h = h * 0x9E3779B97F4A7C15ull + static_cast<uint32_t>(k.from);
  h = h * 0x9E3779B97F4A7C15ull + static_cast<uint32_t>(k.to);
  h = h * 0x9E3779B97F4A7C15ull + static_cast<uint32_t>(k.element_bytes) * 4u + (k.gradient ? 1u : 0u) + (k.regather ? 2u : 0u);
  return static_cast<size_t>(h ^ (h >> 29));
}

int32_t StrategySpace::layout_id(const Layout& l) const {
  TO_CHECK(building_);
  return layout_ids_.try_emplace(l, static_cast<int32_t>(layout_ids_.size())).first->second;
}

int32_t StrategySpace::shape_id(int tensor) const {
  TO_CHECK(building_);
  int32_t& id = tensor_shape_id_[static_cast<size_t>(tensor)];
  if (id < 0) id = shape_ids_.try_emplace(graph_->tensors[static_cast<size_t>(tensor)].shape, static_cast<int32_t>(shape_ids_.size())).first->second;
  return id;
}

bool StrategySpace::regathers(const Link& l, int from_config, int to_config) const {
  const Variable& from = vars_[static_cast<size_t>(l.from)];
  const Variable& to = vars_[static_cast<size_t>(l.to)];
  if (from.kind == VarKind::Op && to.kind == VarKind::Op && recomputes(l.from, from_config) &&
      (l.to_keeps || recomputes(l.to, to_config)))
    return true;  // regenerated in backward, then moved again for its reader
  if (!l.state || to.kind != VarKind::Op) return false;
  if (!(l.to_rereads || recomputes(l.to, to_config) || reruns_[static_cast<size_t>(to.node)])) return false;
  return from.kind == VarKind::Parameter || from.kind == VarKind::Op;
}

int32_t StrategySpace::transition_index(int tensor, const Layout& from, int32_t from_id, const Layout& to, int32_t to_id,
                                        bool gradient, bool regather) const {
  TO_CHECK(building_);
  const Tensor& t = graph_->tensors[static_cast<size_t>(tensor)];
  const int eb = options_.training.element_bytes(t);
  const TransitionKey key{shape_id(tensor), from_id, to_id, eb, gradient, regather};
  if (auto it = comm_cache_.find(key); it != comm_cache_.end()) return it->second;
  CommCost c;
  RedistributePlan plan = redistribute(t.shape, eb, from, to, mesh_);
  for (const Step& s : plan.steps)
    if (is_collective(s.kind)) c.forward[static_cast<size_t>(s.kind)] += step_time(s, mesh_);
  c.transient_forward = static_cast<double>(transient_bytes(plan, mesh_));
  if (gradient) {
    const RedistributePlan back = backward_plan(plan, mesh_);
    for (const Step& s : back.steps)
      if (is_collective(s.kind)) c.backward[static_cast<size_t>(s.kind)] += step_time(s, mesh_);
    c.transient_backward = static_cast<double>(transient_bytes(back, mesh_));
  }
  if (regather) {
    for (size_t k = 0; k < c.forward.size(); ++k) c.backward[k] += c.forward[k];
    c.transient_backward += c.transient_forward;
  }
  const int32_t index = static_cast<int32_t>(comm_values_.size());
  comm_values_.push_back(c);
  comm_cache_.emplace(key, index);
  return index;
}

StrategySpace::CommCost StrategySpace::transition(int tensor, const Layout& from, const Layout& to, bool gradient) const {
  return comm_values_[static_cast<size_t>(transition_index(tensor, from, layout_id(from), to, layout_id(to), gradient))];
}

void StrategySpace::add_comm(Breakdown& b, Purpose p, const std::array<double, 4>& times) const {
  for (int k = 0; k < 4; ++k) b[comm_term(p, static_cast<StepKind>(k))] += times[static_cast<size_t>(k)];
}

void StrategySpace::add_plan(Breakdown& b, Purpose p, const RedistributePlan& plan) const {
  for (const Step& s : plan.steps)
    if (is_collective(s.kind))
      b[comm_term(p, s.kind)] += p == Purpose::Gradient ? bucketed_step_time(s, mesh_) : step_time(s, mesh_);
}

Breakdown StrategySpace::loss_terms(int tensor, const Layout& layout) const {
  // The loss reads the output whole on every device of an axis holding partial sums.
  Breakdown b;
  std::vector<Placement> reduced = layout.placements();
  for (auto& p : reduced)
    if (p.is_partial()) p = Placement::replicate();
  if (Layout(reduced) != layout) {
    CommCost c = transition(tensor, layout, Layout(reduced), requires_grad_[static_cast<size_t>(tensor)]);
    add_comm(b, Purpose::Forward, c.forward);
    add_comm(b, Purpose::Backward, c.backward);
  }
  b[Term::Activations] += static_cast<double>(local_bytes(tensor, Layout(reduced)));
  return b;
}

Breakdown StrategySpace::op_terms(const Variable& v, const VarConfig& c) const {
  const Graph& g = *graph_;
  const Node& node = g.nodes[static_cast<size_t>(v.node)];
  const NodeCost& nc = node_costs_[static_cast<size_t>(v.node)];
  const OpConfig& oc = v.op_configs[static_cast<size_t>(c.op_config)];
  Breakdown b;
  double parts = 1;
  for (size_t a = 0; a < oc.axis_dim.size(); ++a)
    if (oc.axis_dim[a] >= 0) parts *= mesh_.axis(static_cast<int>(a)).size;

  ShardWork w;
  w.node = &node;
  w.tensor_core = is_tensor_core_op(node.op_type);
  w.fwd_flops = nc.fwd_flops / parts;
  w.bwd_flops = nc.bwd_flops / parts;
  w.has_backward = std::any_of(nc.input_grad.begin(), nc.input_grad.end(), [](bool x) { return x; });
  double local_io = 0;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    int t = node.inputs[i];
    if (t < 0) {
      w.local_inputs.emplace_back();
      continue;
    }
    const Tensor& tensor = g.tensors[static_cast<size_t>(t)];
    w.local_inputs.push_back(max_local_shape(tensor.shape, oc.inputs[i], mesh_));
    double bytes = static_cast<double>(local_bytes(t, oc.inputs[i]));
    local_io += bytes;
    if (tensor.kind == TensorKind::Buffer || tensor.kind == TensorKind::Constant) b[Term::Buffers] += bytes;
  }
  for (size_t o = 0; o < node.outputs.size(); ++o)
    if (node.outputs[o] >= 0) local_io += static_cast<double>(local_bytes(node.outputs[o], oc.outputs[o]));
  // Global bytes: each sum fits in int64 alone, not always together.
  double global_io = static_cast<double>(nc.bytes.fwd_read) + static_cast<double>(nc.bytes.fwd_write);
  w.fwd_bytes = local_io;
  double global_bwd = static_cast<double>(nc.bytes.bwd_read) + static_cast<double>(nc.bytes.bwd_write);
  w.bwd_bytes = global_io > 0 ? global_bwd * local_io / global_io : 0;
  OpTime time = compute_->op_time(w);
  b[Term::ComputeForward] = time.forward;
  b[Term::ComputeBackward] = time.backward;
  if (c.recompute || reruns_[static_cast<size_t>(v.node)]) b[Term::Recompute] = time.forward;

  if (!c.recompute) {
    for (const Saved& s : nc.saved) {
      if (s.tensor < 0) {
        b[Term::Activations] += static_cast<double>(s.bytes) / parts;
        continue;
      }
      // A kept input is charged at its link; a kept output at its links, or here if it has none.
      auto out = std::find(node.outputs.begin(), node.outputs.end(), s.tensor);
      bool is_input = std::find(node.inputs.begin(), node.inputs.end(), s.tensor) != node.inputs.end();
      if (out == node.outputs.end()) {
        if (!is_input) {
          const Tensor& kept = g.tensors[static_cast<size_t>(s.tensor)];
          b[Term::Activations] += static_cast<double>(kept.elements() * options_.training.element_bytes(kept)) / parts;
        }
        continue;
      }
      if (!linked_[static_cast<size_t>(s.tensor)] && !is_output_[static_cast<size_t>(s.tensor)])
        b[Term::Activations] += static_cast<double>(local_bytes(s.tensor, oc.outputs[static_cast<size_t>(out - node.outputs.begin())]));
    }
  }
  // Graph outputs not read by any op: held by the loss (once, covering the producer's own keep).
  for (size_t o = 0; o < node.outputs.size(); ++o) {
    int t = node.outputs[o];
    if (t >= 0 && is_output_[static_cast<size_t>(t)] && tensor_var_[static_cast<size_t>(t)] < 0) b += loss_terms(t, oc.outputs[o]);
  }
  return b;
}

Breakdown StrategySpace::parameter_terms(const Variable& v, const VarConfig& c) const {
  const Tensor& t = graph_->tensors[static_cast<size_t>(v.tensor)];
  const Training& tr = options_.training;
  Breakdown b;
  double elements = static_cast<double>(numel(max_local_shape(t.shape, c.layout, mesh_)));
  int replicas = 1;
  for (int a = 0; a < mesh_.ndim(); ++a)
    if (c.layout[a].is_replicate()) replicas *= mesh_.axis(a).size;
  double grad_div = c.zero >= 2 ? replicas : 1;
  double state_div = c.zero >= 1 ? replicas : 1;
  b[Term::Weights] = elements * tr.weight_bytes();
  b[Term::Gradients] = elements * tr.gradient_bytes() / grad_div;
  b[Term::OptimizerState] = elements * tr.optimizer_state_bytes() / state_div;
  double updated = elements / state_div;
  b[Term::OptimizerStep] =
      compute_->stream_time(updated * (2.0 * tr.weight_bytes() + tr.gradient_bytes() + 2.0 * tr.optimizer_state_bytes()));
  if (replicas > 1) {
    Layout grad = gradient_layout(c.layout);
    if (c.zero == 0) {
      add_plan(b, Purpose::Gradient, redistribute(t.shape, tr.gradient_bytes(), grad, c.layout, mesh_));
    } else {
      // ZeRO shards the flat gradient buffer, as DeepSpeed does: each all-reduce of plain data
      // parallelism becomes a reduce-scatter of the gradient and, after the sharded update, an
      // all-gather of the updated weights, on the same axis and of the same bytes (weights and
      // gradients have one element size, Training). A bucketed ring all-reduce is exactly these
      // two, so ZeRO-2 moves what data parallelism moves.
      RedistributePlan zero = redistribute(t.shape, tr.gradient_bytes(), grad, c.layout, mesh_);
      std::vector<Step> steps;
      for (const Step& s : zero.steps) {
        if (s.kind != StepKind::AllReduce) {
          steps.push_back(s);
          continue;
        }
        Step scatter = s;
        scatter.kind = StepKind::ReduceScatter;
        scatter.bytes_out = s.bytes_in / s.group_size;
        Step gather = s;
        gather.kind = StepKind::AllGather;
        gather.bytes_in = scatter.bytes_out;
        steps.push_back(scatter);
        steps.push_back(gather);
      }
      zero.steps = std::move(steps);
      add_plan(b, Purpose::Gradient, zero);
    }
  }
  return b;
}

Breakdown StrategySpace::tensor_terms(const Variable& v, const VarConfig& c) const {
  Breakdown b;
  bool needed = needed_[static_cast<size_t>(v.tensor)];
  bool partial = has_partial(c.layout);
  if (is_output_[static_cast<size_t>(v.tensor)]) {
    b += loss_terms(v.tensor, c.layout);  // the loss holds the reduced copy; a partial one is another
    if (needed && partial) b[Term::Activations] += static_cast<double>(local_bytes(v.tensor, c.layout));
  } else if (needed) {
    b[Term::Activations] += static_cast<double>(local_bytes(v.tensor, c.layout));
  }
  return b;
}

Breakdown StrategySpace::variable_terms(int var, int config) const {
  return var_terms_.at(static_cast<size_t>(var)).at(static_cast<size_t>(config));
}

Breakdown StrategySpace::link_terms(int link, int from_config, int to_config) const {
  Breakdown b;
  add_link_terms(b, link, from_config, to_config);
  return b;
}

void StrategySpace::add_link_terms(Breakdown& b, int link, int from_config, int to_config) const {
  const int32_t ci = comm_link_[link_pair(static_cast<size_t>(link), from_config, to_config)];
  const bool same = ci < 0;  // the two layouts are equal
  CommCost comm;
  if (!same) {
    comm = comm_values_[static_cast<size_t>(ci)];
    add_comm(b, Purpose::Forward, comm.forward);
    add_comm(b, Purpose::Backward, comm.backward);
  }
  const auto [at_from, at_to] = link_held_[link_pair(static_cast<size_t>(link), from_config, to_config)];
  b[Term::Activations] += at_from + at_to;
  // Moved again in backward (regathers(), charged in comm.backward, its copy in the link's
  // backward transient): a tensor its producer's recompute regenerates, and a parameter gathered
  // from its shards (ZeRO-3 / FSDP style) or a tensor computed from weights alone where the
  // reader's backward reads it again; neither is held from forward. A local slice of a replicated
  // parameter is a view.
}

std::pair<double, double> StrategySpace::link_activations(int link, int from_config, int to_config, bool same) const {
  const Link& l = links_[static_cast<size_t>(link)];
  const Variable& from = vars_[static_cast<size_t>(l.from)];
  const Variable& to = vars_[static_cast<size_t>(l.to)];
  const bool to_needs = l.to_keeps || recomputes(l.to, to_config);
  const double from_bytes = link_from_bytes_[static_cast<size_t>(link)][static_cast<size_t>(from_config)];
  const double to_bytes = link_to_bytes_[static_cast<size_t>(link)][static_cast<size_t>(to_config)];
  if (from.kind == VarKind::Op && to.kind == VarKind::Op) {
    if (recomputes(l.from, from_config)) return {0, 0};
    const double kept = l.from_keeps ? from_bytes : 0;
    return {kept, to_needs && !(l.from_keeps && same) ? to_bytes : 0};
  }
  if (from.kind == VarKind::Op) return {l.from_keeps && !same ? from_bytes : 0, 0};  // -> tensor variable
  if (from.kind == VarKind::Parameter) return {0, 0};
  // Input or tensor variable -> reader.
  if (to_needs && !same) return {0, to_bytes};
  if (to_needs && from.kind == VarKind::Tensor && !needed_[static_cast<size_t>(l.tensor)] &&
      !(is_output_[static_cast<size_t>(l.tensor)] && !has_partial(to_layout(l, to_config)))) {
    // A recomputing reader needs the variable's own copy, which nobody else keeps (a graph
    // output's is the loss's, unless partial): charged here, once per such reader and slot (two
    // of them in the same layout are counted twice: conservative).
    return {0, to_bytes};
  }
  return {0, 0};
}

double StrategySpace::op_workspace(size_t var, int config) const {
  const Variable& v = vars_[var];
  if (v.kind != VarKind::Op) return 0;
  const NodeCost& nc = node_costs_[static_cast<size_t>(v.node)];
  const OpConfig& oc = v.op_configs[static_cast<size_t>(v.configs[static_cast<size_t>(config)].op_config)];
  const Node& node = graph_->nodes[static_cast<size_t>(v.node)];
  double w = 0;
  bool backward = false;
  for (size_t k = 0; k < node.inputs.size(); ++k) {
    if (node.inputs[k] >= 0 && nc.input_grad[k]) {
      w += static_cast<double>(local_bytes(node.inputs[k], oc.inputs[k]));
      backward = true;
    }
  }
  if (!backward) return 0;
  for (size_t o = 0; o < node.outputs.size(); ++o)
    if (node.outputs[o] >= 0 && requires_grad_[static_cast<size_t>(node.outputs[o])])
      w += static_cast<double>(local_bytes(node.outputs[o], oc.outputs[o]));
  if ((node.op_type == "Conv" || node.op_type == "ConvTranspose") && node.inputs.size() >= 2 && node.inputs[1] >= 0 &&
      node.outputs[0] >= 0) {
    auto local = [&](int t, const Layout& l) { return max_local_shape(graph_->tensors[static_cast<size_t>(t)].shape, l, mesh_); };
    w += static_cast<double>(conv_backward_workspace(node, local(node.inputs[0], oc.inputs[0]), local(node.inputs[1], oc.inputs[1]),
                                                     local(node.outputs[0], oc.outputs[0]), nc.input_grad[1], options_.kernel_threads));
  }
  return w;
}

double StrategySpace::parameter_workspace(const Variable& v, const VarConfig& c) const {
  const Tensor& t = graph_->tensors[static_cast<size_t>(v.tensor)];
  const Training& tr = options_.training;
  const Layout grad = gradient_layout(c.layout);
  if (grad == c.layout) return 0;  // nothing replicates it: no synchronisation
  if (c.zero < 2) return static_cast<double>(transient_bytes(redistribute(t.shape, tr.gradient_bytes(), grad, c.layout, mesh_), mesh_, true));
  // ZeRO-2: the whole local gradient, from its first addend to the reduce-scatter onto the chunk,
  // and the reduce-scatter's own; then the gather of the updated chunks.
  const int64_t n = numel(max_local_shape(t.shape, c.layout, mesh_));
  const ZeroFlat z = zero_flat(c.layout);
  const auto scatter = static_cast<double>(n * tr.gradient_bytes() + transient_bytes(redistribute({n}, tr.gradient_bytes(), z.gradient, z.chunk, mesh_), mesh_, true));
  const auto gather = static_cast<double>(transient_bytes(redistribute({n}, tr.weight_bytes(), z.chunk, z.whole, mesh_), mesh_));
  return std::max(scatter, gather);
}

StrategySpace::StepPeak StrategySpace::step_peak(const std::vector<int>& assignment) const {
  TO_CHECK(assignment.size() == vars_.size());
  const size_t n = graph_->nodes.size();
  auto config = [&](int var) { return assignment[static_cast<size_t>(var)]; };
  // Scratch reused by every call on this thread (the planner re-costs thousands of points).
  thread_local std::vector<double> held, freed, in_flight, regenerated;
  // Activations by the position after whose backward they are freed; -1: never in the step.
  held.assign(n, 0.0);
  double total = 0;
  auto hold = [&](int pos, double bytes) {
    total += bytes;
    if (pos >= 0) held[static_cast<size_t>(pos)] += bytes;
  };
  for (size_t i = 0; i < vars_.size(); ++i) hold(position_[i], var_terms_[i][static_cast<size_t>(assignment[i])][Term::Activations]);
  for (const PeakLink& l : peak_links_) {
    const auto [at_from, at_to] = link_held_[l.pair(assignment)];
    hold(l.from_position, at_from);
    hold(l.to_position, at_to);
  }
  // freed[k]: what the backward has freed when position k's backward runs (everything after k).
  freed.assign(n, 0.0);
  for (size_t k = n; k-- > 1;) freed[k - 1] = freed[k] + held[k];
  // in_flight[k]: gradients accumulating for tensors made before k and read after it.
  in_flight.assign(n + 1, 0.0);
  regenerated.assign(n + 1, 0.0);  // of in_flight, what is activations
  for (const Flight& f : flights_) {
    const double bytes = flight_bytes(f, config(f.var));
    if (bytes == 0) continue;
    in_flight[static_cast<size_t>(f.first)] += bytes;
    in_flight[static_cast<size_t>(f.last)] -= bytes;
    if (!f.regenerated) continue;
    regenerated[static_cast<size_t>(f.first)] += bytes;
    regenerated[static_cast<size_t>(f.last)] -= bytes;
  }
  for (size_t k = 1; k <= n; ++k) {
    in_flight[k] += in_flight[k - 1];
    regenerated[k] += regenerated[k - 1];
  }
  StepPeak peak{total, 0, 0};  // the end of forward: every activation held, nothing in flight
  auto candidate = [&](int pos, double transient) {
    if (transient <= 0 || pos < 0) return;
    const auto k = static_cast<size_t>(pos);
    const double over = transient + in_flight[k] - freed[k];
    if (over > peak.workspace) peak = {total - freed[k] + regenerated[k], transient + in_flight[k] - regenerated[k], over};
  };
  for (size_t i = 0; i < vars_.size(); ++i) candidate(position_[i], var_transient(i, assignment));
  for (const PeakLink& l : peak_links_) candidate(l.link_position, link_transient(l, assignment));
  return peak;
}

double StrategySpace::var_transient(size_t var, const std::vector<int>& a) const {
  const double w = workspace_[var][static_cast<size_t>(a[var])];
  if (vars_[var].kind != VarKind::Parameter || w <= 0 || position_[var] < 0) return w;
  // A parameter's gradient is synchronised inside its first reader's backward, beside that op's
  // gradients (the op variable numbered by the parameter's position); a ZeRO-2 parameter's own
  // gradient is in its workspace already, not also in flight.
  const int own = param_flight_[var];
  const auto reader = static_cast<size_t>(position_[var]);
  const double beside = workspace_[reader][static_cast<size_t>(a[reader])];
  return w + beside - (own < 0 ? 0 : flight_bytes(flights_[static_cast<size_t>(own)], a[var]));
}

double StrategySpace::link_transient(const PeakLink& l, const std::vector<int>& a) const {
  const int32_t index = comm_link_[l.pair(a)];
  if (index < 0) return 0;
  // Forward, before the reader runs; backward, inside the reader's backward, beside its
  // gradients (its workspace).
  const CommCost& c = comm_values_[static_cast<size_t>(index)];
  const double beside = l.to_op ? workspace_[static_cast<size_t>(l.to)][static_cast<size_t>(a[static_cast<size_t>(l.to)])] : 0;
  return std::max(c.transient_forward, c.transient_backward > 0 ? c.transient_backward + beside : 0.0);
}

StrategySpace::WorkspaceScan::WorkspaceScan(const StrategySpace& space) : s_(space) {
  const size_t n = s_.graph_->nodes.size();
  const auto whole = [&](double v) { exact_ = exact_ && std::floor(v) == v && std::fabs(v) < 0x1p52; };
  for (const auto& terms : s_.var_terms_)
    for (const Breakdown& b : terms) whole(b[Term::Activations]);
  for (const auto& [from, to] : s_.link_held_) {
    whole(from);
    whole(to);
  }
  for (const auto& bytes : s_.flight_bytes_)
    for (double v : bytes) whole(v);
  for (const auto& w : s_.workspace_)
    for (double v : w) whole(v);
  for (const CommCost& c : s_.comm_values_) {
    whole(c.transient_forward);
    whole(c.transient_backward);
  }
  const size_t vars = s_.vars_.size();
  at_.resize(n);
  links_of_.resize(vars);
  flights_of_.resize(vars);
  beside_of_.resize(vars);
  for (size_t i = 0; i < vars; ++i) {
    const int pos = s_.position_[i];
    if (pos < 0) continue;
    at_[static_cast<size_t>(pos)].emplace_back(false, static_cast<int>(i));
    // A parameter's candidate reads the workspace of the variable numbered by its position.
    if (s_.vars_[i].kind == VarKind::Parameter) beside_of_[static_cast<size_t>(pos)].push_back(static_cast<int>(i));
  }
  for (size_t e = 0; e < s_.links_.size(); ++e) {
    const Link& l = s_.links_[e];
    links_of_[static_cast<size_t>(l.from)].push_back(static_cast<int>(e));
    links_of_[static_cast<size_t>(l.to)].push_back(static_cast<int>(e));
    if (s_.link_position_[e] >= 0) at_[static_cast<size_t>(s_.link_position_[e])].emplace_back(true, static_cast<int>(e));
  }
  for (size_t f = 0; f < s_.flights_.size(); ++f) flights_of_[static_cast<size_t>(s_.flights_[f].var)].push_back(static_cast<int>(f));
  link_mark_.assign(s_.links_.size(), 0);
  position_mark_.assign(n, 0);
}

void StrategySpace::WorkspaceScan::add_var(int var, double sign) {
  const int pos = s_.position_[static_cast<size_t>(var)];
  if (pos >= 0) held_[static_cast<size_t>(pos)] += sign * s_.var_terms_[static_cast<size_t>(var)][static_cast<size_t>(current_[static_cast<size_t>(var)])][Term::Activations];
  for (int f : flights_of_[static_cast<size_t>(var)]) {
    const Flight& fl = s_.flights_[static_cast<size_t>(f)];
    const double bytes = s_.flight_bytes(fl, current_[static_cast<size_t>(var)]);
    flight_delta_[static_cast<size_t>(fl.first)] += sign * bytes;
    flight_delta_[static_cast<size_t>(fl.last)] -= sign * bytes;
  }
}

void StrategySpace::WorkspaceScan::add_link(int link, double sign) {
  const PeakLink& l = s_.peak_links_[static_cast<size_t>(link)];
  const auto [at_from, at_to] = s_.link_held_[l.pair(current_)];
  if (l.from_position >= 0) held_[static_cast<size_t>(l.from_position)] += sign * at_from;
  if (l.to_position >= 0) held_[static_cast<size_t>(l.to_position)] += sign * at_to;
}

void StrategySpace::WorkspaceScan::refresh(int position) {
  double top = -std::numeric_limits<double>::infinity();
  for (const auto& [link, index] : at_[static_cast<size_t>(position)]) {
    const double t = link ? s_.link_transient(s_.peak_links_[static_cast<size_t>(index)], current_)
                          : s_.var_transient(static_cast<size_t>(index), current_);
    if (t > 0) top = std::max(top, t);
  }
  top_[static_cast<size_t>(position)] = top;
}

void StrategySpace::WorkspaceScan::rebuild(const std::vector<int>& assignment) {
  const size_t n = s_.graph_->nodes.size();
  current_ = assignment;
  held_.assign(n, 0.0);
  flight_delta_.assign(n + 1, 0.0);
  top_.assign(n, 0.0);
  for (size_t i = 0; i < s_.vars_.size(); ++i) add_var(static_cast<int>(i), 1);
  for (size_t e = 0; e < s_.links_.size(); ++e) add_link(static_cast<int>(e), 1);
  for (size_t k = 0; k < n; ++k) refresh(static_cast<int>(k));
}

double StrategySpace::WorkspaceScan::workspace(const std::vector<int>& assignment) {
  TO_CHECK(assignment.size() == s_.vars_.size());
  if (!exact_) return s_.workspace(assignment);
  if (current_.empty()) {
    rebuild(assignment);
  } else {
    changed_.clear();
    for (size_t i = 0; i < assignment.size(); ++i)
      if (assignment[i] != current_[i]) changed_.push_back(static_cast<int>(i));
    links_touched_.clear();
    positions_touched_.clear();
    const auto touch = [&](int pos) {
      if (pos >= 0 && !position_mark_[static_cast<size_t>(pos)]) {
        position_mark_[static_cast<size_t>(pos)] = 1;
        positions_touched_.push_back(pos);
      }
    };
    for (int v : changed_) {
      touch(s_.position_[static_cast<size_t>(v)]);
      for (int p : beside_of_[static_cast<size_t>(v)]) touch(s_.position_[static_cast<size_t>(p)]);
      for (int e : links_of_[static_cast<size_t>(v)]) {
        if (link_mark_[static_cast<size_t>(e)]) continue;
        link_mark_[static_cast<size_t>(e)] = 1;
        links_touched_.push_back(e);
        touch(s_.link_position_[static_cast<size_t>(e)]);
      }
    }
    // Out with the old configurations' bytes, in with the new: whole numbers, so exact.
    for (int v : changed_) add_var(v, -1);
    for (int e : links_touched_) add_link(e, -1);
    for (int v : changed_) current_[static_cast<size_t>(v)] = assignment[static_cast<size_t>(v)];
    for (int v : changed_) add_var(v, 1);
    for (int e : links_touched_) {
      add_link(e, 1);
      link_mark_[static_cast<size_t>(e)] = 0;
    }
    for (int pos : positions_touched_) {
      refresh(pos);
      position_mark_[static_cast<size_t>(pos)] = 0;
    }
  }
  // step_peak()'s scan: freed[k] is everything held after k, in flight the prefix sums.
  const size_t n = held_.size();
  freed_.assign(n, 0.0);
  for (size_t k = n; k-- > 1;) freed_[k - 1] = freed_[k] + held_[k];
  double in_flight = 0, peak = 0;
  for (size_t k = 0; k < n; ++k) {
    in_flight += flight_delta_[k];
    if (top_[k] > 0) {
      const double over = top_[k] + in_flight - freed_[k];
      if (over > peak) peak = over;
    }
  }
  return peak;
}

double StrategySpace::flight_bytes(const Flight& f, int config) const {
  return flight_bytes_[static_cast<size_t>(&f - flights_.data())][static_cast<size_t>(config)];
}

double StrategySpace::flight_bytes_of(const Flight& f, int config) const {
  const Variable& v = vars_[static_cast<size_t>(f.var)];
  const VarConfig& c = v.configs[static_cast<size_t>(config)];
  if (f.regenerated && !c.recompute) return 0;
  if (v.kind == VarKind::Op) return static_cast<double>(local_bytes(f.tensor, v.op_configs[static_cast<size_t>(c.op_config)].outputs[static_cast<size_t>(f.slot)]));
  if (c.zero < 2 || gradient_layout(c.layout) == c.layout) return 0;  // accumulated into the stored gradient
  const Tensor& t = graph_->tensors[static_cast<size_t>(f.tensor)];
  return static_cast<double>(numel(max_local_shape(t.shape, c.layout, mesh_)) * options_.training.gradient_bytes());
}

double StrategySpace::workspace(const std::vector<int>& assignment) const { return step_peak(assignment).workspace; }

double StrategySpace::workspace_floor() const {
  if (bound_carried_) return 0;
  // Any strategy's workspace is at least a candidate's least transient less the most the
  // positions after it can hold (gradients in flight only add).
  const size_t n = graph_->nodes.size();
  std::vector<double> most_held(n, 0.0);
  for (size_t i = 0; i < vars_.size(); ++i) {
    if (position_[i] < 0) continue;
    double m = 0;
    for (const Breakdown& b : var_terms_[i]) m = std::max(m, b[Term::Activations]);
    most_held[static_cast<size_t>(position_[i])] += m;
  }
  for (const Link& l : links_) {  // at most one copy of the tensor at each end
    const double whole = static_cast<double>(numel(graph_->tensors[static_cast<size_t>(l.tensor)].shape)) *
                         options_.training.element_bytes(graph_->tensors[static_cast<size_t>(l.tensor)]);
    for (int var : {l.from, l.to})
      if (position_[static_cast<size_t>(var)] >= 0) most_held[static_cast<size_t>(position_[static_cast<size_t>(var)])] += whole;
  }
  std::vector<double> after(n, 0.0);
  for (size_t k = n; k-- > 1;) after[k - 1] = after[k] + most_held[k];
  double floor = 0;
  for (size_t i = 0; i < vars_.size(); ++i) {
    if (workspace_[i].empty() || position_[i] < 0) continue;
    const double least = *std::min_element(workspace_[i].begin(), workspace_[i].end());
    if (least > 0) floor = std::max(floor, least - after[static_cast<size_t>(position_[i])]);
  }
  return floor;
}

Breakdown StrategySpace::breakdown(const std::vector<int>& assignment) const {
  TO_CHECK(assignment.size() == vars_.size());
  Breakdown b;
  for (size_t i = 0; i < vars_.size(); ++i) {
    TO_CHECK(assignment[i] >= 0 && static_cast<size_t>(assignment[i]) < var_terms_[i].size());
    b += var_terms_[i][static_cast<size_t>(assignment[i])];
  }
  for (size_t e = 0; e < links_.size(); ++e) {
    const Link& l = links_[e];
    add_link_terms(b, static_cast<int>(e), assignment[static_cast<size_t>(l.from)], assignment[static_cast<size_t>(l.to)]);
  }
  b[Term::Workspace] = workspace(assignment);
  return b;
}

Breakdown StrategySpace::breakdown_at_peak(const std::vector<int>& assignment) const {
  Breakdown b = breakdown(assignment);
  const StepPeak p = step_peak(assignment);
  b[Term::Activations] = p.activations;
  b[Term::Workspace] = p.transient;
  return b;
}

Cost StrategySpace::cost(const std::vector<int>& assignment) const {
  if (assignment.size() != vars_.size()) throw std::invalid_argument("strategy: one configuration per variable needed");
  for (size_t i = 0; i < vars_.size(); ++i)
    if (assignment[i] < 0 || assignment[i] >= static_cast<int>(vars_[i].configs.size()))
      throw std::invalid_argument("strategy: configuration out of range for " + vars_[i].name);
  // The Problem was validated when built; the sum is evaluate()'s own.
  Cost c = detail::evaluate_unchecked(problem_, assignment);
  c.memory += workspace(assignment) - peak_bound(assignment);
  return c;
}

}  // namespace tensoropt::planner
