// The op catalogue: one OpDef per supported ONNX op type (default domain).
//
// An OpDef says everything the rest of tensoropt knows about an op: how its output types follow
// from its inputs (shape inference), how to evaluate it at import time when its inputs are
// constants (folding of shape subgraphs), its iteration space as named dimensions with roles
// (what a parallel configuration may split), its forward and backward FLOPs, and what forward
// saves for backward. Bytes moved are derived generically from shapes (op_bytes below).
//
// Catalogue functions receive an OpView of one node inside a graph whose input tensors already
// have static shapes. They report bad models by throwing OpError with a message that does not
// repeat the node (the caller prefixes file and node). The catalogue is immutable after first use
// and safe to read from several threads.
#pragma once

#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "graph/ir.h"

namespace tensoropt {

class OpError : public std::runtime_error {
 public:
  explicit OpError(const std::string& what) : std::runtime_error(what) {}
};

// How a configuration may treat one dimension of an op's iteration space.
enum class DimRole : uint8_t {
  Batch,       // carries the training batch: split freely (data parallelism)
  Parallel,    // independent positions (channels, hidden units, heads): split freely
  Reduction,   // summed over: a split leaves partial sums to be reduced
  Spatial,     // output position of a windowed op (conv, pool): a split needs halo rows
  Window,      // kernel offset inside a window: never split
  Normalized,  // spanned by a non-linear reduction (softmax, norm statistics, max): not split
  Fixed,       // an axis the op rearranges (concat, slice, pad, reshape mixing): not split
};
std::string_view dim_role_name(DimRole r);

struct IterDim {
  std::string name;
  int64_t size = 1;
  DimRole role = DimRole::Parallel;
};

// dims, plus for every input and output the dimension each of its axes maps to
// (-1: the axis is broadcast, or has no dimension of its own, as the axes of a Reshape's
// shape operand).
struct IterSpace {
  std::vector<IterDim> dims;
  std::vector<std::vector<int>> inputs;
  std::vector<std::vector<int>> outputs;
  // Inputs added to the output after the reduction (a Gemm's C, a convolution's bias): where a
  // configuration splits a reduction dim, such an input must hold its share of the partial sums
  // (placement P), not a replicated copy every device would add again.
  std::vector<int> additive;
};

struct OutType {
  DType dtype = DType::Undefined;
  Shape shape;
};

// A node seen through its graph.
class OpView {
 public:
  OpView(const Graph& g, const Node& n) : graph(g), node(n) {}
  const Graph& graph;
  const Node& node;

  int num_inputs() const { return static_cast<int>(node.inputs.size()); }
  bool has_input(int i) const { return i < num_inputs() && node.inputs[static_cast<size_t>(i)] >= 0; }
  const Tensor& in(int i) const;    // throws OpError when input i is absent
  const Shape& in_shape(int i) const { return in(i).shape; }
  int in_rank(int i) const { return static_cast<int>(in(i).shape.size()); }
  const Value* in_value(int i) const;  // nullptr unless input i is present with a known value
  // Input i's value as integers; throws OpError naming the input when it is not a constant.
  std::vector<int64_t> in_ints(int i, const char* what) const;
  int num_outputs() const { return static_cast<int>(node.outputs.size()); }
  bool has_output(int i) const { return i < num_outputs() && node.outputs[static_cast<size_t>(i)] >= 0; }
  const Tensor& out(int i) const;   // REQUIRES: has_output(i); valid once shapes are inferred
};

using InferFn = std::function<std::vector<OutType>(const OpView&)>;
using FoldFn = std::function<std::vector<Value>(const OpView&)>;
using SpaceFn = std::function<IterSpace(const OpView&)>;
using FlopsFn = std::function<double(const OpView&)>;
// needs_grad[i]: whether input i needs a gradient.
using BwdFlopsFn = std::function<double(const OpView&, const std::vector<bool>& needs_grad)>;

// Something forward keeps alive for backward: an existing tensor, or extra bytes of the op's own
// (a dropout mask, normalisation statistics, pooling indices) when tensor < 0.
struct Saved {
  int tensor = -1;
  int64_t bytes = 0;
};
using SavedFn = std::function<std::vector<Saved>(const OpView&, const std::vector<bool>& needs_grad)>;

struct OpDef {
  std::string type;
  std::string family;          // for docs: "elementwise", "linear", ...
  std::string flops_doc;       // forward / backward FLOPs, as text for docs/ops.md
  std::string saves_doc;       // what forward saves, as text
  std::vector<int> weight_inputs;     // input positions that hold weights when fed by a graph input
  std::vector<int> buffer_inputs;     // input positions that hold non-trainable state
  std::vector<int> nondiff_inputs;    // inputs that never get a gradient (indices, shapes, masks)
  InferFn infer;
  FoldFn fold;                 // empty: never folded
  bool folds_from_shapes = false;  // fold needs only input shapes, not values (Shape, Size)
  // Folded whatever its output's size (Constant): the output becomes a constant tensor, holding
  // its value where the model's value is inline and small, else none (the runtime reads the file).
  bool folds_always = false;
  SpaceFn space;
  FlopsFn fwd_flops;
  BwdFlopsFn bwd_flops;
  SavedFn saved;
};

// nullptr when the type is not supported.
const OpDef* find_op(std::string_view type);
// All supported ops, sorted by type.
const std::vector<OpDef>& all_ops();
// "Abs, Add, ..." for error messages.
std::string supported_op_list();

// Bytes of forward reads (inputs) and writes (outputs), each tensor counted once.
struct OpBytes {
  int64_t fwd_read = 0, fwd_write = 0, bwd_read = 0, bwd_write = 0;
};
// Backward reads the output gradients and the saved tensors, writes the input gradients.
// Throws InputError naming the node when a sum does not fit in int64.
OpBytes op_bytes(const OpView& v, const std::vector<bool>& needs_grad, const std::vector<Saved>& saved);

// The iteration space with Batch roles filled in from the inputs' batch axes, with exactly one
// operand list per input and output position of the node (omitted optional ones map no dims).
IterSpace op_space(const OpView& v);

}  // namespace tensoropt
