// The parallel configurations of one op on a device mesh (docs/design.md "Mesh and layout").
//
// A configuration assigns to every mesh axis one dimension of the op's iteration space
// (graph/op_catalogue.h: op_space) to split, or none (the axis replicates the op's work). That fixes
// the layout each input must arrive in and each output leaves in:
//   input:  the axis splits a dim the input has at tensor axis a   -> S(a);  otherwise R
//   output: the axis splits a dim the output has at tensor axis a  -> S(a);
//           the axis splits a reduction dim the output lacks       -> P (partial sums);
//   an additive input (IterSpace::additive: a bias added after the reduction) on an axis that
//   splits a reduction dim it lacks                                    -> P (its share of the sum);
// Rules: only batch, parallel and reduction dims are split (spatial dims would need halo
// exchange, window/normalized/fixed dims cannot be split inside the op); a dim may take several
// mesh axes (batch over all of them is pure data parallelism); the product of the axes a dim takes
// must divide its size, so every device does the same work; an assignment whose output would need
// a split parallel dim the output does not have is not a configuration. Inputs that carry no
// iteration dims (a Reshape's shape, Dropout's ratio) are always R.
// The fully replicated configuration is always first; the rest follow in a fixed order.
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "graph/op_catalogue.h"
#include "planner/parallel/layout.h"
#include "planner/parallel/mesh.h"

namespace tensoropt::planner {

struct OpConfig {
  std::vector<int> axis_dim;    // [mesh axis] -> index into IterSpace::dims, -1 when not split
  std::vector<Layout> inputs;   // [input] layout the op needs (replicated for absent inputs)
  std::vector<Layout> outputs;  // [output] layout the op produces
  // "n:S0" style: each split dim with the mesh axes splitting it, "replicate" when none.
  std::string str(const IterSpace& space) const;
};

// `output_used[o]` false marks an output nothing reads (BatchNormalization's updated running
// statistics, say): it never rules a configuration out; a split dim it keeps stays split (a
// channel split gives each device its channels' statistics) and one it drops is R (each device
// keeps its own, as data-parallel frameworks do). Empty: every output is used.
// Whether every operand of `c` is split into whole, equal shards: each tensor dimension a layout
// shards is divisible by the product of the mesh axes sharding it. An iteration dim can divide
// evenly while an operand's dimension mapped to it does not (a Reshape that merges a dimension of
// 17 into one of 68: 68 splits in two, 17 does not, and the halves are no views of each other);
// such a configuration is not one the runtime can run as the op on local shards.
bool whole_shards(const OpConfig& c, const std::vector<Shape>& inputs, const std::vector<Shape>& outputs, const DeviceMesh& mesh);

std::vector<OpConfig> enumerate_configs(const IterSpace& space, const DeviceMesh& mesh,
                                        const std::vector<bool>& output_used = {});

}  // namespace tensoropt::planner
