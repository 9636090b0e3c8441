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
  dispatch_numeric<true>(c.in[0]->dtype(), c.node, [&](auto tag) {
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

// ---- Where: out = cond ? x : y, elements moved as bytes of x's width. A segment reads each
// operand contiguously or repeats one element, the steps known at compile time (both sides
// loaded: a blend, not a branch).
template <bool SC, bool SX, bool SY, class T>
void where_segment(const uint8_t* c, const T* x, const T* y, T* out, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const T xv = x[SX ? i : 0], yv = y[SY ? i : 0];
    out[i] = c[SC ? i : 0] ? xv : yv;
  }
}

template <class T>
void where_copy(const OpCall& c) {
  Array& out = *c.out[0];
  Broadcast bc({c.in[0]->shape(), c.in[1]->shape(), c.in[2]->shape()}, out.shape());
  const uint8_t* pc = c.in[0]->data<uint8_t>();
  const T* px = static_cast<const T*>(c.in[1]->raw());
  const T* py = static_cast<const T*>(c.in[2]->raw());
  T* po = static_cast<T*>(out.raw());
  const int steps = (bc.contiguous(0) ? 4 : 0) + (bc.contiguous(1) ? 2 : 0) + (bc.contiguous(2) ? 1 : 0);
  for_each_segment(bc, c.ctx.threads, [&](const int64_t* off, int64_t pos, int64_t len) {
    const uint8_t* sc = pc + off[0];
    const T* sx = px + off[1];
    const T* sy = py + off[2];
    T* so = po + pos;
    switch (steps) {
      case 0: return where_segment<false, false, false>(sc, sx, sy, so, len);
      case 1: return where_segment<false, false, true>(sc, sx, sy, so, len);
      case 2: return where_segment<false, true, false>(sc, sx, sy, so, len);
      case 3: return where_segment<false, true, true>(sc, sx, sy, so, len);
      case 4: return where_segment<true, false, false>(sc, sx, sy, so, len);
      case 5: return where_segment<true, false, true>(sc, sx, sy, so, len);
      case 6: return where_segment<true, true, false>(sc, sx, sy, so, len);
      default: return where_segment<true, true, true>(sc, sx, sy, so, len);
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
    const bool taken = k == 1;
    operand_gradient(c, *c.din[static_cast<size_t>(k)], 1, bc, cond, static_cast<const float*>(nullptr),
                     [taken](uint8_t t, float, float g) { return pick((t != 0) == taken, g, 0.0f); });
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
