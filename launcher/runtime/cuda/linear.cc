// CUDA kernels of graph/ops/linear.cc, host side: MatMul and Gemm on the driver's cuBLASLt GEMM
// (float32 accumulation, no TF32, so float32 results compare with the CPU backend's). Both take
// bfloat16 as stored under mixed precision (OpKernel::takes_bf16): a bfloat16 GEMM on the tensor
// cores, its output in the storage dtype, input gradients in float32. Operands of two dtypes (a
// float32 constant beside bfloat16 activations) are multiplied in float32.
// Legend: A [..., m, k], B [..., k, n], Y [..., m, n]; a batch of output matrices j, each reading
// A's matrix a_j and B's matrix b_j (numpy broadcasting of the batch axes).
// MatMul: with one B matrix, A's batch folds into m (one GEMM each way: a Linear layer's x·W);
// with equal batches, one strided batched GEMM each way; otherwise one GEMM per output matrix,
// the gradient of a broadcast operand accumulated over the matrices that read it (beta = 1).
// Gemm: Y = alpha·A'·B' + beta·C with C broadcast to [m, n]; dC = beta·(dY summed to C's shape).
#include <algorithm>
#include <vector>

#include "launcher/runtime/cuda/backend.h"
#include "launcher/runtime/cuda/shapes.h"

namespace tensoropt::runtime::cuda {
namespace {

struct MatMulPlan {
  int64_t m = 0, n = 0, k = 0;
  int64_t count = 0;          // output matrices
  bool fold = false;          // one B matrix
  bool equal = false;         // A and B both have `count` matrices
  bool a_single = false;      // A has one matrix (B has count)
  std::vector<int64_t> a, b;  // per output matrix: its A and B matrix (general case)
};

// Row-major strides of `in` broadcast to `out` (0 along broadcast axes).
std::vector<int64_t> batch_strides(const Shape& in, const Shape& out) {
  std::vector<int64_t> st(out.size(), 0);
  const size_t skip = out.size() - in.size();
  int64_t s = 1;
  for (size_t d = out.size(); d-- > skip;) {
    st[d] = in[d - skip] == 1 ? 0 : s;
    s *= in[d - skip];
  }
  return st;
}

MatMulPlan matmul_plan(Shape a, Shape b) {
  if (a.size() == 1) a.insert(a.begin(), 1);
  if (b.size() == 1) b.push_back(1);
  MatMulPlan p;
  p.m = a[a.size() - 2];
  p.k = a.back();
  p.n = b.back();
  Shape ab(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  Shape out = ab.size() >= bb.size() ? ab : bb;
  for (size_t i = 0; i < std::min(ab.size(), bb.size()); ++i) {
    const int64_t x = ab[ab.size() - 1 - i], y = bb[bb.size() - 1 - i];
    out[out.size() - 1 - i] = x == 1 ? y : x;
  }
  p.count = numel(out);
  p.fold = numel(bb) == 1;
  p.equal = numel(ab) == p.count && numel(bb) == p.count;
  p.a_single = numel(ab) == 1;
  const auto sa = batch_strides(ab, out), sb = batch_strides(bb, out);
  for (int64_t j = 0; j < p.count; ++j) {
    int64_t rest = j, oa = 0, ob = 0;
    for (size_t d = out.size(); d-- > 0;) {
      const int64_t c = rest % out[d];
      rest /= out[d];
      oa += c * sa[d];
      ob += c * sb[d];
    }
    p.a.push_back(oa);
    p.b.push_back(ob);
  }
  return p;
}

void run_gemm(CudaBackend& be, const Node& node, TensoroptGemm g) { be.check(be.driver().gemm(be.device(), &g), node.op_type); }

bool float_like(const Array& a) { return a.dtype() == DType::F32 || a.dtype() == DType::BF16; }

// The operands of one product, in one dtype: both as they are when their dtypes agree, else
// float32 copies of the bfloat16 one (held here).
struct Operands {
  const Array* a;
  const Array* b;
  Array a32, b32;
  Operands(CudaBackend& be, const Node& node, const Array* x, const Array* y) : a(x), b(y) {
    if (!float_like(*a)) kernel_error(node, "an operand is " + a->str() + "; the CUDA kernel takes float32 or bfloat16");
    if (!float_like(*b)) kernel_error(node, "an operand is " + b->str() + "; the CUDA kernel takes float32 or bfloat16");
    if (a->dtype() == b->dtype()) return;
    if (a->dtype() == DType::BF16) a = &(a32 = float32_copy(be, *a));
    else b = &(b32 = float32_copy(be, *b));
  }
};

// A GEMM over arrays (element offsets into them); C's dtype is c's.
TensoroptGemm gemm_of(int64_t batch, int64_t m, int64_t n, int64_t k, bool ta, bool tb, const Array& a, int64_t a_at, const Array& b,
                      int64_t b_at, Array& c, int64_t c_at, int64_t sa, int64_t sb, int64_t sc, float alpha, float beta) {
  TO_CHECK(a.dtype() == b.dtype());
  const auto at = [](const Array& x, int64_t i) { return static_cast<const char*>(x.raw()) + i * dtype_size(x.dtype()); };
  TensoroptGemm g{};
  g.batch = batch;
  g.m = m;
  g.n = n;
  g.k = k;
  g.trans_a = ta;
  g.trans_b = tb;
  g.a = at(a, a_at);
  g.b = at(b, b_at);
  g.c = const_cast<char*>(at(c, c_at));
  g.stride_a = sa;
  g.stride_b = sb;
  g.stride_c = sc;
  g.alpha = alpha;
  g.beta = beta;
  g.dtype_ab = static_cast<int>(a.dtype());
  g.dtype_c = static_cast<int>(c.dtype());
  return g;
}

void matmul_forward(CudaBackend& be, const OpCall& c) {
  const Operands o(be, c.node, c.in[0], c.in[1]);
  const MatMulPlan p = matmul_plan(c.in[0]->shape(), c.in[1]->shape());
  const Array &a = *o.a, &b = *o.b;
  Array& y = *c.out[0];
  const int64_t mk = p.m * p.k, kn = p.k * p.n, mn = p.m * p.n;
  if (p.count == 0) return;
  if (p.fold) return run_gemm(be, c.node, gemm_of(1, p.count * p.m, p.n, p.k, false, false, a, 0, b, 0, y, 0, 0, 0, 0, 1, 0));
  if (p.equal || p.a_single)
    return run_gemm(be, c.node, gemm_of(p.count, p.m, p.n, p.k, false, false, a, 0, b, 0, y, 0, p.a_single ? 0 : mk, kn, mn, 1, 0));
  for (int64_t j = 0; j < p.count; ++j)
    run_gemm(be, c.node, gemm_of(1, p.m, p.n, p.k, false, false, a, p.a[j] * mk, b, p.b[j] * kn, y, j * mn, 0, 0, 0, 1, 0));
}

void matmul_backward(CudaBackend& be, const GradCall& c) {
  const MatMulPlan p = matmul_plan(c.in_shapes[0], c.in_shapes[1]);
  for (Array* d : c.din) {
    if (d && p.count == 0) be.fill(*d, 0.0);
  }
  if (p.count == 0) return;
  const int64_t m = p.m, n = p.n, k = p.k, mk = m * k, kn = k * n, mn = m * n;
  if (Array* da = c.din[0]) {  // dA = dY·Bᵀ
    const Operands o(be, c.node, c.dout[0], c.in[1]);
    const Array &dy = *o.a, &b = *o.b;
    if (p.fold) run_gemm(be, c.node, gemm_of(1, p.count * m, k, n, false, true, dy, 0, b, 0, *da, 0, 0, 0, 0, 1, 0));
    else if (p.equal) run_gemm(be, c.node, gemm_of(p.count, m, k, n, false, true, dy, 0, b, 0, *da, 0, mn, kn, mk, 1, 0));
    else {
      std::vector<bool> seen(static_cast<size_t>(da->numel() / std::max<int64_t>(mk, 1)), false);
      for (int64_t j = 0; j < p.count; ++j) {
        const auto ai = static_cast<size_t>(p.a[j]);
        run_gemm(be, c.node, gemm_of(1, m, k, n, false, true, dy, j * mn, b, p.b[j] * kn, *da, p.a[j] * mk, 0, 0, 0, 1, seen[ai] ? 1 : 0));
        seen[ai] = true;
      }
    }
  }
  if (Array* db = c.din[1]) {  // dB = Aᵀ·dY
    const Operands o(be, c.node, c.in[0], c.dout[0]);
    const Array &a = *o.a, &dy = *o.b;
    if (p.fold) run_gemm(be, c.node, gemm_of(1, k, n, p.count * m, true, false, a, 0, dy, 0, *db, 0, 0, 0, 0, 1, 0));
    else if (p.equal) run_gemm(be, c.node, gemm_of(p.count, k, n, m, true, false, a, 0, dy, 0, *db, 0, mk, mn, kn, 1, 0));
    else {
      std::vector<bool> seen(static_cast<size_t>(db->numel() / std::max<int64_t>(kn, 1)), false);
      for (int64_t j = 0; j < p.count; ++j) {
        const auto bi = static_cast<size_t>(p.b[j]);
        run_gemm(be, c.node, gemm_of(1, k, n, m, true, false, a, p.a[j] * mk, dy, j * mn, *db, p.b[j] * kn, 0, 0, 0, 1, seen[bi] ? 1 : 0));
        seen[bi] = true;
      }
    }
  }
}

struct GemmAttrs {
  int64_t m, n, k;
  bool ta, tb;
  float alpha, beta;
};

GemmAttrs gemm_attrs(const Node& node, const Shape& a, const Shape& b) {
  const bool ta = node.attr_int("transA", 0) != 0, tb = node.attr_int("transB", 0) != 0;
  return {ta ? a[1] : a[0], tb ? b[0] : b[1], ta ? a[0] : a[1], ta, tb, static_cast<float>(node.attr_float("alpha", 1.0)),
          static_cast<float>(node.attr_float("beta", 1.0))};
}

void gemm_forward(CudaBackend& be, const OpCall& c) {
  const Operands o(be, c.node, c.in[0], c.in[1]);
  const GemmAttrs g = gemm_attrs(c.node, c.in[0]->shape(), c.in[1]->shape());
  const Array* bias = c.in.size() > 2 ? c.in[2] : nullptr;
  if (!bias || g.beta == 0.0f) {
    return run_gemm(be, c.node, gemm_of(1, g.m, g.n, g.k, g.ta, g.tb, *o.a, 0, *o.b, 0, *c.out[0], 0, 0, 0, 0, g.alpha, 0));
  }
  // Y = beta·C broadcast, then Y += alpha·A'·B', in float32 (a bfloat16 Y is rounded once, after).
  const Array c32 = bias->dtype() == DType::F32 ? *bias : float32_copy(be, *bias);
  Array y = c.out[0]->dtype() == DType::F32 ? *c.out[0] : Array(DType::F32, c.out[0]->shape(), *c.ctx.allocator, MemoryKind::Transients);
  be.fill(y, 0.0);
  TensoroptBinary add{};
  add.op = TO_BINARY_ADD;
  add.a = y.data<float>();
  add.b = c32.data<float>();
  add.out = y.data<float>();
  add.a_dtype = add.b_dtype = add.out_dtype = TO_DTYPE_F32;
  add.shape = broadcast_of(c.node, y.shape(), y.shape(), c32.shape());
  be.check(be.driver().binary(be.device(), &add), c.node.op_type);
  if (g.beta != 1.0f) be.scale(y, g.beta);
  run_gemm(be, c.node, gemm_of(1, g.m, g.n, g.k, g.ta, g.tb, *o.a, 0, *o.b, 0, y, 0, 0, 0, 0, g.alpha, 1));
  if (c.out[0]->dtype() != DType::F32) be.convert(y, *c.out[0]);
}

void gemm_backward(CudaBackend& be, const GradCall& c) {
  const GemmAttrs g = gemm_attrs(c.node, c.in_shapes[0], c.in_shapes[1]);
  const int64_t m = g.m, n = g.n, k = g.k;
  if (Array* da = c.din[0]) {
    const Operands o(be, c.node, c.in[1], c.dout[0]);
    const Array &b = *o.a, &dy = *o.b;
    // A' [m,k] = dY [m,n] · B'ᵀ; stored [k,m] with transA: B' · dYᵀ.
    if (g.ta) run_gemm(be, c.node, gemm_of(1, k, m, n, g.tb, true, b, 0, dy, 0, *da, 0, 0, 0, 0, g.alpha, 0));
    else run_gemm(be, c.node, gemm_of(1, m, k, n, false, !g.tb, dy, 0, b, 0, *da, 0, 0, 0, 0, g.alpha, 0));
  }
  if (Array* db = c.din[1]) {
    const Operands o(be, c.node, c.in[0], c.dout[0]);
    const Array &a = *o.a, &dy = *o.b;
    // B' [k,n] = A'ᵀ · dY; stored [n,k] with transB: dYᵀ · A'.
    if (g.tb) run_gemm(be, c.node, gemm_of(1, n, k, m, true, g.ta, dy, 0, a, 0, *db, 0, 0, 0, 0, g.alpha, 0));
    else run_gemm(be, c.node, gemm_of(1, k, n, m, !g.ta, false, a, 0, dy, 0, *db, 0, 0, 0, 0, g.alpha, 0));
  }
  if (c.din.size() > 2 && c.din[2]) {
    Array& dc = *c.din[2];
    const Array dy = c.dout[0]->dtype() == DType::F32 ? *c.dout[0] : float32_copy(be, *c.dout[0]);
    if (dc.shape() == dy.shape()) be.convert(dy, dc);  // a plain copy
    else sum_onto(be, c.node, dy, dc);
    if (g.beta != 1.0f) be.scale(dc, g.beta);
  }
}

}  // namespace

void register_linear(CudaBackend& be, KernelTable& table) {
  OpKernel matmul{[&be](const OpCall& c) { matmul_forward(be, c); }, [&be](const GradCall& c) { matmul_backward(be, c); }};
  matmul.takes_bf16 = true;
  table["MatMul"] = std::move(matmul);
  OpKernel gemm{[&be](const OpCall& c) { gemm_forward(be, c); }, [&be](const GradCall& c) { gemm_backward(be, c); }};
  gemm.takes_bf16 = true;
  table["Gemm"] = std::move(gemm);
}

}  // namespace tensoropt::runtime::cuda
