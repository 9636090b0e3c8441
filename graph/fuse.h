// Fusion of exporter-decomposed activations back into one op, so that costs and saved memory are
// those of the fused kernel every framework runs (and our runtime will run):
//   GELU: Div(x, √2) -> Erf -> Add(·, 1) -> Mul(x, ·) -> Mul(·, 0.5)   becomes  Gelu(x)
//   SiLU: Sigmoid(x) -> Mul(x, ·)                                        becomes  Silu(x)
// A pattern is fused only when its intermediate tensors have no other reader and are not graph
// outputs. Operates in place on a static graph; keeps node order topological.
#pragma once

#include "graph/ir.h"

namespace tensoropt {

// Returns how many patterns were fused.
int fuse_activations(Graph& g);

}  // namespace tensoropt
