// Comparisons, logic and selection (graph/ops/elementwise.cc predicate() and Where), with numpy
// broadcasting. Shapes: operands broadcast to y [N].
// Equal, Less, LessOrEqual, Greater, GreaterOrEqual: two operands of one dtype (float32, float64,
// int64, int32, bool, uint8) -> bool; no gradient. And, Or, Xor: bool -> bool; Not: bool -> bool.
// Where(cond, x, y): out = cond ? x : y for any dtype of x and y (copied as bytes);
// dx = cond ? dy : 0 and dy_ = cond ? 0 : dy, each summed onto its operand's shape (float32).
#include <cstdint>
#include <string>

#include "launcher/runtime/cpu/elementwise_loops.h"
#include "launcher/runtime/cpu/elementwise_parts.h"

namespace tensoropt::runtime::cpu {
namespace {

// y = op(a, b) as bool, for operands of one numeric or bool dtype.
template <class Op>
void compare_forward(const OpCall& c, const Op& op) {
  if (c.in[0]->dtype() != c.in[1]->dtype()) kernel_error(c.node, "the two inputs have different dtypes");
  dispatch_numeric(c.in[0]->dtype(), c.node, true, [&](auto tag) {
    using T = decltype(tag);
    apply2<T, uint8_t>(*c.in[0], *c.in[1], *c.out[0], c.ctx.threads,
                       [&](T a, T b) { return static_cast<uint8_t>(op(a, b)); });
  });
}

// y = op(a, b) for bool operands (nonzero bytes are true).
template <class Op>
void logic_forward(const OpCall& c, const Op& op) {
  for (const Array* x : c.in) {
    if (x->dtype() != DType::Bool) kernel_error(c.node, "takes bool inputs");
  }
  apply2<uint8_t, uint8_t>(*c.in[0], *c.in[1], *c.out[0], c.ctx.threads,
                           [&](uint8_t a, uint8_t b) { return static_cast<uint8_t>(op(a != 0, b != 0)); });
}

// ---- Not: y = !x.
void not_forward(const OpCall& c) {
  if (c.in[0]->dtype() != DType::Bool) kernel_error(c.node, "takes a bool input");
  const uint8_t* x = c.in[0]->data<uint8_t>();
  uint8_t* y = c.out[0]->data<uint8_t>();
  parallel_for(c.out[0]->numel(), kElementwiseGrain, c.ctx.threads, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) y[i] = x[i] == 0;
  });
}

// ---- Where: out = cond ? x : y, elements moved as bytes of x's width.
template <class T>
void where_copy(const OpCall& c) {
  Array& out = *c.out[0];
  Broadcast bc({c.in[0]->shape(), c.in[1]->shape(), c.in[2]->shape()}, out.shape());
  const uint8_t* pc = c.in[0]->data<uint8_t>();
  const T* px = static_cast<const T*>(c.in[1]->raw());
  const T* py = static_cast<const T*>(c.in[2]->raw());
  T* po = static_cast<T*>(out.raw());
  const int64_t sc = bc.contiguous(0), sx = bc.contiguous(1), sy = bc.contiguous(2);
  for_each_segment(bc, c.ctx.threads, [&](const int64_t* off, int64_t pos, int64_t len) {
    const uint8_t* cc = pc + off[0];
    const T* xx = px + off[1];
    const T* yy = py + off[2];
    T* oo = po + pos;
    for (int64_t i = 0; i < len; ++i) {
      const T xv = xx[i * sx], yv = yy[i * sy];  // both loaded: a select, not a branch
      oo[i] = cc[i * sc] ? xv : yv;
    }
  });
}

void where_forward(const OpCall& c) {
  if (c.in[0]->dtype() != DType::Bool) kernel_error(c.node, "the condition is not bool");
  if (c.in[1]->dtype() != c.in[2]->dtype()) kernel_error(c.node, "x and y have different dtypes");
  switch (dtype_size(c.in[1]->dtype())) {
    case 1: return where_copy<uint8_t>(c);
    case 2: return where_copy<uint16_t>(c);
    case 4: return where_copy<uint32_t>(c);
    case 8: return where_copy<uint64_t>(c);
    default: kernel_error(c.node, "no CPU kernel for " + std::string(dtype_name(c.in[1]->dtype())) + " operands");
  }
}

void where_backward(const GradCall& c) {
  require_f32(c.node, *c.dout[0], "the output gradient");
  const uint8_t* cond = c.in[0]->data<uint8_t>();
  for (int k = 1; k <= 2; ++k) {
    if (!c.din[static_cast<size_t>(k)]) continue;
    Broadcast bc({c.in_shapes[0], c.in_shapes[static_cast<size_t>(k)]}, c.dout[0]->shape());
    const bool pick = k == 1;
    operand_gradient(c, *c.din[static_cast<size_t>(k)], 1, bc, cond, static_cast<const float*>(nullptr),
                     [pick](uint8_t t, float, float g) { return (t != 0) == pick ? g : 0.0f; });
  }
}

}  // namespace

void register_elementwise_logic(KernelTable& table) {
  table["Equal"] = {[](const OpCall& c) { compare_forward(c, [](auto a, auto b) { return a == b; }); }, nullptr};
  table["Less"] = {[](const OpCall& c) { compare_forward(c, [](auto a, auto b) { return a < b; }); }, nullptr};
  table["LessOrEqual"] = {[](const OpCall& c) { compare_forward(c, [](auto a, auto b) { return a <= b; }); }, nullptr};
  table["Greater"] = {[](const OpCall& c) { compare_forward(c, [](auto a, auto b) { return a > b; }); }, nullptr};
  table["GreaterOrEqual"] = {[](const OpCall& c) { compare_forward(c, [](auto a, auto b) { return a >= b; }); }, nullptr};
  table["And"] = {[](const OpCall& c) { logic_forward(c, [](bool a, bool b) { return a && b; }); }, nullptr};
  table["Or"] = {[](const OpCall& c) { logic_forward(c, [](bool a, bool b) { return a || b; }); }, nullptr};
  table["Xor"] = {[](const OpCall& c) { logic_forward(c, [](bool a, bool b) { return a != b; }); }, nullptr};
  table["Not"] = {not_forward, nullptr};
  table["Where"] = {where_forward, where_backward};
}

}  // namespace tensoropt::runtime::cpu
