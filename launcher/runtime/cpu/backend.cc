#include "launcher/runtime/cpu/backend.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <Eigen/Core>

#include "graph/error.h"
#include "launcher/runtime/cpu/denormals.h"
#include "launcher/runtime/cpu/kernels.h"
#include "launcher/runtime/cpu/linear_block_gemm.h"
#include "launcher/runtime/cpu/util.h"

namespace tensoropt::runtime::cpu {

DeviceFacts CpuBackend::facts() const {
  const std::string gemm = block_gemm_isa(), denormals = denormal_mode();
  return {gemm + " GEMM, subnormals " + denormals, {{"gemm", gemm}, {"denormals", denormals}}};
}

CpuBackend::CpuBackend(int threads) {
  register_elementwise(table_);
  register_linear(table_);
  register_pool(table_);
  register_norm(table_);
  register_movement(table_);
  register_resample(table_);
  register_shape(table_);
  set_threads(threads);
}

const OpKernel* CpuBackend::kernel(std::string_view op_type) const {
  auto it = table_.find(op_type);
  return it == table_.end() ? nullptr : &it->second;
}

void CpuBackend::set_threads(int threads) {
  threads_ = std::max(threads, 1);
  Eigen::setNbThreads(threads_);
  flush_denormals_here();  // the calling thread's own kernels; parallel_for's threads set theirs
}

void CpuBackend::write(Array& dst, const void* src, int64_t bytes) {
  TO_CHECK(bytes == dst.bytes());
  if (bytes > 0) std::memcpy(dst.raw(), src, static_cast<size_t>(bytes));
}

void CpuBackend::read(const Array& src, void* dst, int64_t bytes) {
  TO_CHECK(bytes == src.bytes());
  if (bytes > 0) std::memcpy(dst, src.raw(), static_cast<size_t>(bytes));
}

void CpuBackend::fill(Array& a, double value) {
  switch (a.dtype()) {
    case DType::F32: std::fill_n(a.data<float>(), a.numel(), static_cast<float>(value)); break;
    case DType::F64: std::fill_n(a.data<double>(), a.numel(), value); break;
    case DType::I64: std::fill_n(a.data<int64_t>(), a.numel(), static_cast<int64_t>(value)); break;
    case DType::I32: std::fill_n(a.data<int32_t>(), a.numel(), static_cast<int32_t>(value)); break;
    case DType::Bool: case DType::U8: std::fill_n(a.data<uint8_t>(), a.numel(), static_cast<uint8_t>(value != 0)); break;
    case DType::BF16: std::fill_n(a.data<uint16_t>(), a.numel(), float_to_bf16(static_cast<float>(value))); break;
    default: TO_CHECK(false && "fill: unsupported dtype");
  }
}

namespace {

// Element i of a float32 or bfloat16 array, as float.
struct FloatReader {
  const float* f = nullptr;
  const uint16_t* h = nullptr;
  explicit FloatReader(const Array& a) {
    if (a.dtype() == DType::F32) f = a.data<float>();
    else h = a.data<uint16_t>();
  }
  float operator[](int64_t i) const { return f ? f[i] : bf16_to_float(h[i]); }
};

bool float_or_bf16(const Array& a) { return a.dtype() == DType::F32 || a.dtype() == DType::BF16; }

}  // namespace

void CpuBackend::accumulate(Array& dst, const Array& src) {
  TO_CHECK(dst.shape() == src.shape() && float_or_bf16(dst) && float_or_bf16(src));
  const FloatReader s(src);
  if (dst.dtype() == DType::F32) {
    float* d = dst.data<float>();
    parallel_for(dst.numel(), 1 << 14, threads_, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) d[i] += s[i];
    });
    return;
  }
  uint16_t* d = dst.data<uint16_t>();
  parallel_for(dst.numel(), 1 << 14, threads_, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) d[i] = float_to_bf16(bf16_to_float(d[i]) + s[i]);
  });
}

void CpuBackend::convert(const Array& src, Array& dst) {
  TO_CHECK(dst.shape() == src.shape() && float_or_bf16(dst) && float_or_bf16(src));
  const FloatReader s(src);
  if (dst.dtype() == DType::F32) {
    float* d = dst.data<float>();
    parallel_for(dst.numel(), 1 << 14, threads_, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) d[i] = s[i];
    });
    return;
  }
  uint16_t* d = dst.data<uint16_t>();
  parallel_for(dst.numel(), 1 << 14, threads_, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) d[i] = float_to_bf16(s[i]);
  });
}

void CpuBackend::scale(Array& a, double factor) {
  TO_CHECK(a.dtype() == DType::F32);
  float* x = a.data<float>();
  const auto f = static_cast<float>(factor);
  parallel_for(a.numel(), 1 << 14, threads_, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) x[i] *= f;
  });
}

void CpuBackend::copy_slab(const Array& src, int dim, int64_t src_at, Array& dst, int64_t dst_at, int64_t len) {
  const Slab slab = slab_of(src, dim, src_at, dst, dst_at, len);
  if (slab.rows == 0 || slab.width == 0) return;
  const auto* s = static_cast<const char*>(src.raw()) + slab.src_offset;
  auto* d = static_cast<char*>(dst.raw()) + slab.dst_offset;
  parallel_for(slab.rows, std::max<int64_t>(1, (1 << 16) / slab.width), threads_, [&](int64_t lo, int64_t hi) {
    for (int64_t o = lo; o < hi; ++o) std::memcpy(d + o * slab.dst_pitch, s + o * slab.src_pitch, static_cast<size_t>(slab.width));
  });
}

double CpuBackend::cross_entropy(const Array& logits, const Array& labels, Array* dlogits) {
  TO_CHECK(logits.dtype() == DType::F32 && logits.rank() >= 2);
  const int64_t classes = logits.dim(logits.rank() - 1);
  const int64_t rows = logits.numel() / classes;
  TO_CHECK(labels.numel() == rows);
  const float* x = logits.data<float>();
  std::vector<double> loss(static_cast<size_t>(rows), 0.0);
  int64_t counted = 0;
  for (int64_t r = 0; r < rows; ++r) counted += index_at(labels, r) >= 0;
  const double scale = counted > 0 ? 1.0 / static_cast<double>(counted) : 0.0;
  float* dx = dlogits ? dlogits->data<float>() : nullptr;
  // Per row, as PyTorch's log_softmax: the exponentials of the shifted logits in float32
  // (vectorised), summed in float64; the gradient is softmax * scale from the same exponentials.
  parallel_for(rows, 16, threads_, [&](int64_t lo, int64_t hi) {
    Eigen::ArrayXf e(classes);
    for (int64_t r = lo; r < hi; ++r) {
      const float* row = x + r * classes;
      const Eigen::Map<const Eigen::ArrayXf> xr(row, classes);
      int64_t label = index_at(labels, r);
      const float mx = xr.maxCoeff();
      e = (xr - mx).exp();
      const double sum = e.cast<double>().sum();
      const double lse = static_cast<double>(mx) + std::log(sum);
      if (label >= 0) {
        TO_CHECK(label < classes);
        loss[static_cast<size_t>(r)] = lse - row[label];
      }
      if (dx) {
        float* drow = dx + r * classes;
        if (label < 0) {
          std::fill_n(drow, classes, 0.0f);
          continue;
        }
        Eigen::Map<Eigen::ArrayXf>(drow, classes) = e * static_cast<float>(scale / sum);
        drow[label] -= static_cast<float>(scale);
      }
    }
  });
  double total = 0;
  for (double l : loss) total += l;
  return total * scale;
}

double CpuBackend::mse(const Array& output, const Array& target, Array* doutput) {
  TO_CHECK(output.numel() == target.numel() && output.dtype() == DType::F32 && target.dtype() == DType::F32);
  const float* y = output.data<float>();
  const float* t = target.data<float>();
  const int64_t n = output.numel();
  double total = 0;
  for (int64_t i = 0; i < n; ++i) {
    double d = static_cast<double>(y[i]) - t[i];
    total += d * d;
  }
  if (doutput) {
    float* dy = doutput->data<float>();
    const double scale = 2.0 / static_cast<double>(n);
    for (int64_t i = 0; i < n; ++i) dy[i] = static_cast<float>((static_cast<double>(y[i]) - t[i]) * scale);
  }
  return n > 0 ? total / static_cast<double>(n) : 0.0;
}

// torch.optim.SGD: g += wd * w; buf = momentum * buf + g (buf = g at the first step); w -= lr * buf.
void CpuBackend::sgd_step(Array& weight, const Array& grad, Array& momentum, const SgdSettings& s, int64_t step) {
  float* w = weight.data<float>();
  const float* g = grad.data<float>();
  float* buf = s.momentum != 0 ? momentum.data<float>() : nullptr;
  const auto lr = static_cast<float>(s.lr), wd = static_cast<float>(s.weight_decay), mu = static_cast<float>(s.momentum);
  parallel_for(weight.numel(), 1 << 14, threads_, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      float d = g[i] + wd * w[i];
      if (buf) {
        buf[i] = step == 1 ? d : mu * buf[i] + d;
        d = buf[i];
      }
      w[i] -= lr * d;
    }
  });
}

// torch.optim.Adam / AdamW (amsgrad off): m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
// w -= lr * (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps). Adam adds wd * w to g first; AdamW
// multiplies w by (1 - lr * wd) first.
void CpuBackend::adam_step(Array& weight, const Array& grad, Array& m, Array& v, const AdamSettings& s, int64_t step) {
  float* w = weight.data<float>();
  const float* g = grad.data<float>();
  float* mm = m.data<float>();
  float* vv = v.data<float>();
  const double bc1 = 1.0 - std::pow(s.beta1, static_cast<double>(step));
  const double bc2 = 1.0 - std::pow(s.beta2, static_cast<double>(step));
  const auto b1 = static_cast<float>(s.beta1), b2 = static_cast<float>(s.beta2);
  const auto step_size = static_cast<float>(s.lr / bc1);
  const auto bc2_sqrt = static_cast<float>(std::sqrt(bc2));
  const auto eps = static_cast<float>(s.eps), wd = static_cast<float>(s.weight_decay);
  const auto decay = static_cast<float>(1.0 - s.lr * s.weight_decay);
  // One pass over four distinct arrays: restrict-qualified, the constants copied in (a float
  // captured by reference might alias the arrays) and the decay form chosen outside the loop, it
  // vectorises; it had stayed scalar.
  const auto update = [=]<bool kDecoupled>(int64_t lo, int64_t hi) {
    float* __restrict wr = w;
    const float* __restrict gr = g;
    float* __restrict mr = mm;
    float* __restrict vr = vv;
    for (int64_t i = lo; i < hi; ++i) {
      float gi = gr[i], wi = wr[i];
      if constexpr (kDecoupled) wi *= decay;
      else gi += wd * wi;
      const float mi = b1 * mr[i] + (1 - b1) * gi;
      const float vi = b2 * vr[i] + (1 - b2) * gi * gi;
      mr[i] = mi;
      vr[i] = vi;
      wr[i] = wi - step_size * mi / (std::sqrt(vi) / bc2_sqrt + eps);
    }
  };
  parallel_for(weight.numel(), 1 << 14, threads_, [&](int64_t lo, int64_t hi) {
    if (s.decoupled) update.template operator()<true>(lo, hi);
    else update.template operator()<false>(lo, hi);
  });
}

}  // namespace tensoropt::runtime::cpu
