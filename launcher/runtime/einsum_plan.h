// Einsum for every backend (cpu/linear_einsum.cc, cuda/einsum.cc): the equation parsed into
// labels, the index space of gather(x, keep), the roles of the labels in one pairwise contraction,
// and the forward and backward over a backend's three primitives (Ops: gather, scatter, a batched
// GEMM), which are all the backends differ in.
//
// Labels are the equation's letters and the "..." axes (aligned right across operands, numpy
// broadcasting: a size-1 "..." axis against a larger one is read once, label -1). The output is
// the right-hand side, or implicitly "..." then the letters used once, in character order.
// gather(x, keep): x's elements indexed by the labels `keep` (in that order), on the diagonal of a
// label repeated within x, summed over x's labels not kept. scatter(d, keep) is its adjoint: d
// copied onto that diagonal (broadcast over the summed labels), zero elsewhere.
//
// Two operands A, B -> Y: each label is batch (in A, B and Y), contracted (A and B, not Y), free
// in A (A and Y) or free in B; A's labels in neither B nor Y are summed by gathering A. With
// A' = gather(A) [batch, free A, contracted] (or its per-batch transpose when that is A's own
// layout, read in place) and B' = gather(B) [batch, contracted, free B]:
//   Y'[b] = A'[b]·B'[b],  Y = Y' permuted to the output's order,
//   dA'[b] = dY'[b]·B'[b]ᵀ, dB'[b] = A'[b]ᵀ·dY'[b],  dA = scatter(dA'), dB = scatter(dB').
// One operand: Y = gather(A, output), dA = scatter(dY). Three or more: contracted left to right,
// forward only (the catalogue keeps no operand of such a node for backward).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "launcher/runtime/kernel.h"

namespace tensoropt::runtime::einsum {

using Labels = std::vector<int>;

struct Equation {
  std::vector<int64_t> size;  // per label
  std::vector<Labels> terms;  // per operand axis: its label, -1 for a broadcast "..." axis
  Labels out;
};

bool has(const Labels& l, int x);
// kernel_error (naming the node) for what no kernel implements: a label repeated in the output.
Equation parse(const Node& node, const std::vector<Shape>& shapes);
int64_t count(const Labels& l, const std::vector<int64_t>& size);

// The index space of gather(x, keep): sizes and x-strides of the kept labels, then of the summed.
struct GatherSpace {
  std::vector<int64_t> keep_size, keep_stride, sum_size, sum_stride;
  int64_t kept = 1, summed = 1;
};
GatherSpace gather_space(const Shape& xs, const Labels& labels, const Labels& keep, const std::vector<int64_t>& size);

Shape shape_of(const Labels& l, const std::vector<int64_t>& size);
Labels concat(std::initializer_list<const Labels*> parts);

// Row-major C[b] = op(A)[b]·op(B)[b] for b < the batch: m x k times k x n.
struct EinsumGemm {
  int64_t m = 1, n = 1, k = 1;
  bool ta = false, tb = false;
};

// One pairwise contraction: which labels play which role, and where A' and B' come from.
struct Pair {
  Labels batch, contract, fa, fb;
  Labels a_order, b_order, y_order;  // A' [batch, fa, contract], B' [batch, contract, fb], Y' [batch, fa, fb]
  EinsumGemm d;                      // m = |fa|, n = |fb|, k = |contract|; ta, tb: A, B read in place, transposed
  int64_t nb = 1;
  bool a_direct = false, b_direct = false;
};
Pair plan_pair(const Labels& la, const Labels& lb, const Labels& keep, const std::vector<int64_t>& size);

// The labels the running result keeps after contracting operand i (of `terms`) into `cur`: those
// the output or a later operand uses; the output's own order after the last operand.
Labels kept_after(const Equation& e, const Labels& cur, size_t i);

// A backend's primitives, on its own memory (float32).
class Ops {
 public:
  virtual ~Ops() = default;
  // y [keep...] = gather(x, keep).
  virtual void gather(const float* x, const Shape& xs, const Labels& labels, const Labels& keep, const std::vector<int64_t>& size,
                      float* y) = 0;
  // dx = scatter(d [keep...]) onto x's shape (overwrites dx).
  virtual void scatter(const float* d, const Shape& xs, const Labels& labels, const Labels& keep,
                       const std::vector<int64_t>& size, float* dx) = 0;
  // C[b] = op(A[b])·op(B[b]) for b < batch, the matrices packed one after another.
  virtual void batched_gemm(const EinsumGemm& d, const float* a, const float* b, float* c, int64_t batch) = 0;
};

// The Einsum kernel's forward and backward (kernel.h) over `ops`.
void einsum_forward(const OpCall& c, Ops& ops);
void einsum_backward(const GradCall& c, Ops& ops);

}  // namespace tensoropt::runtime::einsum
