// Building blocks shared by the op definitions in graph/ops/*.cc: broadcasting, axis
// normalisation, elementwise evaluation of constants, and the common shapes of iteration spaces.
// Everything here throws OpError on a malformed node.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "graph/op_catalogue.h"

namespace tensoropt::ops {

// Multidirectional (numpy) broadcast of shapes.
Shape broadcast(const std::vector<Shape>& shapes);
// Axis in [-rank, rank) to [0, rank); throws OpError otherwise (a scalar has no axis).
int norm_axis(int64_t axis, int rank, const char* what);
// Most elements a tensor may have: its bytes, at 8 per element (the widest dtype), fit in int64
// twice over, so a tensor's bytes and the sum of two tensors' bytes never overflow. Elements, not
// bytes, because a shape is checked before its dtype is known. Sums over more tensors (a node's
// bytes moved, a model's totals) are checked where they are added.
inline constexpr int64_t kMaxElements = (int64_t{1} << 59) - 1;
// Checked product of dims; throws OpError on a negative dim or when the nonzero dims multiply to
// more than kMaxElements (so that no product of some of a shape's dims overflows either).
int64_t checked_numel(const Shape& s);
// a + b and a * b, throwing OpError instead of overflowing int64.
int64_t add_checked(int64_t a, int64_t b);
int64_t mul_checked(int64_t a, int64_t b);

// Index helpers for evaluating constants: linear index of `out_index` read from a tensor of
// shape `in` broadcast to the output's rank.
int64_t broadcast_offset(const Shape& in, const Shape& out, const std::vector<int64_t>& out_index);
void next_index(std::vector<int64_t>& idx, const Shape& shape);

// A Value of the given dtype and shape, zero-filled.
Value make_value(DType t, const Shape& shape);
void set_elem(Value& v, int64_t i, double real, int64_t integer);

// Evaluate an elementwise op over broadcast inputs. For integral output types `int_fn` is used
// (exact int64); otherwise `real_fn`. Either may be empty when the op never produces that kind.
using IntFn = std::function<int64_t(const std::vector<int64_t>&)>;
using RealFn = std::function<double(const std::vector<double>&)>;
Value eval_elementwise(const OpView& v, DType out, const IntFn& int_fn, const RealFn& real_fn,
                       int first_input = 0, int count = -1);

// Iteration space of an elementwise op: one Parallel dim per output axis, inputs aligned to the
// right; size-1 input axes against larger output axes are broadcast (-1).
IterSpace elementwise_space(const OpView& v, const std::vector<int>& data_inputs);
// Iteration space where every output axis is its own dim and input i's axis a maps to dim
// map[i][a]; roles given per output axis.
IterSpace axes_space(const Shape& out, const std::vector<DimRole>& roles,
                     std::vector<std::vector<int>> input_axes, int num_outputs = 1);

// Sums that recur in FLOP formulas.
double out_elems(const OpView& v, int i = 0);
double in_elems(const OpView& v, int i = 0);
// Bytes of activations in a list of tensors for saved-tensor lists.
std::vector<Saved> save_inputs(const OpView& v, const std::vector<int>& positions);
std::vector<Saved> save_outputs(const OpView& v, const std::vector<int>& positions);
// Input 0 and output 0, when input 0 needs a gradient (max-like reductions, normalisations).
std::vector<Saved> save_input_and_output(const OpView& v, const std::vector<bool>& needs_grad);
// For a two-operand contraction (Conv, Gemm, MatMul, Einsum): operand 0 when operand 1 needs a
// gradient, operand 1 when operand 0 does.
std::vector<Saved> save_for_other_operand(const OpView& v, const std::vector<bool>& needs_grad);
// The name of an iteration dimension: prefix then index, "d0", "k1". (Built by appending: GCC 12
// at -O3 warns falsely, -Wrestrict, on "d" + std::to_string(i).)
std::string dim_name(char prefix, size_t index);
// {0, 1, ..., n-1}: the identity map of n axes.
std::vector<int> iota_axes(size_t n);

// Registration functions, one per family file.
void register_elementwise(std::vector<OpDef>& ops);
void register_linear(std::vector<OpDef>& ops);
void register_einsum(std::vector<OpDef>& ops);  // einsum.cc; register_linear adds it first
void register_norm(std::vector<OpDef>& ops);
void register_pool(std::vector<OpDef>& ops);
void register_movement(std::vector<OpDef>& ops);
void register_shape(std::vector<OpDef>& ops);
void register_resample(std::vector<OpDef>& ops);

}  // namespace tensoropt::ops

namespace tensoropt::ops {
// Output spatial sizes of a windowed op (Conv, pooling) with input spatial sizes `in` and kernel
// `kernel`, from the node's strides, pads, dilations, auto_pad and ceil_mode attributes.
Shape window_output(const OpView& v, const Shape& in, const Shape& kernel);
}  // namespace tensoropt::ops
