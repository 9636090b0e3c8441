#include "launcher/runtime/cuda/backend.h"

#include <cmath>
#include <map>
#include <vector>

#include "graph/dtype.h"
#include "graph/error.h"
#include "launcher/runtime/cuda/device/optimizer.h"

namespace tensoropt::runtime::cuda {

static_assert(TO_DTYPE_F32 == static_cast<int>(DType::F32) && TO_DTYPE_BF16 == static_cast<int>(DType::BF16) &&
              TO_DTYPE_F64 == static_cast<int>(DType::F64) && TO_DTYPE_I32 == static_cast<int>(DType::I32) &&
              TO_DTYPE_I64 == static_cast<int>(DType::I64) && TO_DTYPE_U8 == static_cast<int>(DType::U8) &&
              TO_DTYPE_BOOL == static_cast<int>(DType::Bool));

namespace {

// module_abi.h's string convention, retried until the text fits.
template <class Fill>
std::string text_from(Fill fill) {
  std::vector<char> buffer(1024);
  for (;;) {
    const size_t n = fill(buffer.data(), buffer.size());
    if (n < buffer.size()) return std::string(buffer.data(), n);
    buffer.resize(n + 1);
  }
}

int code(DType t) { return static_cast<int>(t); }
bool float_or_bf16(const Array& a) { return a.dtype() == DType::F32 || a.dtype() == DType::BF16; }

}  // namespace

std::string driver_error(const TensoroptCudaDriver& driver, TensoroptCudaDevice* device) {
  return text_from([&](char* text, size_t size) { return driver.error(device, text, size); });
}

void* DeviceAllocator::raw_allocate(int64_t bytes) {
  void* p = nullptr;
  const int s = driver_.alloc(device_, bytes, &p);
  if (s == TO_CUDA_OUT_OF_MEMORY) throw OutOfMemory(driver_error(driver_, device_));
  if (s != TO_CUDA_OK) throw InternalError("CUDA allocation of " + std::to_string(bytes) + " bytes: " + driver_error(driver_, device_));
  return p;
}

void DeviceAllocator::raw_free(void* p) {
  // A free that fails leaves the device unusable; the next call that waits reports why.
  (void)driver_.release(device_, p);
}

CudaBackend::CudaBackend(const TensoroptCudaDriver& driver, int ordinal) : driver_(driver) {
  char why[512] = "";
  device_ = driver_.open(ordinal, why, sizeof why);
  if (!device_) throw InputError("--device cuda: " + std::string(why));
  allocator_ = std::make_unique<DeviceAllocator>(driver_, device_);
  register_elementwise(*this, table_);
  register_linear(*this, table_);
  register_einsum(*this, table_);
  register_norm(*this, table_);
  register_movement(*this, table_);
  register_resample(*this, table_);
  register_shape(*this, table_);
  register_conv(*this, table_);
  register_pool(*this, table_);
}

CudaBackend::~CudaBackend() {
  table_.clear();
  allocator_.reset();
  if (device_) driver_.close(device_);
}

DeviceFacts CudaBackend::facts() const {
  return facts_from_lines(text_from([&](char* t, size_t size) { return driver_.describe(device_, t, size); }));
}

const OpKernel* CudaBackend::kernel(std::string_view op_type) const {
  auto it = table_.find(op_type);
  return it == table_.end() ? nullptr : &it->second;
}

void CudaBackend::check(int status, std::string_view what) const {
  if (status == TO_CUDA_OK) return;
  if (status == TO_CUDA_OUT_OF_MEMORY) throw OutOfMemory(std::string(what) + ": " + driver_error(driver_, device_));
  throw InternalError("CUDA " + std::string(what) + ": " + driver_error(driver_, device_));
}

namespace {

// Events around each node's kernels; their times are read (waiting for the stream) by report().
// Events are reused from the driver's pool after a reset, so a long run holds as many as one
// report's worth.
class EventTimer final : public KernelTimer {
 public:
  explicit EventTimer(CudaBackend& be) : be_(be) { reset(); }
  void begin(const std::string& label) override {
    int64_t id = 0;
    be_.check(be_.driver().event_record(be_.device(), &id), "event_record");
    open_ = {label, id};
  }
  void end() override {
    int64_t id = 0;
    be_.check(be_.driver().event_record(be_.device(), &id), "event_record");
    spans_.push_back({open_.first, open_.second, id});
  }
  std::vector<Row> report() override {
    std::map<std::string, Row> rows;
    for (const Span& s : spans_) {
      float ms = 0;
      be_.check(be_.driver().event_elapsed(be_.device(), s.from, s.to, &ms), "event_elapsed");
      Row& r = rows[s.label];
      r.label = s.label;
      ++r.calls;
      r.seconds += ms / 1e3;
    }
    return sorted_rows(rows);
  }
  void reset() override {
    spans_.clear();
    be_.check(be_.driver().events_reset(be_.device()), "events_reset");
  }

 private:
  struct Span {
    std::string label;
    int64_t from, to;
  };
  CudaBackend& be_;
  std::pair<std::string, int64_t> open_;
  std::vector<Span> spans_;
};

}  // namespace

std::unique_ptr<KernelTimer> CudaBackend::kernel_timer() { return std::make_unique<EventTimer>(*this); }

void CudaBackend::synchronize() { check(driver_.synchronize(device_), "synchronize"); }

void CudaBackend::write(Array& dst, const void* src, int64_t bytes) {
  TO_CHECK(bytes == dst.bytes());
  check(driver_.upload(device_, dst.raw(), src, bytes), "upload");
}

void CudaBackend::read(const Array& src, void* dst, int64_t bytes) {
  TO_CHECK(bytes == src.bytes());
  check(driver_.download(device_, dst, src.raw(), bytes), "download");
}

void CudaBackend::fill(Array& a, double value) { check(driver_.fill(device_, a.raw(), code(a.dtype()), a.numel(), value), "fill"); }

void CudaBackend::accumulate(Array& dst, const Array& src) {
  TO_CHECK(dst.shape() == src.shape() && float_or_bf16(dst) && float_or_bf16(src));
  check(driver_.accumulate(device_, dst.raw(), code(dst.dtype()), src.raw(), code(src.dtype()), dst.numel()), "accumulate");
}

void CudaBackend::convert(const Array& src, Array& dst) {
  TO_CHECK(dst.shape() == src.shape() && float_or_bf16(dst) && float_or_bf16(src));
  check(driver_.convert(device_, src.raw(), code(src.dtype()), dst.raw(), code(dst.dtype()), dst.numel()), "convert");
}

void CudaBackend::scale(Array& a, double factor) {
  TO_CHECK(a.dtype() == DType::F32);
  check(driver_.scale(device_, a.data<float>(), a.numel(), static_cast<float>(factor)), "scale");
}

void CudaBackend::copy_slab(const Array& src, int dim, int64_t src_at, Array& dst, int64_t dst_at, int64_t len) {
  const Slab slab = slab_of(src, dim, src_at, dst, dst_at, len);
  if (slab.rows == 0 || slab.width == 0) return;
  check(driver_.copy_rows(device_, static_cast<char*>(dst.raw()) + slab.dst_offset, slab.dst_pitch,
                          static_cast<const char*>(src.raw()) + slab.src_offset, slab.src_pitch, slab.width, slab.rows),
        "copy_slab");
}

double CudaBackend::cross_entropy(const Array& logits, const Array& labels, Array* dlogits) {
  TO_CHECK(logits.dtype() == DType::F32 && logits.rank() >= 2);
  const int64_t classes = logits.dim(logits.rank() - 1);
  const int64_t rows = logits.numel() / classes;
  TO_CHECK(labels.numel() == rows && (labels.dtype() == DType::I64 || labels.dtype() == DType::I32));
  double loss = 0;
  check(driver_.cross_entropy(device_, logits.data<float>(), labels.raw(), code(labels.dtype()), rows, classes,
                              dlogits ? dlogits->data<float>() : nullptr, &loss),
        "cross_entropy");
  return loss;
}

double CudaBackend::mse(const Array& output, const Array& target, Array* doutput) {
  TO_CHECK(output.numel() == target.numel() && output.dtype() == DType::F32 && target.dtype() == DType::F32);
  double loss = 0;
  check(driver_.mse(device_, output.data<float>(), target.data<float>(), output.numel(), doutput ? doutput->data<float>() : nullptr,
                    &loss),
        "mse");
  return loss;
}

void CudaBackend::sgd_step(Array& weight, const Array& grad, Array& momentum, const SgdSettings& s, int64_t step) {
  TensoroptSgd a{};
  a.weight = weight.data<float>();
  a.grad = grad.data<float>();
  a.momentum = s.momentum != 0 ? momentum.data<float>() : nullptr;
  a.n = weight.numel();
  a.lr = static_cast<float>(s.lr);
  a.momentum_factor = static_cast<float>(s.momentum);
  a.weight_decay = static_cast<float>(s.weight_decay);
  a.first_step = step == 1;
  check(driver_.sgd(device_, &a), "sgd");
}

namespace {

// Adam's per-step constants, as CpuBackend::adam_step computes them.
template <class Args>
void adam_constants(Args& a, const AdamSettings& s, int64_t step) {
  const double bc1 = 1.0 - std::pow(s.beta1, static_cast<double>(step));
  const double bc2 = 1.0 - std::pow(s.beta2, static_cast<double>(step));
  a.beta1 = static_cast<float>(s.beta1);
  a.beta2 = static_cast<float>(s.beta2);
  a.eps = static_cast<float>(s.eps);
  a.weight_decay = static_cast<float>(s.weight_decay);
  a.step_size = static_cast<float>(s.lr / bc1);
  a.bias_correction2_sqrt = static_cast<float>(std::sqrt(bc2));
  a.decay = static_cast<float>(1.0 - s.lr * s.weight_decay);
  a.decoupled = s.decoupled;
}

}  // namespace

void CudaBackend::adam_step(Array& weight, const Array& grad, Array& m, Array& v, const AdamSettings& s, int64_t step) {
  TensoroptAdam a{};
  a.weight = weight.data<float>();
  a.grad = grad.data<float>();
  a.m = m.data<float>();
  a.v = v.data<float>();
  a.n = weight.numel();
  adam_constants(a, s, step);
  check(driver_.adam(device_, &a), "adam");
}

void CudaBackend::adam_steps(const std::vector<AdamParam>& params, const AdamSettings& s, int64_t step) {
  std::vector<cuda_kernels::AdamTensorRef> table;
  int64_t total = 0;
  for (const AdamParam& p : params) {
    TO_CHECK(p.weight->shape() == p.grad->shape() && p.grad->dtype() == DType::F32);
    if (p.weight->numel() == 0) continue;
    table.push_back({p.weight->data<float>(), p.grad->data<float>(), p.m->data<float>(), p.v->data<float>(), total});
    total += p.weight->numel();
  }
  if (table.empty()) return;
  const auto bytes = static_cast<int64_t>(table.size() * sizeof(cuda_kernels::AdamTensorRef));
  Array on_device(DType::U8, {bytes}, *allocator_, MemoryKind::Transients);
  write(on_device, table.data(), bytes);
  cuda_kernels::AdamManyArgs a{};
  a.tensors = static_cast<const cuda_kernels::AdamTensorRef*>(on_device.raw());
  a.count = static_cast<int>(table.size());
  a.total = total;
  adam_constants(a, s, step);
  launch("adam_many", a, "adam");
}

}  // namespace tensoropt::runtime::cuda
