// One strategy's cost, row by row (`evaluate --by-layer`, `--by-node`; docs/cli.md): what each
// layer (or node) does under the strategy and what it costs.
//
// Every term is the strategy space's own (StrategySpace::variable_terms and link_terms, the terms
// breakdown() and the Problem sum), given to one row each:
//   op variable          the row of its node
//   parameter, input     the row of the first node (in graph order) that reads it: a tied weight
//                        (GPT-2's wte, read by the embedding and the LM head) counts at its first use
//   tensor variable      the row of the node that produces it (a data input's: its first reader)
//   link                 the row of its op end (the reader; for a link into a tensor variable, the
//                        producer)
// So the rows' terms sum, term by term, to breakdown() less the workspace, and every node is in
// exactly one row. The workspace (what the step's peak adds to the summed memory: transients of
// one moment) is not a sum over nodes and stays a total of its own. Time needs no such term: the
// cost model overlaps nothing (docs/cost-model.md), so the rows' times add up to the strategy's.
// Summed in row order, totals agree with cost() to rounding (a relative 1e-12), not bit for bit.
//
// Layers: a node name is split into components at '/' and '.' ("/h.0/attn/MatMul" -> h, 0, attn,
// MatMul); its layer is the name up to and including the first all-digit component ("h.0",
// "layers.3", "layer1.0"), or its first component when none is all digits ("wte", "ln_f"); a name
// of one component is its own layer. Rows keep the order of their first node.
// Thread-safety: pure functions of their arguments.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "planner/space/space.h"

namespace tensoropt::planner {

// The layer a node name belongs to (above).
std::string layer_of(const std::string& node_name);

// What an op's configuration does, in words: "batch (b) over axis 0, n over axis 1 (splits a
// weight)", "replicated"; ", recomputed" when it recomputes.
std::string describe_op(const StrategySpace& space, int var, int config);

struct ExplainRow {
  std::string name;                // the layer, or the node's name
  std::vector<int> nodes;          // graph node indices, in graph order
  std::map<std::string, int> ops;  // op type -> count
  int data_parallel = 0;           // ops splitting only their batch dim (or replicated without one)
  int tensor_parallel = 0;         // ops splitting some other dim
  int replicated = 0;              // ops with a batch dim that run it whole
  int recomputed = 0;
  int parameters = 0, zero2 = 0, split_parameters = 0;  // parameters the row holds
  Breakdown terms;                 // this row's share of every term; workspace 0
};

struct Explanation {
  std::vector<ExplainRow> rows;
  Breakdown total;       // the rows' terms summed, in row order, plus the workspace
  double workspace = 0;  // StrategySpace::workspace(): in the memory, in no row
};

// by_node: one row per node; else one per layer. Op variable n is node n (the space adds them first).
// REQUIRES: assignment is a strategy of `space` (one valid configuration per variable).
Explanation explain(const StrategySpace& space, const std::vector<int>& assignment, bool by_node);

}  // namespace tensoropt::planner
