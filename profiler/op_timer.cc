#include "profiler/op_timer.h"

#include <algorithm>
#include <random>

#include "launcher/runtime/kernel.h"

namespace tensoropt::profiler {

namespace {

using runtime::Array;
using runtime::MemoryKind;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// An array of `shape` holding tensor x's stand-in values, in `store` (bfloat16 under mixed precision).
Array stand_in(const Tensor& x, const Shape& shape, DType store, runtime::Backend& backend, std::mt19937& rng, MemoryKind kind) {
  const DType d = runtime::runtime_dtype(x);
  Array a(d, shape, backend.allocator(), kind);
  const int64_t n = numel(shape);
  if (d == DType::F32) {
    std::uniform_real_distribution<float> u(0.5f, 1.5f);
    std::vector<float> v(static_cast<size_t>(n));
    const bool whole = x.value && x.value->shape == shape && x.value->size() == n;
    for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = whole ? static_cast<float>(x.value->real(i)) : u(rng);
    backend.write(a, v.data(), a.bytes());
  } else if (d == DType::I64) {
    std::vector<int64_t> v(static_cast<size_t>(n), 0);
    if (x.value && x.value->shape == shape && x.value->size() == n)
      for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = x.value->integer(i);
    backend.write(a, v.data(), a.bytes());
  } else {
    backend.fill(a, 0.0);
  }
  if (store == d) return a;
  Array s(store, shape, backend.allocator(), kind);
  backend.convert(a, s);
  return s;
}

// What the kernel timer recorded since its last reset: the host clock on CPU, CUDA events on the
// GPU's stream (kernel.h KernelTimer).
double recorded(runtime::KernelTimer& timer) {
  double s = 0;
  for (const runtime::KernelTimer::Row& r : timer.report()) s += r.seconds;
  timer.reset();
  return s;
}

}  // namespace

OpTiming time_op_shard(const planner::ShardWork& w, planner::Precision precision, runtime::Backend& backend, int threads, int repeats) {
  const Graph& g = *w.graph;
  const Node& n = *w.node;
  const runtime::OpKernel* kernel = backend.kernel(n.op_type);
  if (!kernel || !kernel->forward) runtime::kernel_error(n, "op '" + n.op_type + "' has no " + std::string(backend.name()) + " kernel");
  const bool bf16 = precision == planner::Precision::Bf16;
  auto store = [&](const Tensor& x) {
    const DType d = runtime::runtime_dtype(x);
    return bf16 && d == DType::F32 ? DType::BF16 : d;
  };
  std::mt19937 rng(20261128);
  std::vector<Array> inputs(n.inputs.size());
  std::vector<const Array*> in(n.inputs.size(), nullptr);
  runtime::ShardInfo shard;
  for (size_t q = 0; q < n.inputs.size(); ++q) {
    const int t = n.inputs[q];
    shard.global.push_back(t >= 0 ? g.tensors[static_cast<size_t>(t)].shape : Shape{});
    shard.offset.emplace_back(t >= 0 ? w.local_inputs[q].size() : 0, 0);
    if (t < 0) continue;
    const Tensor& x = g.tensors[static_cast<size_t>(t)];
    inputs[q] = stand_in(x, w.local_inputs[q], store(x), backend, rng, MemoryKind::Activations);
    in[q] = &inputs[q];
  }
  std::vector<runtime::OutputSpec> specs(n.outputs.size());
  for (size_t o = 0; o < n.outputs.size(); ++o) {
    const int t = n.outputs[o];
    if (t < 0) continue;
    const Tensor& x = g.tensors[static_cast<size_t>(t)];
    specs[o] = runtime::OutputSpec{true, w.local_outputs[o], runtime::runtime_dtype(x), store(x), MemoryKind::Activations};
  }
  const int calls = std::max(repeats, 1) + 2;
  const std::unique_ptr<runtime::KernelTimer> timer = backend.kernel_timer();
  // forward_call times the kernel itself on ctx.timer, as in a step under run --kernel-times.
  runtime::StepContext ctx{&backend.allocator(), true, 1, 1, std::max(threads, 1), timer.get()};

  OpTiming out;
  std::vector<double> fwd, bwd;
  runtime::OpState state;
  std::vector<Array> outputs;
  for (int r = 0; r < calls; ++r) {
    state = {};
    outputs.clear();
    timer->reset();
    outputs = runtime::forward_call(backend, *kernel, n, 0, in, specs, state, ctx, &shard, nullptr);
    const double s = recorded(*timer);
    if (r >= 2) fwd.push_back(s);
  }
  out.forward_s = median(fwd);
  if (!w.has_backward || !kernel->backward) return out;

  // Output gradients, in the dtype the outputs are stored in.
  std::vector<Array> douts(n.outputs.size());
  std::vector<const Array*> dout(n.outputs.size(), nullptr), saved_out(n.outputs.size(), nullptr);
  for (size_t o = 0; o < n.outputs.size(); ++o) {
    if (n.outputs[o] < 0 || !outputs[o].defined()) continue;
    const Tensor& x = g.tensors[static_cast<size_t>(n.outputs[o])];
    saved_out[o] = &outputs[o];
    if (!dtype_is_float(x.dtype)) continue;
    douts[o] = stand_in(x, w.local_outputs[o], store(x), backend, rng, MemoryKind::Transients);
    dout[o] = &douts[o];
  }
  for (int r = 0; r < calls; ++r) {
    {
      runtime::Float32Args f32(backend, n.inputs.size() + 2 * n.outputs.size(), kernel->takes_bf16);
      std::vector<const Array*> gi, go, gd;
      for (const Array* a : in) gi.push_back(f32(a));
      for (const Array* a : saved_out) go.push_back(f32(a));
      for (const Array* a : dout) gd.push_back(f32(a));
      std::vector<Array> dins(n.inputs.size());
      std::vector<Array*> din(n.inputs.size(), nullptr);
      for (size_t q = 0; q < n.inputs.size(); ++q) {
        if (n.inputs[q] < 0 || q >= w.input_grad.size() || !w.input_grad[q]) continue;
        dins[q] = Array(runtime::runtime_dtype(g.tensors[static_cast<size_t>(n.inputs[q])]), w.local_inputs[q], backend.allocator(),
                        MemoryKind::Transients);
        din[q] = &dins[q];
      }
      timer->reset();
      timer->begin("backward");
      kernel->backward(runtime::GradCall{n, 0, gi, go, gd, din, w.local_inputs, state, ctx, &shard});
      timer->end();
    }
    const double s = recorded(*timer);
    if (r >= 2) bwd.push_back(s);
  }
  out.backward_s = median(bwd);
  return out;
}

}  // namespace tensoropt::profiler
