// The CUDA kernels that read bfloat16 as stored (OpKernel::takes_bf16) held, bit for bit, to the
// executor's float32-copy path, on the emulated CUDA backend (cuda_emulation.h).
//
// How: every kernel case (kernel_check.h) of an op whose CUDA kernel takes bfloat16 runs twice
// under mixed precision (run_case with bf16: activations, data inputs and gradients stored as
// bfloat16, weights as bfloat16 working copies): once on the CudaBackend as it is, and once on
// Float32Copies, a test-only Backend that forwards everything to that same CudaBackend but hands
// the executor a copy of each kernel with takes_bf16 cleared, so the executor gives it float32
// copies of bfloat16 tensors and rounds what it writes: the path every kernel took before. bfloat16
// to float32 is exact and each kernel computes in float32 and rounds once, so the two must agree
// exactly: outputs and gradients equal as numbers (NaN where NaN) for the element-wise and
// movement ops, whose sums run in the same order on both paths; within 1e-6 relative for the other
// ops that take bfloat16 (a GEMM on bfloat16 operands may sum in another order).
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "launcher/runtime/cuda/backend.h"
#include "tests/launcher/runtime/backend_compare.h"
#include "tests/launcher/runtime/cuda_emulation.h"

namespace tensoropt::test {
namespace {

using runtime::Array;
using runtime::OpKernel;

// A CudaBackend whose kernels read float32 copies under mixed precision (takes_bf16 cleared).
class Float32Copies final : public runtime::Backend {
 public:
  explicit Float32Copies(runtime::cuda::CudaBackend& b) : b_(b) {}
  std::string_view name() const override { return b_.name(); }
  runtime::DeviceFacts facts() const override { return b_.facts(); }
  runtime::Allocator& allocator() override { return b_.allocator(); }
  const OpKernel* kernel(std::string_view op_type) const override {
    const OpKernel* k = b_.kernel(op_type);
    if (!k) return nullptr;
    auto it = copies_.find(op_type);
    if (it == copies_.end()) {
      it = copies_.emplace(std::string(op_type), *k).first;
      it->second.takes_bf16 = false;
    }
    return &it->second;
  }
  void write(Array& dst, const void* src, int64_t bytes) override { b_.write(dst, src, bytes); }
  void read(const Array& src, void* dst, int64_t bytes) override { b_.read(src, dst, bytes); }
  void fill(Array& a, double value) override { b_.fill(a, value); }
  void accumulate(Array& dst, const Array& src) override { b_.accumulate(dst, src); }
  void scale(Array& a, double factor) override { b_.scale(a, factor); }
  void convert(const Array& src, Array& dst) override { b_.convert(src, dst); }
  void copy_slab(const Array& src, int dim, int64_t src_at, Array& dst, int64_t dst_at, int64_t len) override {
    b_.copy_slab(src, dim, src_at, dst, dst_at, len);
  }
  double cross_entropy(const Array& logits, const Array& labels, Array* dlogits) override {
    return b_.cross_entropy(logits, labels, dlogits);
  }
  double mse(const Array& output, const Array& target, Array* doutput) override { return b_.mse(output, target, doutput); }
  void sgd_step(Array& w, const Array& g, Array& m, const runtime::SgdSettings& s, int64_t step) override {
    b_.sgd_step(w, g, m, s, step);
  }
  void adam_step(Array& w, const Array& g, Array& m, Array& v, const runtime::AdamSettings& s, int64_t step) override {
    b_.adam_step(w, g, m, v, s, step);
  }

 private:
  runtime::cuda::CudaBackend& b_;
  mutable std::map<std::string, OpKernel, std::less<>> copies_;
};

// The largest |a - b| / (|b| + 1); NaN against NaN and equal infinities agree, anything else
// against NaN is infinitely wrong.
double worst(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return INFINITY;
  double w = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) || std::isnan(b[i])) {
      if (std::isnan(a[i]) != std::isnan(b[i])) return INFINITY;
      continue;
    }
    if (a[i] == b[i]) continue;
    w = std::max(w, std::isinf(a[i]) || std::isinf(b[i]) ? INFINITY : std::abs(a[i] - b[i]) / (std::abs(b[i]) + 1.0));
  }
  return w;
}

// The ops of the element-wise and movement families that read bfloat16 as stored.
const std::set<std::string> kExact = {
    // elementwise.cc: every unary op, and the two-input arithmetic
    "Relu", "LeakyRelu", "Sigmoid", "Tanh", "Erf", "Exp", "Log", "Sqrt", "Reciprocal", "Neg", "Abs", "Floor", "Ceil", "Round",
    "Sign", "Softplus", "Elu", "Selu", "HardSigmoid", "HardSwish", "Sin", "Cos", "Softsign", "Celu", "ThresholdedRelu", "Mish",
    "Shrink", "Tan", "Atan", "Asin", "Acos", "Sinh", "Cosh", "Gelu", "Silu", "Add", "Sub", "Mul", "Div", "Pow",
    // elementwise_logic.cc, elementwise_misc.cc
    "Where", "Dropout", "Cast",
    // movement*.cc
    "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Transpose", "Concat", "Split", "Expand", "Tile", "Slice", "Gather",
    "GatherElements"};

}  // namespace

TEST_CASE("cuda emulated: kernels that take bfloat16 as stored equal the float32-copy path exactly") {
  runtime::cuda::CudaBackend cuda(emulated_cuda_driver(), 0);
  Float32Copies copies(cuda);
  for (const std::string& op : kExact) {
    CAPTURE(op);
    REQUIRE(cuda.kernel(op) != nullptr);
    CHECK(cuda.kernel(op)->takes_bf16);
    CHECK(!copies.kernel(op)->takes_bf16);
  }
  std::map<std::string, int> ran;
  int refused = 0;
  std::ostringstream skipped;
  for (const KernelCase& c : all_kernel_cases()) {
    const OpKernel* kernel = cuda.kernel(c.op);
    if (!kernel || !kernel->takes_bf16) continue;
    CAPTURE(c.op);
    CAPTURE(c.name);
    const CaseRun as_stored = run_case(c, cuda, true), copied = run_case(c, copies, true);
    if (!copied.error.empty()) {
      // What the float32-copy path refuses, the bfloat16 path refuses too.
      CHECK_MESSAGE(!as_stored.error.empty(), "the float32-copy path failed: " << copied.error);
      CHECK(as_stored.refused == copied.refused);
      ++refused;
      skipped << "  " << c.op << " / " << c.name << ": " << copied.error << "\n";
      continue;
    }
    REQUIRE_MESSAGE(as_stored.error.empty(), as_stored.error);
    const double tolerance = kExact.count(c.op) ? 0.0 : 1e-6;
    REQUIRE(as_stored.outputs.size() == copied.outputs.size());
    for (size_t k = 0; k < copied.outputs.size(); ++k) {
      CAPTURE(k);
      CHECK(worst(as_stored.outputs[k], copied.outputs[k]) <= tolerance);
    }
    REQUIRE(as_stored.gradients.size() == copied.gradients.size());
    for (const auto& [name, g] : copied.gradients) {
      CAPTURE(name);
      REQUIRE(as_stored.gradients.count(name));
      CHECK(worst(as_stored.gradients.at(name), g) <= tolerance);
    }
    ++ran[c.op];
  }
  int cases = 0;
  for (const auto& [op, n] : ran) cases += n;
  MESSAGE(cases << " kernel cases of " << ran.size() << " ops that take bfloat16 equal the float32-copy path under bf16, " << refused
                << " refused on both:\n"
                << skipped.str());
  // Every op of the families ran at least one case, or its bfloat16 path is untested.
  for (const std::string& op : kExact) CHECK_MESSAGE(ran[op] > 0, op << ": no kernel case ran under bf16");
}

}  // namespace tensoropt::test
