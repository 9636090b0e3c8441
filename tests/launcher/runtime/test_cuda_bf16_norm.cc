// The norm family's CUDA kernels under mixed precision (--dtype bf16) read bfloat16 as stored and
// write their outputs in the storage dtype (OpKernel::takes_bf16), where the executor otherwise
// hands a kernel float32 copies and rounds what it writes. bfloat16 -> float32 is exact and both
// ways round the float32 result once, so the two must agree bit for bit.
//
// How: every norm kernel case (test_kernels_norm.cc, cuda_norm_cases.cc) whose CUDA kernel takes
// bfloat16 runs under mixed precision twice on the emulated CUDA backend, through Probe, a Backend
// that forwards everything to one CudaBackend and counts the executor's conversions: once as the
// kernels are, once with their takes_bf16 cleared (the executor's float32-copy path). Outputs and
// gradients must be equal, bit for bit, and the first way must convert less (the copies are gone:
// fewer or as many per case, fewer in some case of every op).
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tests/launcher/runtime/backend_compare.h"
#include "tests/launcher/runtime/cuda_emulation.h"

namespace tensoropt::test {
namespace {

using runtime::Array;
using runtime::OpKernel;

// One CudaBackend seen through the Backend interface, its kernels as they are or with takes_bf16
// cleared (`float32_copies`); counts Backend::convert calls (the kernels' own go to the CudaBackend).
class Probe final : public runtime::Backend {
 public:
  Probe(runtime::cuda::CudaBackend& be, bool float32_copies) : be_(be), copies_(float32_copies) {}
  int64_t converts = 0;

  std::string_view name() const override { return be_.name(); }
  runtime::DeviceFacts facts() const override { return be_.facts(); }
  std::unique_ptr<runtime::KernelTimer> kernel_timer() override { return be_.kernel_timer(); }
  void synchronize() override { be_.synchronize(); }
  runtime::Allocator& allocator() override { return be_.allocator(); }
  const OpKernel* kernel(std::string_view op_type) const override {
    const OpKernel* k = be_.kernel(op_type);
    if (!k || !copies_) return k;
    auto it = cleared_.find(op_type);
    if (it == cleared_.end()) {
      OpKernel copy = *k;
      copy.takes_bf16 = false;
      it = cleared_.emplace(std::string(op_type), std::move(copy)).first;
    }
    return &it->second;
  }
  void write(Array& dst, const void* src, int64_t bytes) override { be_.write(dst, src, bytes); }
  void read(const Array& src, void* dst, int64_t bytes) override { be_.read(src, dst, bytes); }
  void fill(Array& a, double value) override { be_.fill(a, value); }
  void accumulate(Array& dst, const Array& src) override { be_.accumulate(dst, src); }
  void scale(Array& a, double factor) override { be_.scale(a, factor); }
  void convert(const Array& src, Array& dst) override {
    ++converts;
    be_.convert(src, dst);
  }
  void copy_slab(const Array& src, int dim, int64_t src_at, Array& dst, int64_t dst_at, int64_t len) override {
    be_.copy_slab(src, dim, src_at, dst, dst_at, len);
  }
  double cross_entropy(const Array& logits, const Array& labels, Array* dlogits) override {
    return be_.cross_entropy(logits, labels, dlogits);
  }
  double mse(const Array& output, const Array& target, Array* doutput) override { return be_.mse(output, target, doutput); }
  void sgd_step(Array& w, const Array& g, Array& m, const runtime::SgdSettings& s, int64_t step) override { be_.sgd_step(w, g, m, s, step); }
  void adam_step(Array& w, const Array& g, Array& m, Array& v, const runtime::AdamSettings& s, int64_t step) override {
    be_.adam_step(w, g, m, v, s, step);
  }

 private:
  runtime::cuda::CudaBackend& be_;
  bool copies_;
  mutable std::map<std::string, OpKernel, std::less<>> cleared_;
};

// Equal bit for bit as doubles read back from float32 or bfloat16 (NaN equals NaN).
bool identical(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])))) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("cuda emulated: the norm kernels take bfloat16 as stored and equal the float32-copy path bit for bit") {
  runtime::cuda::CudaBackend cuda(emulated_cuda_driver(), 0);
  const std::set<std::string> want = {"Softmax", "LogSoftmax", "LpNormalization", "LayerNormalization", "ReduceSum", "ReduceMean",
                                      "ReduceProd", "ReduceMax", "ReduceMin", "ReduceL1", "ReduceL2", "ReduceSumSquare",
                                      "ReduceLogSumExp", "GroupNormalization", "InstanceNormalization", "ArgMax",
                                      "ArgMin", "TopK", "CumSum"};
  std::vector<KernelCase> cases = norm_cases();
  for (KernelCase& c : norm_large_cases()) cases.push_back(std::move(c));
  std::set<std::string> takes;
  std::map<std::string, int> equal_by_op;
  std::map<std::string, bool> fewer_by_op;  // some case of the op converted less
  int equal = 0, refused = 0;
  for (const KernelCase& c : cases) {
    const OpKernel* k = cuda.kernel(c.op);
    if (!k || !k->takes_bf16) continue;
    takes.insert(c.op);
    CAPTURE(c.name);
    Probe direct(cuda, false), copies(cuda, true);
    const CaseRun got = run_case(c, direct, true), ref = run_case(c, copies, true);
    CHECK(got.error == ref.error);
    if (!ref.error.empty()) {
      CHECK(ref.refused);  // a kernel_error both ways, not a fault
      ++refused;
      continue;
    }
    REQUIRE(got.outputs.size() == ref.outputs.size());
    for (size_t o = 0; o < got.outputs.size(); ++o) CHECK_MESSAGE(identical(got.outputs[o], ref.outputs[o]), "output " << o);
    CHECK(got.gradients.size() == ref.gradients.size());
    for (const auto& [name, g] : ref.gradients) {
      auto it = got.gradients.find(name);
      CHECK_MESSAGE((it != got.gradients.end() && identical(it->second, g)), "gradient of " << name);
    }
    CHECK(direct.converts <= copies.converts);
    fewer_by_op[c.op] = fewer_by_op[c.op] || direct.converts < copies.converts;
    ++equal;
    ++equal_by_op[c.op];
  }
  MESSAGE(equal << " norm kernel cases equal bit for bit with bfloat16 as stored and through float32 copies, " << refused
                << " refused both ways");
  CHECK(takes == want);
  for (const std::string& op : want) {
    CHECK_MESSAGE(equal_by_op[op] > 0, op << ": no case compared");
    CHECK_MESSAGE(fewer_by_op[op], op << ": no case converted less with bfloat16 as stored");
  }
}

}  // namespace tensoropt::test
