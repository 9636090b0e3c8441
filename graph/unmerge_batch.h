// Products over a merged batch axis, unmerged. Sequence-first attention (nn.MultiheadAttention
// inside, as torchvision's ViT runs it) projects its output as
//   Reshape [T, B*h, d] -> [T*B, C] -> Gemm(W, b) -> Reshape [T, B, C]
// The batch is then an inner factor of the Gemm's rows, which no layout splits as the batch (a
// split of T*B rows in blocks splits T), so data parallelism would run the projection whole and
// gather its input, which DDP never does. Where the batch analysis (graph/rebatch.h batch_axes)
// finds the Gemm's rows holding the batch as such a factor (outer O > 1, inner I), and the Gemm's
// output is read only by a Reshape to [O, B*I, N], the pattern becomes
//   Reshape [T, B*h, d] -> [O, B*I, C] -> Einsum "obk,nk->obn" (W) -> Add(b)
// the same arithmetic with the batch an outer factor of an axis of its own. The Einsum keeps the
// Gemm's name, the Add takes the final Reshape's node and output (named "<gemm>/bias"); without a
// bias the final Reshape's node becomes the Einsum and the Gemm is left unread for pruning.
// Only when the batch is above 1, the Gemm has alpha = beta = 1, transA = 0 and a bias of [N] or
// none. Operates in place on a static graph (node order stays topological); returns how many
// products it unmerged. The caller prunes and re-propagates batch axes (graph/static_pass.cc).
#pragma once

#include "graph/ir.h"

namespace tensoropt {

int unmerge_batch_products(Graph& g);

}  // namespace tensoropt
