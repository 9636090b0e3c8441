// Fusion of exporter-decomposed ops back into one, so that costs and saved memory are
// those of the fused kernel every framework runs (and our runtime will run):
//   GELU: Div(x, √2) -> Erf -> Add(·, 1) -> Mul(x, ·) -> Mul(·, 0.5)   becomes  Gelu(x)
//   GELU, tanh form: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))          becomes  Gelu(x), approximate=tanh
//   SiLU: Sigmoid(x) -> Mul(x, ·)                                        becomes  Silu(x)
//   Mish: Softplus(x) -> Tanh -> Mul(x, ·)                               becomes  Mish(x)
//   LayerNorm before opset 17: ReduceMean, Sub, Pow 2, ReduceMean, Add eps, Sqrt, Div, Mul w,
//     Add b over the last axis                                           becomes  LayerNormalization
//   Pad (constant zero, spatial axes) -> Conv or AveragePool             becomes  the op's own pads
//   GroupNorm: Reshape [N,G,-1] -> InstanceNormalization(1, 0) -> Reshape back -> Mul w -> Add b
//                                                                        becomes  GroupNormalization
// The fused-away nodes stay in g.nodes with no reader left (as does the Unsqueeze of a
// per-channel weight); the caller's dead-node pruning removes them (graph/static_pass.cc).
// A pattern is fused only when its intermediate tensors have no other reader and are not graph
// outputs. Operates in place on a static graph; node order stays topological.
#pragma once

#include "graph/ir.h"

namespace tensoropt {

// Returns how many patterns were fused.
int fuse_activations(Graph& g);

}  // namespace tensoropt
