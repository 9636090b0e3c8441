// The strategy space of one model on one device mesh, as an FT Problem (docs/design.md "Cost").
//
// Variables (the Problem's nodes), one per:
//   op         every graph node; configurations = enumerate_configs (planner/parallel/op_configs.h), each
//              also with "recompute" when the op may recompute (below)
//   parameter  every trainable parameter read by an op; configurations = the layouts its readers'
//              configurations ask for, each with ZeRO level 0 or 2 when some mesh axis replicates
//              it (the parameter's storage; readers redistribute from it). ZeRO-1 is left out: it
//              moves the same bytes as ZeRO-2 and keeps more, so it is never on a frontier.
//   input      every data input; configurations = the layouts its readers ask for
//   tensor     every activation read more than once (or read and also a graph output);
//              configurations = the layouts its producer and readers use. It is the one copy the
//              readers redistribute from, so a fork (attention's Q/K/V) moves data once per layout.
// Links (the Problem's edges), one per use of a tensor: producer -> reader, carrying the
// redistribution (planner/parallel/redistribute.h) from the producer's layout to the reader's and, when a
// gradient flows back, its backward_plan.
//
// Cost terms (Breakdown), all sums over variables and links, so FT is exact on them:
//   compute    roofline of the local shard per op, forward and backward (planner/compute_model.h);
//              a recomputed op pays its forward again, as does an op making model state a
//              backward reads (a transposed weight: the runtime runs it again there)
//   comm       every redistribution step's alpha-beta time (planner/parallel/collectives.h), by purpose
//              (forward, backward, gradient synchronisation: bucketed, bucketed_step_time) and kind
//   optimizer  one memory-bound pass over the local (ZeRO: sharded) weights, gradients and state
//   memory     weights, gradients and optimizer state per device (planner/training.h; ZeRO-2 divides
//              the optimizer state and the gradients by the replicating axes' sizes); a
//              parameter a reader uses in another layout than its storage (gathered from shards,
//              as ZeRO-3/FSDP do) is not held: the copy is a transient, made again for the
//              reader's backward where that reads it (regathers());
//              activations saved for backward in the layouts they are saved in; data inputs;
//              buffers and constants as each reader holds them
// plus one term outside the sum, workspace(): what the step's peak adds to the summed memory (the
// transient of one op's backward, redistribution or gradient synchronisation, with the gradients in
// flight, less the activations the backward has freed by then), added to a strategy's memory after
// FT (docs/cost-model.md "Workspace: the step's peak"). Part of it can be carried by FT (docs/search.md "The peak bound"): carry_peak_bound() adds to the
// Problem's memory a lower bound of the workspace that is a sum over variables and one link (the
// peak at the last op's backward, where nothing has been freed yet); cost() then takes it off again.
//
// Saved activations. Tensor t produced by u and read by w: u keeps t in u's output layout if u's
// backward needs it; w keeps t in w's input layout if w's backward needs it or w recomputes, except
// when that is the same copy as u's (same layout, u keeps it). For a tensor variable T the copy in
// T's layout is charged once at T when its producer or a reader keeps it for backward, at the
// link of each recomputing reader that needs it when none does, and copies in other layouts at
// the links that make them. Views (Reshape, ...) are counted as copies: conservative.
// Recompute. An op u "recomputes" when none of its outputs is a graph output or read through a
// tensor variable and it keeps something (its outputs or extras such as dropout masks): u then
// keeps nothing, pays its forward compute again in backward (and the redistribution to readers
// that keep its output), and its inputs must be kept (charged at its input links), as activation
// checkpointing of a one-op segment; chains of recomputing ops regenerate each other. With
// recompute_all, any op whose outputs go only to op readers over direct links (or nowhere, except
// BatchNormalization's running statistics) may recompute, keeping something or not: a chain of
// them keeps only what enters it (a transformer layer: its input and the tensors several of its
// ops read, which are tensor variables and never recompute).
// Graph outputs are read by the loss: held until backward in their layout, partial sums reduced.
//
// Code, by concept (planner/space/): terms.h the cost vocabulary (Term, Breakdown); space.cc the
// constructor and a strategy's cost; variables.cc and links.cc the Problem's nodes and edges;
// cost_terms.cc and transitions.cc their terms; problem.cc the Problem built from them;
// schedule.cc, step_peak.cc and workspace_scan.cc the step's peak; peak_bound.cc the peak bound.
//
// Thread-safety: immutable after build, but for carry_peak_bound() and drop_peak_bound() (the
// planner calls them on one thread, before and between solves); const methods safe from many threads.
// Errors: InputError for a model the space cannot handle (e.g. a tensor with no layout in common, or
// one so large that the bytes its collectives move on this mesh would overflow int64).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <map>
#include <unordered_map>
#include <utility>
#include <vector>

#include "graph/ir.h"
#include "graph/step_schedule.h"
#include "graph/summary.h"
#include "planner/compute_model.h"
#include "planner/parallel/op_configs.h"
#include "planner/ft/problem.h"
#include "planner/parallel/redistribute.h"
#include "planner/space/terms.h"
#include "planner/training.h"

namespace tensoropt::planner {

enum class VarKind : uint8_t { Op, Parameter, Input, Tensor };

struct VarConfig {
  int op_config = -1;      // op variables: index into Variable::op_configs
  bool recompute = false;  // op variables
  Layout layout = Layout({});  // parameter, input and tensor variables
  int zero = 0;            // parameter variables: ZeRO level, 0 or 2
  std::string name;        // unique within the variable: "b:S0 n:S1", "b:S0 recompute", "[S(0),R] zero-2"
};

struct Variable {
  VarKind kind = VarKind::Op;
  std::string name;  // unique: "op:<node>", "param:<tensor>", "input:<tensor>", "tensor:<tensor>"
  int node = -1;     // op variables
  int tensor = -1;   // the other kinds
  IterSpace space;                  // op variables
  std::vector<OpConfig> op_configs; // op variables
  std::vector<VarConfig> configs;
  bool may_recompute = false;
  int find_config(const std::string& config_name) const;  // -1 when absent
};

struct Link {
  int from = -1, to = -1;  // variables
  int tensor = -1;
  int from_slot = -1;      // the producer's output position (op variables)
  int to_slot = -1;        // the reader's input position (op variables)
  bool gradient = false;   // a gradient flows back along the link
  bool from_keeps = false; // the producer op's backward needs the tensor
  bool to_keeps = false;   // the reader op's backward needs the tensor
  bool to_rereads = false; // the reader op's backward reads it too, as model state (not kept)
  bool state = false;      // model state: a parameter, or computed from weights and constants alone
};

struct SpaceOptions {
  Training training;
  bool recompute = true;       // offer recompute on ops
  bool recompute_all = false;  // on every op that may (not only those that keep something themselves)
  bool zero = true;            // offer ZeRO-2 on parameters
  // A parameter of fewer elements is stored whole on every device, never split and gathered at a
  // use (DeepSpeed's stage3_param_persistence_threshold): a reader that splits it takes its slice
  // locally, and ZeRO-2 may still shard its gradient and optimizer state. Gathering a bias or a
  // norm's scale on its own costs a latency-bound collective at each use to save a few KiB; every
  // such choice is one more point on the frontier (GPT-2 XL on 64 GPUs: 13,019 points, 9,000 of
  // them trading 0.4% of memory for up to 2x the step time). 0: every parameter may be split.
  int64_t param_persistence = 0;
  // Threads of each worker of the CPU backend: its convolutions' backward holds an im2col buffer
  // per part of the images (planner/parallel/kernel_workspace.h), costed in the workspace.
  int kernel_threads = 1;
};

class StrategySpace {
 public:
  StrategySpace(const Graph& graph, const DeviceMesh& mesh, const ComputeModel& compute, const SpaceOptions& options);

  const Graph& graph() const { return *graph_; }
  const DeviceMesh& mesh() const { return mesh_; }
  const SpaceOptions& options() const { return options_; }
  const Problem& problem() const { return problem_; }
  const std::vector<Variable>& variables() const { return vars_; }
  const std::vector<Link>& links() const { return links_; }  // links_[e] is problem().edges[e]
  const std::vector<NodeCost>& node_costs() const { return node_costs_; }  // graph/summary.h, per node
  int find_variable(const std::string& name) const;          // -1 when absent

  // The terms of one variable's configuration and of one link under its ends' configurations;
  // the Problem's costs are exactly their time() and memory().
  Breakdown variable_terms(int var, int config) const;
  Breakdown link_terms(int link, int from_config, int to_config) const;
  // The moment of a strategy's memory peak as the runtime's step meets it (docs/cost-model.md
  // "Workspace"): at each op's backward, each redistribution and each gradient synchronisation,
  // the activations not yet freed (the backward frees what it has passed), the transient there
  // and the gradients in flight across it (made before the op, read after it); or the end of
  // forward, every activation held and no transient. workspace is what that peak adds to the
  // summed memory: transient + in flight - activations already freed, at least 0.
  struct StepPeak {
    double activations = 0;  // held at the peak
    double transient = 0;    // live at the peak: the op's or transition's buffers and gradients in flight
    double workspace = 0;
  };
  StepPeak step_peak(const std::vector<int>& assignment) const;
  double workspace(const std::vector<int>& assignment) const;  // step_peak().workspace
  // workspace() of many strategies in turn, each found from the previous one through the
  // variables that changed: the planner re-costs thousands of FT points a mesh, in time order,
  // and neighbours share most of their configurations. Every byte count the peak sums is a whole
  // number (checked when built), so its sums do not depend on their order and each result equals
  // workspace() bit for bit; where one is not, every call recomputes, as workspace() does. Work
  // per call: the changed variables' links and flights, the candidates at the positions they
  // touch, and three passes over the step's positions. Holds a reference to the space; not
  // thread-safe (one per thread).
  class WorkspaceScan {
   public:
    explicit WorkspaceScan(const StrategySpace& space);
    double workspace(const std::vector<int>& assignment);

   private:
    void rebuild(const std::vector<int>& assignment);
    void add_var(int var, double sign);    // the variable's activations and flights at current_
    void add_link(int link, double sign);  // the link's activations at current_
    void refresh(int position);            // top_[position] from its candidates
    const StrategySpace& s_;
    bool exact_ = true;
    std::vector<int> current_;
    std::vector<double> held_, flight_delta_, top_, freed_;
    // Per position, its candidates: (false, variable) or (true, link).
    std::vector<std::vector<std::pair<bool, int>>> at_;
    std::vector<std::vector<int>> links_of_, flights_of_, beside_of_;  // per variable
    std::vector<int> changed_, links_touched_, positions_touched_;
    std::vector<char> link_mark_, position_mark_;
  };
  // Carries part of the step's peak in the Problem (before solving): at the backward of the op at
  // the last position nothing has been freed, so every strategy's workspace is at least that op's
  // transient, or the transient of one link into it at that position (a function of the link's two
  // ends), plus the gradients in flight across it (each a function of one variable). Of the links
  // into the op the bound follows one carrying model state (a weight gathered for the op: the
  // summed memory counts it stored split, so only the transient shows the gathered copy), else the
  // one whose transient is largest under `reference`. The bound is the larger of the op's transient
  // and that link's, so it needs the op's least transient to be positive (the op's backward is then
  // always a candidate). It is carried only when it is the whole workspace of `reference` (the
  // planner passes its fastest strategy): the peak lies at the last op, as on transformers (the LM
  // head's backward, with the tied embedding's gradient in flight). Then its terms are added to
  // the memory of the link's Problem edge (or of the op's node) and of each flight's variable, and
  // FT is exact for time and summed memory plus the bound; returns whether it was carried.
  // REQUIRES: reference is a strategy (one configuration per variable); nothing carried yet.
  bool carry_peak_bound(const std::vector<int>& reference);
  // Gives the Problem back the costs it had before carry_peak_bound(), exactly; a no-op if nothing
  // is carried.
  void drop_peak_bound();
  bool peak_bound_carried() const { return bound_carried_; }
  // The bound carry_peak_bound() added to the Problem's memory for this strategy; 0 when none.
  double peak_bound(const std::vector<int>& assignment) const;
  // A lower bound on workspace() - peak_bound() over every strategy: 0 once the peak bound is
  // carried (workspace() >= peak_bound() by its construction); before, the largest, over ops and
  // parameters, of the least transient any configuration has less the most the positions after it
  // can hold.
  double workspace_floor() const;
  // Every term of a strategy, workspace included.
  Breakdown breakdown(const std::vector<int>& assignment) const;
  // The same, with activations and workspace as they stand at the step's peak (step_peak()): the
  // runtime's measured memory by kind at its peak compares with this. memory() is the same.
  Breakdown breakdown_at_peak(const std::vector<int>& assignment) const;
  // The strategy's (time, memory): evaluate(problem(), assignment) plus workspace() less
  // peak_bound(). FT points are reported with exactly this.
  Cost cost(const std::vector<int>& assignment) const;

 private:
  // Building, in the constructor's order: the op variables (node n is variable n), one variable
  // per parameter, data input and multi-use activation (in tensor order), the links, the op
  // variables' configurations (whether an op may recompute needs the links), the names, the
  // step's schedule, then the Problem.
  using Reads = std::vector<std::pair<int, int>>;  // one tensor's readers: (node, input position)
  using Uses = std::vector<Reads>;                 // per tensor
  void add_op_variables(const Uses& uses);                                    // variables.cc
  Variable op_variable(size_t node, const Uses& uses) const;
  void add_tensor_variables(const Uses& uses);
  Variable parameter_variable(size_t tensor, const Reads& reads) const;
  Variable input_variable(size_t tensor, const Reads& reads) const;
  Variable tensor_variable(size_t tensor, const Reads& reads) const;
  // The layouts the readers ask for, each added once; a source's partial sums become replicated.
  void add_reader_layouts(std::vector<Layout>& layouts, const Reads& reads, bool source) const;
  // One configuration per layout, and with zero_offered also ZeRO-2 on each a mesh axis replicates.
  std::vector<VarConfig> layout_configs(const std::vector<Layout>& layouts, bool zero_offered) const;
  void add_op_configs();
  void name_variables();
  void add_links(const Uses& uses);                                           // links.cc
  void add_reader_links();
  void add_tensor_variable_links(const Uses& uses);
  void build_schedule();                                                      // schedule.cc
  void add_gradient_flights();
  void add_regenerated_flights();
  void add_parameter_flights();
  void build_problem();                                                       // problem.cc
  void add_variable_costs();
  void add_link_costs(size_t link);

  struct CommCost {
    std::array<double, 4> forward{}, backward{};
    double transient_forward = 0, transient_backward = 0;  // transient_bytes of the plan and of its backward plan
  };
  const Layout& from_layout(const Link& l, int config) const;
  const Layout& to_layout(const Link& l, int config) const;
  bool recomputes(int var, int config) const;
  void add_link_terms(Breakdown& b, int link, int from_config, int to_config) const;  // b += link_terms()
  // A link's activations, those the producer keeps and those the reader keeps; same: the two
  // layouts are equal.
  std::pair<double, double> link_activations(int link, int from_config, int to_config, bool same) const;
  int64_t local_bytes(int tensor, const Layout& layout) const;
  double op_workspace(size_t var, int config) const;  // one op variable's backward transient
  double parameter_workspace(const Variable& v, const VarConfig& c) const;  // its gradient synchronisation's transient
  // Forward and backward time per collective kind of one layout transition, while building:
  // transition_index() is its place in comm_values_, each distinct transition costed once (layers
  // repeat, and so do their transitions).
  CommCost transition(int tensor, const Layout& from, const Layout& to, bool gradient) const;
  void add_comm(Breakdown& b, Purpose p, const std::array<double, 4>& times) const;
  // Gradient synchronisation is bucketed (bucketed_step_time) unless `bucketed` is false (ZeRO-2:
  // the runtime reduce-scatters and gathers each parameter on its own).
  void add_plan(Breakdown& b, Purpose p, const RedistributePlan& plan, bool bucketed = true) const;
  Breakdown op_terms(const Variable& v, const VarConfig& c) const;
  Breakdown parameter_terms(const Variable& v, const VarConfig& c) const;
  Breakdown tensor_terms(const Variable& v, const VarConfig& c) const;
  Breakdown loss_terms(int tensor, const Layout& layout) const;

  const Graph* graph_;
  DeviceMesh mesh_;
  const ComputeModel* compute_;
  SpaceOptions options_;
  double bucket_bytes_ = 0;  // a gradient bucket's bytes: 25 MiB, or the whole gradient when less
  std::vector<NodeCost> node_costs_;
  // What the step keeps and when gradients are made and complete, without recompute
  // (graph/step_schedule.h, the executors' schedule); configurations that recompute change it as
  // the schedule's recompute rules say (space.h "Recompute").
  StepSchedule schedule_;
  std::vector<bool> reruns_;          // per node: computes model state a backward reads; run again there
  // Per tensor: for a constant (TensorKind::Constant, no producer) the node and input slot that
  // charge its whole bytes, its first read; else {-1, -1}. The runtime holds a constant whole on
  // every device, once, however many ops read it (launcher/runtime/weights.h).
  std::vector<std::pair<int, int>> constant_reader_;
  std::vector<bool> requires_grad_;
  std::vector<std::vector<double>> workspace_;  // [var][config]: op_workspace or parameter_workspace
  // The step's schedule: position_[var] is the node after whose backward what the variable holds
  // is freed and where its transient lives (op: its node; tensor: its producer; parameter: its
  // first reader, where its gradient completes; input: -1, never); link_position_[link] where its
  // redistribution runs (the reader's node, or the producer's for a link into a tensor variable).
  std::vector<int> position_, link_position_;
  // A gradient accumulating while the ops at positions [first, last) run their backward: an op
  // output's (var: the producer, slot: the output; first: the producer + 1, last: its last reader)
  // or, under ZeRO-2, a parameter's whole local gradient (slot -1; from its last reader to its first,
  // where it is reduce-scattered).
  // Also a recomputing op's output, regenerated in backward for readers that keep it (regenerated:
  // from the op to its last such reader, held as an activation).
  struct Flight {
    int var, slot, tensor, first, last;
    bool regenerated = false;
  };
  std::vector<Flight> flights_;
  std::vector<int> param_flight_;  // per variable: its flight when a ZeRO-2 parameter has one, else -1
  double flight_bytes(const Flight& f, int config) const;     // flight_bytes_'s entry
  double flight_bytes_of(const Flight& f, int config) const;  // computed from the layouts
  // Per link, per configuration of its writer (from) and of its reader (to): the tensor's bytes
  // in that layout; per flight, per configuration of its variable: flight_bytes_of.
  std::vector<std::vector<double>> link_from_bytes_, link_to_bytes_, flight_bytes_;
  std::vector<bool> is_output_;
  std::vector<int> tensor_var_;  // per tensor: the variable standing for it (param, input, tensor), or -1
  std::vector<bool> linked_;     // per tensor: its producer reaches its readers through links
  std::vector<bool> needed_;     // per tensor: its producer or a reader keeps it for backward
  std::vector<Variable> vars_;
  std::vector<Link> links_;
  std::vector<std::vector<Breakdown>> var_terms_;
  std::unordered_map<std::string, int> by_name_;
  Problem problem_;
  bool building_ = false;
  // While building: every distinct layout and tensor shape gets a small id, and each distinct
  // transition (shape, element size, from, to, gradient) is costed once, found by those ids.
  struct TransitionKey {
    int32_t shape, from, to;
    int32_t element_bytes;
    bool gradient;
    bool regather;
    bool operator==(const TransitionKey&) const = default;
  };
  struct TransitionKeyHash {
    size_t operator()(const TransitionKey& k) const;
  };
  struct LayoutHash {
    size_t operator()(const Layout& l) const { return l.hash(); }
  };
  int32_t layout_id(const Layout& l) const;
  int32_t shape_id(int tensor) const;
  // With `regather` the move is made again in the reader's backward (regathers()): its time is
  // charged there too, and its result lives beside the backward's own transient.
  int32_t transition_index(int tensor, const Layout& from, int32_t from_id, const Layout& to, int32_t to_id,
                           bool gradient, bool regather = false) const;
  // Whether the link's move is made again in the reader's backward, as the runtime executes it:
  // for a tensor its producer's recompute regenerates and the reader needs there; and for a
  // model-state tensor (never held from forward to backward) where the reader's backward or rerun
  // reads it again, as FSDP gathers a sharded weight twice.
  bool regathers(const Link& l, int from_config, int to_config) const;
  // Whether node's output `slot` is kept for its own backward (an activation, not model state).
  bool saves_output(int node, int slot) const;
  mutable std::vector<CommCost> comm_values_;  // written only while building
  mutable std::unordered_map<TransitionKey, int32_t, TransitionKeyHash> comm_cache_;  // -> comm_values_
  mutable std::unordered_map<Layout, int32_t, LayoutHash> layout_ids_;
  mutable std::map<Shape, int32_t> shape_ids_;
  mutable std::vector<int32_t> tensor_shape_id_;  // [tensor], -1 until asked
  // Per link and pair of its ends' configurations, flat at [link_offset_[link] + from config *
  // K_to + to config] (step_peak() reads them for every point, so one array, not one per link):
  // comm_link_, the index into comm_values_ (-1 when the layouts are equal); link_held_,
  // link_activations().
  std::vector<size_t> link_offset_;
  std::vector<int32_t> comm_link_;
  std::vector<std::pair<double, double>> link_held_;
  size_t link_pair(size_t link, int from_config, int to_config) const {
    return link_offset_[link] + static_cast<size_t>(from_config) * vars_[static_cast<size_t>(links_[link].to)].configs.size() +
           static_cast<size_t>(to_config);
  }
  // What step_peak() needs of each link, packed: its ends, their positions, its pair offset.
  struct PeakLink {
    int32_t from, to, from_position, to_position, link_position, kv;
    size_t offset;
    bool to_op;
    size_t pair(const std::vector<int>& a) const {  // into comm_link_ and link_held_
      return offset + static_cast<size_t>(a[static_cast<size_t>(from)]) * static_cast<size_t>(kv) + static_cast<size_t>(a[static_cast<size_t>(to)]);
    }
  };
  std::vector<PeakLink> peak_links_;
  // The transient a variable, or a link's redistribution, adds at its position under assignment
  // a (<= 0: none): the candidates of step_peak() and of WorkspaceScan, computed in one place.
  double var_transient(size_t var, const std::vector<int>& a) const;
  double link_transient(const PeakLink& l, const std::vector<int>& a) const;
  // carry_peak_bound()'s steps: the link into `op` at position `last` the bound follows (-1: none);
  // the bound's terms for that link, or for the op, and for the flights across `last`.
  int peak_bound_link(int op, int last, const std::vector<int>& reference) const;
  void add_peak_bound_terms(int op, int last, const std::vector<int>& reference);
  void add_bound_bytes(size_t var, size_t config, double bytes);  // into bound_vars_
  // carry_peak_bound()'s terms as added to the Problem: per variable that has some (a few), its
  // bytes per configuration and the Problem's costs before; per configuration pair of the link
  // bound_link_ (-1: none), and that edge's costs before.
  struct BoundTerms {
    size_t var;
    std::vector<double> bytes;
    std::vector<Cost> before;
  };
  bool bound_carried_ = false;
  std::vector<BoundTerms> bound_vars_;
  int bound_link_ = -1;
  std::vector<double> bound_pair_;
  std::vector<Cost> unbound_edge_;
};

}  // namespace tensoropt::planner
