// Elementwise kernels (graph/ops/elementwise.cc): unary math, binary arithmetic with numpy
// broadcasting, activations, Where, Clip, Dropout, Cast. N = output elements.
#include <cmath>

#include "launcher/runtime/cpu/kernels.h"
#include "launcher/runtime/cpu/util.h"

namespace tensoropt::runtime::cpu {
namespace {

// ---- Add: out = a + b (broadcast); da = sum_to_shape(dout), db likewise.
void add_forward(const OpCall& c) {
  const Array& a = *c.in[0];
  const Array& b = *c.in[1];
  Array& y = *c.out[0];
  const Shape& out = y.shape();
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  float* py = y.data<float>();
  if (a.shape() == out && b.shape() == out) {
    parallel_for(y.numel(), 1 << 14, c.ctx.threads, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) py[i] = pa[i] + pb[i];
    });
    return;
  }
  auto sa = broadcast_strides(a.shape(), out), sb = broadcast_strides(b.shape(), out);
  parallel_for(y.numel(), 1 << 12, c.ctx.threads, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) py[i] = pa[broadcast_offset(i, out, sa)] + pb[broadcast_offset(i, out, sb)];
  });
}

void add_backward(const GradCall& c) {
  const Array& dy = *c.dout[0];
  for (int i = 0; i < 2; ++i) {
    if (!c.din[static_cast<size_t>(i)]) continue;
    Array& dx = *c.din[static_cast<size_t>(i)];
    sum_to_shape(dy.data<float>(), dy.shape(), dx.data<float>(), dx.shape(), c.ctx.threads);
  }
}

// ---- Relu: out = max(x, 0); dx = dout where out > 0 (the catalogue saves the output).
void relu_forward(const OpCall& c) {
  const float* x = c.in[0]->data<float>();
  float* y = c.out[0]->data<float>();
  parallel_for(c.out[0]->numel(), 1 << 14, c.ctx.threads, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) y[i] = x[i] > 0 ? x[i] : 0.0f;
  });
}

void relu_backward(const GradCall& c) {
  const float* y = c.out[0]->data<float>();
  const float* dy = c.dout[0]->data<float>();
  float* dx = c.din[0]->data<float>();
  parallel_for(c.din[0]->numel(), 1 << 14, c.ctx.threads, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) dx[i] = y[i] > 0 ? dy[i] : 0.0f;
  });
}

}  // namespace

void register_elementwise(KernelTable& table) {
  table["Add"] = {add_forward, add_backward};
  table["Relu"] = {relu_forward, relu_backward};
}

}  // namespace tensoropt::runtime::cpu
