// Re-batching a model exported at a fixed batch (graph/import.h calls this; tests call it too).
//
// torch.onnx.export without dynamic_axes writes the example's batch B0 into shape constants: the
// target of `view(B, T, h, d)` becomes the constant [B0,T,h,d], `cls.expand(B, -1, -1)` an Expand
// to [B0,1,d], `x.view(B*T, C)` a Reshape to [B0*T,C]. Planned at another batch B, such a graph
// fails several ops later or, worse, silently absorbs the new batch into another axis
// (`reshape(B, T, -1)` to [B0,T,B/B0*C]). To re-batch it soundly:
//
//  1. Import at B0, where the export is consistent (infer_static, no pruning).
//  2. batch_axes(): which axes of which tensors are indexed by the batch, and as which factor of
//     the axis (BatchAxis). Seeded by axis 0 of every data input; carried through every op's
//     iteration space (operand axes mapped to one iteration dim are one index), among the tensors
//     that may hold a batch (computed from a data input or sized by a shape operand: a mask of
//     the model's own that broadcasts against the batch does not), and through
//     reshapes by element strides (the batch index keeps its flat stride across a reshape, so the
//     output axis whose stride range holds it holds the batch).
//  3. shape_rewrites(): every entry of a shape operand (Reshape's shape, Expand's shape,
//     ConstantOfShape's input, Tile's repeats, Resize's sizes) that sets a batch axis of its
//     node's output explicitly is rewritten to outer * B * inner. Entries that are -1 or 0
//     (inferred, copied) are left alone, as is everything not on a batch axis.
//  4. Import again at B with those rewrites, then check_rebatched(): every tensor has its B0 shape
//     with its batch axes scaled by B/B0 and nothing else changed, and the same dtype. Anything
//     else, or any shape error at B, refuses the model with one line that says how to re-export.
//
// At B0 = 1 a batch axis of size 1 is invisible in element strides; where a reshape leaves
// several candidate axes, the outermost is taken (`view(B, T, h, d)` at B0 = 1: axis 0). At
// B0 > 1 the axis is unique.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "graph/ir.h"

namespace tensoropt {

// One batch-indexed axis of a tensor: its size is outer * B * inner, the batch one factor of
// its index (`view(B*h, T, d)`: outer 1, inner h; `view(T*B, C)`: outer T, inner 1).
struct BatchAxis {
  int axis = -1;
  int64_t outer = 1;
  int64_t inner = 1;
  int64_t size(int64_t batch) const { return outer * batch * inner; }
  bool operator==(const BatchAxis&) const = default;
};

// tensor index -> its batch-indexed axes (several for a [B, B] similarity matrix), over a graph
// made static at batch `b0` by infer_static (folded nodes still present). Throws InputError when
// one axis would hold the batch as two different factors.
std::map<int, std::vector<BatchAxis>> batch_axes(const Graph& g, int64_t b0);

// A shape operand entry to set when inferring a node at the new batch.
struct ShapeRewrite {
  int input = 0;        // the node's input position holding the shape operand
  size_t entry = 0;     // index into that operand's values
  BatchAxis axis;       // new value: axis.size(batch) (Tile: that / the input axis's size)
};
// Keyed by the node's first output tensor name (unique in a graph).
using ShapeRewrites = std::map<std::string, std::vector<ShapeRewrite>>;

ShapeRewrites shape_rewrites(const Graph& g, const std::map<int, std::vector<BatchAxis>>& axes, int64_t b0);

// Applies the rewrites for node `ni` of `g` (at batch `batch`) by giving the node new constant
// shape operands. Throws InputError when an operand is not a known constant at this batch.
void apply_shape_rewrites(Graph& g, size_t ni, const ShapeRewrites& rewrites, int64_t batch);

// Checks that `at_b` (the same model inferred at `b`) has every tensor of `at_b0` with the shape
// at_b0 had, batch axes scaled by b / b0, and the same dtype. Throws InputError naming the first
// tensor that differs and what to do instead.
void check_rebatched(const Graph& at_b0, const Graph& at_b, const std::map<int, std::vector<BatchAxis>>& axes,
                     int64_t b0, int64_t b);

// The one-line advice appended to every refusal to re-batch.
std::string rebatch_advice(const Graph& g, int64_t b0);

}  // namespace tensoropt
