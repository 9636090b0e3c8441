// What a model holds and costs on one device: parameter and buffer counts, forward and backward
// FLOPs, bytes moved, activations saved for backward. Derived from the op catalogue only, so the
// planner's per-shard costs and this whole-model view share one set of formulas.
// Pure functions of a static Graph; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "graph/ir.h"
#include "graph/op_catalogue.h"

namespace tensoropt {

// requires_grad[t]: tensor t needs a gradient in training (parameters, with `input_gradients` the
// float data inputs too, and float node outputs computed from something that needs one through a
// differentiable input).
std::vector<bool> requires_grad(const Graph& g, bool input_gradients = false);

// data_dependent[t]: tensor t is a data input or computed from one (differs per sample).
std::vector<bool> data_dependent(const Graph& g);

// The tensor whose memory `t` shares: ops that only relabel a shape (Reshape, Flatten, Squeeze,
// Unsqueeze, Identity) make views, as every framework does, so a tensor saved through several
// views is kept once.
int storage_of(const Graph& g, int t);

struct NodeCost {
  double fwd_flops = 0;
  double bwd_flops = 0;
  OpBytes bytes;
  std::vector<Saved> saved;         // data-dependent tensors and op extras only
  std::vector<int> state_read;      // model state the backward reads too (a weight, W^T): not saved
  int64_t saved_bytes = 0;          // their sum
  std::vector<bool> input_grad;  // per input position: does this input get a gradient
};

// Costs of every node, in node order. Throws InputError naming a node whose bytes moved or saved
// do not fit in int64.
std::vector<NodeCost> node_costs(const Graph& g);

struct ModelSummary {
  std::map<std::string, int64_t> op_counts;
  int64_t nodes = 0;
  int64_t trainable_parameters = 0;   // elements, tied weights once
  int64_t parameter_bytes = 0;
  int64_t parameter_tensors = 0;
  int64_t buffer_elements = 0;
  int64_t buffer_bytes = 0;
  int64_t frozen_parameters = 0;  // elements of buffers that are parameters frozen by --frozen
  int64_t constant_bytes = 0;         // constants read by nodes
  double fwd_flops = 0;
  double bwd_flops = 0;
  std::map<std::string, double> fwd_flops_by_op;
  int64_t activation_bytes = 0;       // saved for backward: each storage once, plus op extras
  int64_t fwd_bytes = 0;              // bytes read + written by forward
  int64_t bwd_bytes = 0;
};

// Throws InputError naming the model when a total does not fit in int64.
ModelSummary summarize(const Graph& g);

}  // namespace tensoropt
