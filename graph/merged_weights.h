// Weights that an export merged: torch.onnx.export of an untrained model in eval mode keeps one
// initializer for every set of parameters with identical values (the zeros of every bias, the
// ones of every LayerNorm weight, layers built from one seed) and reads it through Identity nodes
// named after the parameters it dropped. The model then shares weights it does not share in
// PyTorch: fewer parameters, other gradients, a plan of another model. Weights tied on purpose
// (GPT-2's embedding and output layer) are one parameter read directly by each consumer, with no
// Identity, and are not reported.
// Pure functions of a static Graph; thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "graph/ir.h"

namespace tensoropt {

struct MergedWeights {
  int64_t copies = 0;      // Identity nodes that read a trainable parameter
  int64_t elements = 0;    // their outputs' elements: what PyTorch counts on top of the graph's
  std::string example;     // "'<copy>' reads '<kept parameter>'": the first whose copy has a
                           // name of the user's (not onnx::...), else the first
  bool example_named = false;
};

MergedWeights merged_weights(const Graph& g);

// One line for a user (no "warning:" prefix, no newline), or "" when nothing was merged.
// `parameters`: the graph's trainable elements as summarize() counts them.
std::string merged_weights_note(const MergedWeights& m, int64_t parameters);

}  // namespace tensoropt
