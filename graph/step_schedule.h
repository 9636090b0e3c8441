// The step schedule: what one training step runs, keeps, frees and recomputes, node by node and
// tensor by tensor. One schedule serves the planner's cost model (planner/space/space.h: which tensors
// are saved, where gradients are in flight) and both executors (launcher/runtime/executor.h: one
// device; sharded_executor.h: a worker's shard of a strategy), so what is predicted and what runs
// keep and regenerate exactly the same tensors.
//
// Order: forward runs the nodes in graph order, backward in reverse; positions are node indices.
// It comes from the op catalogue alone, through graph/summary.h (requires_grad, data_dependent,
// and OpDef::saved: what each op's backward reads, for the inputs that take a gradient), and the
// recompute choices (a plan point's ` recompute` configurations, docs/cost-model.md "Recompute"):
// - a node that recomputes keeps nothing of its own (no saved output, no OpState extras) and keeps
//   its inputs instead, unless their producer recomputes too; in backward its forward runs again;
// - a node that reads no data (a transposed weight, a causal mask built from constants) always
//   recomputes: the planner counts what it makes as model state, not as activations;
// - nobody keeps what a recomputing producer wrote: a backward that reads it regenerates it.
#pragma once

#include <vector>

#include "graph/ir.h"

namespace tensoropt {

struct NodeSchedule {
  std::vector<bool> input_grad;    // this input receives a gradient
  std::vector<bool> need_input;    // backward reads this input (the catalogue's `saved`)
  std::vector<bool> need_output;   // and this output
  std::vector<bool> keep_input;    // forward keeps this input for backward (or for a rerun)
  std::vector<bool> keep_output;   // and this output
  bool backward = false;           // some input receives a gradient
  bool recompute = false;          // keeps nothing; its forward runs again in backward
};

struct StepSchedule {
  std::vector<NodeSchedule> nodes;
  std::vector<int> roots;                // tensors whose gradient the step returns
  std::vector<bool> requires_grad;       // per tensor: a gradient flows into it
  std::vector<int> producer;             // per tensor: the node writing it, or -1
  std::vector<int> last_forward_use;     // per tensor: the last node reading it in forward, or -1
  std::vector<int> last_backward_use;    // per tensor: the earliest node that keeps it, or -1
  std::vector<int> earliest_need;        // per tensor: the earliest node whose backward (or rerun) reads it, or -1
  std::vector<int> gradient_done;        // per tensor: the earliest node whose backward adds to its gradient, or -1
                                         // (backward runs in reverse: its gradient is complete there)
  std::vector<int> gradient_start;       // per tensor: the latest node whose backward adds to its gradient, or -1
                                         // (where its first addend is made)
  std::vector<bool> data_dependent;      // per tensor: a data input or computed from one (else model state)
};

// The keep rules, written once: the schedule applies them per node, and the planner's cost model
// (planner/space/cost_terms.cc) per pair of configurations, so both charge and keep the same.
// A node keeps an input its backward needs, or any input when it recomputes (its rerun reads
// them), unless the input's producer recomputes too (regenerated, not kept). It keeps an output its
// backward needs unless it recomputes itself.
constexpr bool keeps_input(bool needed, bool recomputes, bool producer_recomputes) { return (needed || recomputes) && !producer_recomputes; }
constexpr bool keeps_output(bool needed, bool recomputes) { return needed && !recomputes; }

// Input k of a node takes a gradient when the tensor requires one and the catalogue does not list
// k among the op's nondiff_inputs. Roots: the parameters, and with `input_gradients` the float
// data inputs too. `recompute`: per node, or empty for none. Thread-safe.
StepSchedule step_schedule(const Graph& g, bool input_gradients, const std::vector<bool>& recompute);

}  // namespace tensoropt
