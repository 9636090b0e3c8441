// ShardingPlan: what one plan point asks of every worker, the contract between the planner and the
// runtime (docs/design.md "Runtime"). The planner's search (planner/space/space.h) chooses one configuration
// per strategy variable; the runtime never sees those variables, only this value: per node the
// layouts its configuration reads and writes and whether it recomputes, per tensor where its value
// lives ("home") and whether it is a parameter kept under ZeRO-2.
//
// Homes: a parameter, a data input and a tensor several ops read (a tensor variable) live in their
// variable's layout; any other op output in its producer's output layout; buffers and constants
// are replicated.
//
// ShardingTable is the same information for a whole strategy space, per variable and per
// configuration, so that a plan file can carry it once per mesh (docs/plan-format.md "spaces[]")
// and any of its points can be run without building the space again: resolve_sharding turns a
// point's configuration indices into its ShardingPlan. The planner builds the table from its space
// (planner/sharding.h); a test holds resolve_sharding of the table, written to a plan file and read
// back, equal to what the space gives for every frontier point.
//
// Pure values; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "graph/ir.h"
#include "planner/parallel/layout.h"

namespace tensoropt::planner {

struct ShardingPlan {
  int mesh_axes = 0;
  std::vector<std::vector<Layout>> in, out;  // [node][input or output]: the layouts its configuration needs and produces
  std::vector<Layout> home;                  // [tensor]: where its value lives
  std::vector<bool> zero;                    // [tensor]: a parameter with ZeRO-2 (gradient and optimizer state chunked)
  std::vector<bool> recompute;               // [node]: keeps nothing, runs again in backward
  bool operator==(const ShardingPlan&) const = default;
};

// One configuration of one variable, as the runtime sees it.
struct ShardingChoice {
  std::vector<Layout> in, out;  // an op's: per input and output (absent ones replicated)
  bool recompute = false;       // an op's
  Layout layout = Layout({});   // a parameter's, data input's or shared tensor's home
  bool zero = false;            // a parameter's: ZeRO-2
  bool operator==(const ShardingChoice&) const = default;
};

struct ShardingVariable {
  int node = -1;    // an op's variable: the node it configures
  int tensor = -1;  // otherwise: the tensor whose home it chooses
  std::vector<ShardingChoice> choices;  // one per configuration, in the space's order
  bool operator==(const ShardingVariable&) const = default;
};

struct ShardingTable {
  int mesh_axes = 0;
  std::vector<ShardingVariable> variables;  // in the space's variable order
  bool operator==(const ShardingTable&) const = default;
};

// The plan of the point choosing configuration configs[v] for every variable v of `table`, on
// graph `g`. InputError (naming `where`) when the table does not fit the graph (a node or tensor
// index out of range, a layout count that differs from the node's) or a configuration index is out
// of range: a plan file made for another model or edited by hand.
ShardingPlan resolve_sharding(const ShardingTable& table, const Graph& g, const std::vector<int>& configs, const std::string& where);

}  // namespace tensoropt::planner
