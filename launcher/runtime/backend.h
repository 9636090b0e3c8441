// A backend: the kernels of one kind of device and the primitives the executor, the loss and the
// optimizers need beside them. CpuBackend (cpu/backend.h) implements it with Eigen and threads; a
// CUDA backend implements the same interface with cuBLAS, cuDNN and its own kernels, so the
// executor (executor.h) never changes when a backend is added.
//
// Every Array passed in lives on this backend's device and was allocated by allocator().
// Float arrays are float32, except that under mixed precision the executor stores tensors as
// bfloat16 (convert, accumulate) and hands kernels float32 copies. Functions throw InternalError on
// a shape or dtype mismatch (the executor's bug, never the user's).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "launcher/runtime/array.h"
#include "launcher/runtime/kernel.h"

namespace tensoropt::runtime {

struct SgdSettings {
  double lr = 0.01, momentum = 0, weight_decay = 0;
};
struct AdamSettings {
  double lr = 0.001, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0;
  bool decoupled = false;  // AdamW: decay the weights, not the gradient
};

// What a run prints and reports about the device beyond its name and threads: `line` for the
// human output ("avx512 GEMM, subnormals flush"), `fields` for the JSON report, in order.
struct DeviceFacts {
  std::string line;
  std::vector<std::pair<std::string, std::string>> fields;
};
// Facts from "key: value" lines (what the CUDA module's describe functions write), in order;
// lines without ": " are skipped; `line` joins them as "key value, key value".
DeviceFacts facts_from_lines(const std::string& text);

// copy_slab's bytes: `rows` runs of `width` bytes, from src at `src_offset` with runs `src_pitch`
// apart, to dst likewise. Checks copy_slab's REQUIRES (InternalError); rows or width 0: nothing.
struct Slab {
  int64_t rows = 0, width = 0, src_pitch = 0, dst_pitch = 0, src_offset = 0, dst_offset = 0;
};
Slab slab_of(const Array& src, int dim, int64_t src_at, const Array& dst, int64_t dst_at, int64_t len);

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;  // "cpu", "cuda"
  virtual DeviceFacts facts() const = 0;
  // A timer of this device's kernels (kernel.h); the host clock unless the backend's kernels run
  // asynchronously.
  virtual std::unique_ptr<KernelTimer> kernel_timer() { return host_kernel_timer(); }
  // Returns when every kernel issued so far is done (a step's end, for its time); at once where
  // kernels return when done.
  virtual void synchronize() {}
  virtual Allocator& allocator() = 0;
  // nullptr when this backend has no kernel for the op type.
  virtual const OpKernel* kernel(std::string_view op_type) const = 0;

  // Host <-> device: `bytes` must equal the array's bytes.
  virtual void write(Array& dst, const void* src, int64_t bytes) = 0;
  virtual void read(const Array& src, void* dst, int64_t bytes) = 0;
  virtual void fill(Array& a, double value) = 0;
  // dst += src (same shape; float32 or bfloat16, each side either): gradients of a tensor read by
  // several ops. A bfloat16 dst is rounded to nearest even once, after the float32 sum.
  virtual void accumulate(Array& dst, const Array& src) = 0;
  // a *= factor (float32).
  virtual void scale(Array& a, double factor) = 0;
  // dst = src in dst's dtype (float32 <-> bfloat16, rounded to nearest even; same shape).
  virtual void convert(const Array& src, Array& dst) = 0;
  // Along dimension `dim`: dst[..., dst_at + k, ...] = src[..., src_at + k, ...] for 0 <= k < len.
  // src and dst have the same dtype, rank and sizes in every other dimension. Any dtype.
  virtual void copy_slab(const Array& src, int dim, int64_t src_at, Array& dst, int64_t dst_at, int64_t len) = 0;

  // The mean loss over every labelled position, as torch.nn.functional.cross_entropy on logits
  // flattened to [N, C] ([B, C] with labels [B], [B, T, C] with labels [B, T]); labels < 0 are
  // ignored (PyTorch's ignore_index -100 and the like). Writes dlogits when non-null.
  virtual double cross_entropy(const Array& logits, const Array& labels, Array* dlogits) = 0;
  // Mean squared error over every element, as torch.nn.functional.mse_loss.
  virtual double mse(const Array& output, const Array& target, Array* doutput) = 0;

  // One optimizer step on one parameter, PyTorch's update rules (torch.optim.SGD, Adam, AdamW).
  // `momentum` may be undefined when settings.momentum == 0. `step` is 1-based.
  virtual void sgd_step(Array& weight, const Array& grad, Array& momentum, const SgdSettings& s, int64_t step) = 0;
  virtual void adam_step(Array& weight, const Array& grad, Array& m, Array& v, const AdamSettings& s, int64_t step) = 0;

  // The same step on many parameters at once (float32 weight, gradient and moments of equal
  // shapes): a GPU updates them all in one launch. The default calls adam_step on each.
  struct AdamParam {
    Array* weight;
    const Array* grad;
    Array* m;
    Array* v;
  };
  virtual void adam_steps(const std::vector<AdamParam>& params, const AdamSettings& s, int64_t step) {
    for (const AdamParam& p : params) adam_step(*p.weight, *p.grad, *p.m, *p.v, s, step);
  }
};

}  // namespace tensoropt::runtime
