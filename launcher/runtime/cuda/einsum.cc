// Einsum on the CUDA backend: ../einsum_plan.h's forward and backward over the driver's GEMM
// (strided batched, one launch per pairwise contraction) and device/einsum.h's gather and scatter.
#include <string>

#include "launcher/runtime/cuda/backend.h"
#include "launcher/runtime/cuda/device/einsum.h"
#include "launcher/runtime/einsum_plan.h"

namespace tensoropt::runtime::cuda {
namespace {

using einsum::EinsumGemm;
using einsum::Labels;

class CudaOps final : public einsum::Ops {
 public:
  CudaOps(CudaBackend& be, const Node& node) : be_(be), node_(node) {}

  void gather(const float* x, const Shape& xs, const Labels& labels, const Labels& keep, const std::vector<int64_t>& size,
              float* y) override {
    cuda_kernels::EinsumGatherArgs a{};
    a.x = x;
    a.y = y;
    space(xs, labels, keep, size, &a.keep, &a.sum, &a.kept, &a.summed);
    be_.launch("einsum_gather", a, node_.op_type);
  }
  void scatter(const float* d, const Shape& xs, const Labels& labels, const Labels& keep, const std::vector<int64_t>& size,
               float* dx) override {
    cuda_kernels::EinsumScatterArgs a{};
    a.d = d;
    a.dx = dx;
    a.dx_count = numel(xs);
    space(xs, labels, keep, size, &a.keep, &a.sum, &a.kept, &a.summed);
    be_.launch("einsum_scatter", a, node_.op_type);
  }
  void batched_gemm(const EinsumGemm& d, const float* a, const float* b, float* c, int64_t batch) override {
    TensoroptGemm g{};
    g.batch = batch;
    g.m = d.m;
    g.n = d.n;
    g.k = d.k;
    g.trans_a = d.ta;
    g.trans_b = d.tb;
    g.a = a;
    g.b = b;
    g.c = c;
    g.dtype_ab = TO_DTYPE_F32;
    g.dtype_c = TO_DTYPE_F32;
    g.stride_a = d.m * d.k;
    g.stride_b = d.k * d.n;
    g.stride_c = d.m * d.n;
    g.alpha = 1;
    g.beta = 0;
    be_.check(be_.driver().gemm(be_.device(), &g), node_.op_type);
  }

 private:
  void space(const Shape& xs, const Labels& labels, const Labels& keep, const std::vector<int64_t>& size,
             cuda_kernels::IndexSpace* k, cuda_kernels::IndexSpace* s, int64_t* kept, int64_t* summed) {
    const einsum::GatherSpace g = einsum::gather_space(xs, labels, keep, size);
    if (g.keep_size.size() > TO_MAX_RANK || g.sum_size.size() > TO_MAX_RANK)
      kernel_error(node_, "the CUDA Einsum takes at most " + std::to_string(TO_MAX_RANK) + " kept and summed labels per operand");
    k->rank = static_cast<int>(g.keep_size.size());
    for (size_t i = 0; i < g.keep_size.size(); ++i) {
      k->size[i] = g.keep_size[i];
      k->stride[i] = g.keep_stride[i];
    }
    s->rank = static_cast<int>(g.sum_size.size());
    for (size_t i = 0; i < g.sum_size.size(); ++i) {
      s->size[i] = g.sum_size[i];
      s->stride[i] = g.sum_stride[i];
    }
    *kept = g.kept;
    *summed = g.summed;
  }

  CudaBackend& be_;
  const Node& node_;
};

}  // namespace

void register_einsum(CudaBackend& be, KernelTable& table) {
  table["Einsum"] = {[&be](const OpCall& c) {
                       CudaOps ops(be, c.node);
                       einsum::einsum_forward(c, ops);
                     },
                     [&be](const GradCall& c) {
                       CudaOps ops(be, c.node);
                       einsum::einsum_backward(c, ops);
                     }};
}

}  // namespace tensoropt::runtime::cuda
