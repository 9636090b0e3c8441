// The CUDA backend's primitives (backend.h: fill, convert, accumulate, scale, the losses and the
// optimizer steps) as kernel sources for any executor (hd.h): DeviceExec in the module, HostExec
// in the tests. Each function returns a TO_CUDA_* status and leaves the reason in exec.error.
// Numerics follow the CPU backend (cpu/backend.cc) operation for operation: float32 arithmetic,
// the cross-entropy's exponentials summed in double per row, bfloat16 rounded once.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "launcher/runtime/cuda/device/hd.h"
#include "launcher/runtime/cuda/driver_abi.h"

namespace tensoropt::cuda_kernels {

// Element i of a float32 or bfloat16 array, as float.
TO_HD float load_float(const void* p, int dtype, int64_t i) {
  return dtype == TO_DTYPE_F32 ? static_cast<const float*>(p)[i] : from_bf16(static_cast<const uint16_t*>(p)[i]);
}
TO_HD void store_float(void* p, int dtype, int64_t i, float v) {
  if (dtype == TO_DTYPE_F32) static_cast<float*>(p)[i] = v;
  else static_cast<uint16_t*>(p)[i] = to_bf16(v);
}
TO_HD int64_t load_index(const void* p, int dtype, int64_t i) {
  return dtype == TO_DTYPE_I64 ? static_cast<const int64_t*>(p)[i] : static_cast<const int32_t*>(p)[i];
}

template <class Exec>
int fill(Exec& ex, void* p, int dtype, int64_t n, double value) {
  switch (dtype) {
    case TO_DTYPE_F32: { float* x = static_cast<float*>(p); const auto v = static_cast<float>(value);
      return ex.each(n, [=] TO_HD_LAMBDA(int64_t i) { x[i] = v; }); }
    case TO_DTYPE_F64: { double* x = static_cast<double*>(p);
      return ex.each(n, [=] TO_HD_LAMBDA(int64_t i) { x[i] = value; }); }
    case TO_DTYPE_I64: { int64_t* x = static_cast<int64_t*>(p); const auto v = static_cast<int64_t>(value);
      return ex.each(n, [=] TO_HD_LAMBDA(int64_t i) { x[i] = v; }); }
    case TO_DTYPE_I32: { int32_t* x = static_cast<int32_t*>(p); const auto v = static_cast<int32_t>(value);
      return ex.each(n, [=] TO_HD_LAMBDA(int64_t i) { x[i] = v; }); }
    case TO_DTYPE_BOOL: case TO_DTYPE_U8: { uint8_t* x = static_cast<uint8_t*>(p); const uint8_t v = value != 0;
      return ex.each(n, [=] TO_HD_LAMBDA(int64_t i) { x[i] = v; }); }
    case TO_DTYPE_BF16: { uint16_t* x = static_cast<uint16_t*>(p); const uint16_t v = to_bf16(static_cast<float>(value));
      return ex.each(n, [=] TO_HD_LAMBDA(int64_t i) { x[i] = v; }); }
    default: return ex.fail("fill: dtype " + std::to_string(dtype) + " has no kernel");
  }
}

inline bool float_or_bf16(int dtype) { return dtype == TO_DTYPE_F32 || dtype == TO_DTYPE_BF16; }

template <class Exec>
int convert(Exec& ex, const void* src, int src_dtype, void* dst, int dst_dtype, int64_t n) {
  if (!float_or_bf16(src_dtype) || !float_or_bf16(dst_dtype)) return ex.fail("convert: float32 and bfloat16 only");
  return ex.each(n, [=] TO_HD_LAMBDA(int64_t i) { store_float(dst, dst_dtype, i, load_float(src, src_dtype, i)); });
}

template <class Exec>
int accumulate(Exec& ex, void* dst, int dst_dtype, const void* src, int src_dtype, int64_t n) {
  if (!float_or_bf16(src_dtype) || !float_or_bf16(dst_dtype)) return ex.fail("accumulate: float32 and bfloat16 only");
  return ex.each(n, [=] TO_HD_LAMBDA(int64_t i) {
    store_float(dst, dst_dtype, i, load_float(dst, dst_dtype, i) + load_float(src, src_dtype, i));
  });
}

template <class Exec>
int scale(Exec& ex, float* a, int64_t n, float factor) {
  return ex.each(n, [=] TO_HD_LAMBDA(int64_t i) { a[i] *= factor; });
}

// A temporary device array of `count` T, released by the destructor (stream-ordered).
template <class Exec, class T>
struct Scratch {
  Exec& ex;
  T* p = nullptr;
  int status;
  Scratch(Exec& e, int64_t count) : ex(e) {
    void* raw = nullptr;
    status = ex.alloc(count * static_cast<int64_t>(sizeof(T)), &raw);
    p = static_cast<T*>(raw);
  }
  ~Scratch() {
    if (p) ex.release(p);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
};

// Sums `count` doubles of device memory on the host, in index order (deterministic).
template <class Exec>
int host_sum(Exec& ex, const double* d, int64_t count, double* out) {
  std::vector<double> h(static_cast<size_t>(count));
  if (int s = ex.download(h.data(), d, count * 8)) return s;
  double total = 0;
  for (double v : h) total += v;
  *out = total;
  return TO_CUDA_OK;
}

// Per row: the log-sum-exp of the shifted logits (exponentials in float, their sum in double),
// the row's loss lse - x[label] into row_loss (0 for an ignored row), and the gradient
// softmax * scale - scale at the label (zeros for an ignored row). `scale` = 1 / counted rows,
// which the first pass (count_labels) finds.
template <class Exec>
int cross_entropy(Exec& ex, const float* logits, const void* labels, int label_dtype, int64_t rows, int64_t classes,
                  float* dlogits, double* loss) {
  if (label_dtype != TO_DTYPE_I64 && label_dtype != TO_DTYPE_I32) return ex.fail("cross_entropy: labels must be int64 or int32");
  Scratch<Exec, double> row_loss(ex, rows);
  if (row_loss.status) return row_loss.status;
  Scratch<Exec, double> counted(ex, rows);
  if (counted.status) return counted.status;
  double* rl = row_loss.p;
  double* cn = counted.p;
  if (int s = ex.each(rows, [=] TO_HD_LAMBDA(int64_t r) {
        const int64_t label = load_index(labels, label_dtype, r);
        cn[r] = label >= 0 ? 1.0 : 0.0;
        rl[r] = label >= classes ? 1.0 : 0.0;  // an out-of-range label, reported below
      }))
    return s;
  double total_counted = 0, out_of_range = 0;
  if (int s = host_sum(ex, cn, rows, &total_counted)) return s;
  if (int s = host_sum(ex, rl, rows, &out_of_range)) return s;
  if (out_of_range > 0) return ex.fail("cross_entropy: a label is >= the number of classes (" + std::to_string(classes) + ")");
  const double scale_d = total_counted > 0 ? 1.0 / total_counted : 0.0;
  if (int s = ex.rows(rows, [=] TO_HD_LAMBDA(const Lanes& l, int64_t r) {
        const float* x = logits + r * classes;
        float mx = -INFINITY;
        for (int64_t c = l.lane; c < classes; c += l.width) mx = fmaxf(mx, x[c]);
        mx = l.max(mx);
        double sum = 0;
        for (int64_t c = l.lane; c < classes; c += l.width) sum += static_cast<double>(expf(x[c] - mx));
        sum = l.sum(sum);
        const int64_t label = load_index(labels, label_dtype, r);
        if (l.lane == 0) rl[r] = label >= 0 ? static_cast<double>(mx) + log(sum) - static_cast<double>(x[label]) : 0.0;
        if (dlogits) {
          float* d = dlogits + r * classes;
          const auto f = static_cast<float>(scale_d / sum);
          for (int64_t c = l.lane; c < classes; c += l.width) {
            float g = label < 0 ? 0.0f : expf(x[c] - mx) * f;
            if (c == label) g -= static_cast<float>(scale_d);
            d[c] = g;
          }
        }
      }))
    return s;
  double total = 0;
  if (int s = host_sum(ex, rl, rows, &total)) return s;
  *loss = total * scale_d;
  return TO_CUDA_OK;
}

// Mean squared error; its gradient 2 (y - t) / n.
template <class Exec>
int mse(Exec& ex, const float* y, const float* t, int64_t n, float* dy, double* loss) {
  constexpr int64_t kRow = 4096;
  const int64_t rows = (n + kRow - 1) / kRow;
  Scratch<Exec, double> partial(ex, rows);
  if (partial.status) return partial.status;
  double* part = partial.p;
  const double scale_d = n > 0 ? 2.0 / static_cast<double>(n) : 0.0;
  if (int s = ex.rows(rows, [=] TO_HD_LAMBDA(const Lanes& l, int64_t r) {
        double acc = 0;
        const int64_t hi = (r + 1) * kRow < n ? (r + 1) * kRow : n;
        for (int64_t i = r * kRow + l.lane; i < hi; i += l.width) {
          const double d = static_cast<double>(y[i]) - t[i];
          acc += d * d;
          if (dy) dy[i] = static_cast<float>(d * scale_d);
        }
        acc = l.sum(acc);
        if (l.lane == 0) part[r] = acc;
      }))
    return s;
  double total = 0;
  if (int s = host_sum(ex, part, rows, &total)) return s;
  *loss = n > 0 ? total / static_cast<double>(n) : 0.0;
  return TO_CUDA_OK;
}

// torch.optim.SGD, as CpuBackend::sgd_step.
template <class Exec>
int sgd(Exec& ex, const TensoroptSgd& a) {
  float* w = a.weight;
  const float* g = a.grad;
  float* buf = a.momentum;
  const float lr = a.lr, wd = a.weight_decay, mu = a.momentum_factor;
  const int first = a.first_step;
  return ex.each(a.n, [=] TO_HD_LAMBDA(int64_t i) {
    float d = g[i] + wd * w[i];
    if (buf) {
      buf[i] = first ? d : mu * buf[i] + d;
      d = buf[i];
    }
    w[i] -= lr * d;
  });
}

// torch.optim.Adam / AdamW, as CpuBackend::adam_step.
template <class Exec>
int adam(Exec& ex, const TensoroptAdam& a) {
  float* w = a.weight;
  const float* g = a.grad;
  float* m = a.m;
  float* v = a.v;
  const float b1 = a.beta1, b2 = a.beta2, eps = a.eps, wd = a.weight_decay, step_size = a.step_size;
  const float bc2_sqrt = a.bias_correction2_sqrt, decay = a.decay;
  const int decoupled = a.decoupled;
  return ex.each(a.n, [=] TO_HD_LAMBDA(int64_t i) {
    float gi = g[i], wi = w[i];
    if (decoupled) wi *= decay;
    else gi += wd * wi;
    const float mi = b1 * m[i] + (1 - b1) * gi;
    const float vi = b2 * v[i] + (1 - b2) * gi * gi;
    m[i] = mi;
    v[i] = vi;
    w[i] = wi - step_size * mi / (sqrtf(vi) / bc2_sqrt + eps);
  });
}

}  // namespace tensoropt::cuda_kernels
