// CPU kernels of graph/ops/linear.cc: MatMul and Gemm here; Conv and ConvTranspose in
// linear_conv.cc, Einsum in linear_einsum.cc. Products run on linear_gemm.h.
// Legend: A [..., m, k], B [..., k, n], Y [..., m, n]; b = one element of the broadcast batch.
#include <algorithm>

#include "launcher/runtime/cpu/kernels.h"
#include "launcher/runtime/cpu/linear_conv.h"
#include "launcher/runtime/cpu/linear_einsum.h"
#include "launcher/runtime/cpu/linear_gemm.h"
#include "launcher/runtime/cpu/util.h"

namespace tensoropt::runtime::cpu {
namespace {

void require_f32(const OpCall& c) {
  if (c.in[0]->dtype() != DType::F32) kernel_error(c.node, "only float32 is implemented, not " + c.in[0]->str());
}

// ---- MatMul (numpy): Y[b] = A[b]·B[b], where a 1-D A is [1,k] and a 1-D B is [k,1] (the unit
// axis dropped from Y) and the batch axes broadcast. dA[a] = sum over the b reading a of
// dY[b]·B[b]ᵀ; dB[b'] = sum of A[b]ᵀ·dY[b]. With one B matrix, A's batch folds into m: one GEMM
// each way (a Linear layer's x·W).
struct MatMulPlan {
  GemmDims d;
  GemmBatch batch;  // per output matrix b: A's and B's matrix, and b
  bool fold = false;
  int64_t count = 0;  // output matrices
};

MatMulPlan matmul_plan(Shape a, Shape b) {
  if (a.size() == 1) a.insert(a.begin(), 1);
  if (b.size() == 1) b.push_back(1);
  MatMulPlan p;
  p.d = {.m = a[a.size() - 2], .n = b.back(), .k = a.back()};
  Shape ab(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  Shape out = ab.size() >= bb.size() ? ab : bb;
  for (size_t i = 0; i < std::min(ab.size(), bb.size()); ++i) {
    int64_t x = ab[ab.size() - 1 - i], y = bb[bb.size() - 1 - i];
    out[out.size() - 1 - i] = x == 1 ? y : x;
  }
  p.count = numel(out);
  p.fold = numel(bb) == 1;
  if (p.fold) return p;
  auto sa = broadcast_strides(ab, out), sb = broadcast_strides(bb, out);
  for (int64_t j = 0; j < p.count; ++j) {
    p.batch.a.push_back(broadcast_offset(j, out, sa));
    p.batch.b.push_back(broadcast_offset(j, out, sb));
    p.batch.c.push_back(j);
  }
  return p;
}

void matmul_forward(const OpCall& c) {
  require_f32(c);
  MatMulPlan p = matmul_plan(c.in[0]->shape(), c.in[1]->shape());
  const float* a = c.in[0]->data<float>();
  const float* b = c.in[1]->data<float>();
  float* y = c.out[0]->data<float>();
  if (p.fold) gemm({.m = p.count * p.d.m, .n = p.d.n, .k = p.d.k}, 1.0f, a, b, 0.0f, y, c.ctx.threads);
  else batched_gemm(p.d, a, b, y, p.batch, c.ctx.threads);
}

void matmul_backward(const GradCall& c) {
  MatMulPlan p = matmul_plan(c.in_shapes[0], c.in_shapes[1]);
  const float* dy = c.dout[0]->data<float>();
  for (Array* d : c.din) {
    if (d && p.count == 0) std::fill_n(d->data<float>(), d->numel(), 0.0f);
  }
  if (p.count == 0) return;
  const auto [m, n, k, ta, tb] = p.d;
  if (Array* da = c.din[0]) {  // dA = dY·Bᵀ
    const float* b = c.in[1]->data<float>();
    GemmDims d{.m = m, .n = k, .k = n, .tb = true};
    if (p.fold) gemm({.m = p.count * m, .n = k, .k = n, .tb = true}, 1.0f, dy, b, 0.0f, da->data<float>(), c.ctx.threads);
    else batched_gemm(d, dy, b, da->data<float>(), {p.batch.c, p.batch.b, p.batch.a}, c.ctx.threads);
  }
  if (Array* db = c.din[1]) {  // dB = Aᵀ·dY
    const float* a = c.in[0]->data<float>();
    GemmDims d{.m = k, .n = n, .k = m, .ta = true};
    if (p.fold) gemm({.m = k, .n = n, .k = p.count * m, .ta = true}, 1.0f, a, dy, 0.0f, db->data<float>(), c.ctx.threads);
    else batched_gemm(d, a, dy, db->data<float>(), {p.batch.a, p.batch.c, p.batch.b}, c.ctx.threads);
  }
}

// ---- Gemm: Y[m,n] = alpha·A'·B' + beta·C, A' = transA ? Aᵀ : A [m,k], B' = transB ? Bᵀ : B
// [k,n], C broadcast to [m,n]. dA' = alpha·dY·B'ᵀ (dA = its transpose with transA), dB' =
// alpha·A'ᵀ·dY, dC = beta·(dY summed to C's shape).
struct GemmAttrs {
  GemmDims d;
  float alpha, beta;
};

GemmAttrs gemm_attrs(const Node& node, const Shape& a, const Shape& b) {
  bool ta = node.attr_int("transA", 0) != 0, tb = node.attr_int("transB", 0) != 0;
  return {{.m = ta ? a[1] : a[0], .n = tb ? b[0] : b[1], .k = ta ? a[0] : a[1], .ta = ta, .tb = tb},
          static_cast<float>(node.attr_float("alpha", 1.0)), static_cast<float>(node.attr_float("beta", 1.0))};
}

void gemm_forward(const OpCall& c) {
  require_f32(c);
  GemmAttrs g = gemm_attrs(c.node, c.in[0]->shape(), c.in[1]->shape());
  Array& y = *c.out[0];
  float* py = y.data<float>();
  const Array* bias = c.in.size() > 2 ? c.in[2] : nullptr;
  float beta = 0.0f;
  if (bias && g.beta != 0.0f) {
    const float* pc = bias->data<float>();
    auto st = broadcast_strides(bias->shape(), y.shape());
    for (int64_t i = 0; i < g.d.m; ++i) {
      for (int64_t j = 0; j < g.d.n; ++j) py[i * g.d.n + j] = g.beta * pc[i * st[0] + j * st[1]];
    }
    beta = 1.0f;
  }
  gemm(g.d, g.alpha, c.in[0]->data<float>(), c.in[1]->data<float>(), beta, py, c.ctx.threads);
}

void gemm_backward(const GradCall& c) {
  GemmAttrs g = gemm_attrs(c.node, c.in_shapes[0], c.in_shapes[1]);
  const auto [m, n, k, ta, tb] = g.d;
  const float* dy = c.dout[0]->data<float>();
  if (Array* da = c.din[0]) {
    const float* b = c.in[1]->data<float>();
    // A' [m,k] = dY [m,n] · B'ᵀ; stored [k,m] with transA: B' · dYᵀ.
    if (ta) gemm({.m = k, .n = m, .k = n, .ta = tb, .tb = true}, g.alpha, b, dy, 0.0f, da->data<float>(), c.ctx.threads);
    else gemm({.m = m, .n = k, .k = n, .tb = !tb}, g.alpha, dy, b, 0.0f, da->data<float>(), c.ctx.threads);
  }
  if (Array* db = c.din[1]) {
    const float* a = c.in[0]->data<float>();
    // B' [k,n] = A'ᵀ · dY; stored [n,k] with transB: dYᵀ · A'.
    if (tb) gemm({.m = n, .n = k, .k = m, .ta = true, .tb = ta}, g.alpha, dy, a, 0.0f, db->data<float>(), c.ctx.threads);
    else gemm({.m = k, .n = n, .k = m, .ta = !ta}, g.alpha, a, dy, 0.0f, db->data<float>(), c.ctx.threads);
  }
  if (c.din.size() > 2 && c.din[2]) {
    Array& dc = *c.din[2];
    sum_to_shape(dy, c.dout[0]->shape(), dc.data<float>(), dc.shape(), c.ctx.threads);
    if (g.beta != 1.0f) vec(dc) *= g.beta;
  }
}

}  // namespace

void register_linear(KernelTable& table) {
  table["MatMul"] = {matmul_forward, matmul_backward};
  table["Gemm"] = {gemm_forward, gemm_backward};
  register_conv(table);
  register_einsum(table);
}

}  // namespace tensoropt::runtime::cpu
