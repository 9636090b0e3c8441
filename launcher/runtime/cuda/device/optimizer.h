// Optimizer kernels launched by name (registry.h): "adam_many", torch.optim.Adam / AdamW on every
// parameter of a model in one launch (the update of primitives.h's adam, element for element).
// The parameters are a table in device memory: each one's four pointers and where its elements
// start in the concatenation of all of them; a thread finds its parameter by binary search.
#pragma once

#include <cmath>

#include "launcher/runtime/cuda/device/hd.h"
#include "launcher/runtime/cuda/device/registry.h"

namespace tensoropt::cuda_kernels {

struct AdamTensorRef {
  float* weight;
  const float* grad;
  float* m;
  float* v;
  int64_t begin;  // this parameter's first element in the concatenation
};

struct AdamManyArgs {
  const AdamTensorRef* tensors;  // device memory, `count` entries by increasing begin
  int count;
  int64_t total;                 // elements of every parameter together
  float beta1, beta2, eps, weight_decay, step_size, bias_correction2_sqrt, decay;
  int decoupled;
};

template <class Exec>
int adam_many(Exec& ex, const AdamManyArgs& a) {
  const AdamManyArgs s = a;
  return ex.each(s.total, [=] TO_HD_LAMBDA(int64_t i) {
    int lo = 0, hi = s.count - 1;
    while (lo < hi) {
      const int mid = (lo + hi + 1) / 2;
      if (s.tensors[mid].begin <= i) lo = mid;
      else hi = mid - 1;
    }
    const AdamTensorRef t = s.tensors[lo];
    const int64_t j = i - t.begin;
    float gi = t.grad[j], wi = t.weight[j];
    if (s.decoupled) wi *= s.decay;
    else gi += s.weight_decay * wi;
    const float mi = s.beta1 * t.m[j] + (1 - s.beta1) * gi;
    const float vi = s.beta2 * t.v[j] + (1 - s.beta2) * gi * gi;
    t.m[j] = mi;
    t.v[j] = vi;
    t.weight[j] = wi - s.step_size * mi / (sqrtf(vi) / s.bias_correction2_sqrt + s.eps);
  });
}

template <class Exec>
void optimizer_kernels(KernelList<Exec>& out) {
  out.push_back(kernel<Exec, AdamManyArgs, adam_many<Exec>>("adam_many"));
}

}  // namespace tensoropt::cuda_kernels
