#include "tests/launcher/runtime/kernel_check.h"

#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include "graph/import.h"
#include "launcher/runtime/cpu/backend.h"
#include "launcher/runtime/executor.h"
#include "tests/launcher/runtime/backend_compare.h"

namespace tensoropt::test {

using runtime::Array;
using runtime::MemoryKind;

void check_kernel(const KernelCase& c) {
  CAPTURE(c.name);
  Graph g = import_onnx_bytes(c.model.bytes(), c.name, {});
  runtime::cpu::CpuBackend backend(2);
  std::mt19937_64 rng(12345);
  // Every graph input and initializer the nodes read gets a value: given, folded or random.
  CaseValues host_values(c);
  std::map<int, Array> state;
  std::vector<int> state_ids;
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    const Tensor& x = g.tensors[t];
    if (x.kind == TensorKind::Parameter || x.kind == TensorKind::Buffer || x.kind == TensorKind::Constant) {
      if (x.producer >= 0 || x.dtype == DType::Undefined) continue;
      state[static_cast<int>(t)] = array_of(x, host_values(x), backend, MemoryKind::Parameters);
      state_ids.push_back(static_cast<int>(t));
    }
  }
  auto make_inputs = [&]() {
    std::vector<Array> in;
    for (int t : g.inputs) {
      const Tensor& x = g.tensors[static_cast<size_t>(t)];
      in.push_back(array_of(x, host_values(x), backend, MemoryKind::Inputs));
    }
    return in;
  };
  runtime::ExecutorOptions opts;
  opts.input_gradients = true;
  runtime::Executor ex(g, backend, state, opts);
  runtime::StepContext ctx{&backend.allocator(), true, 7, 1, 2};

  std::vector<Array> outs = ex.forward(make_inputs(), ctx);
  for (const auto& [name, want] : c.expect) {
    int t = g.find(name);
    REQUIRE_MESSAGE(t >= 0, "output '" << name << "'");
    size_t k = 0;
    while (k < g.outputs.size() && g.outputs[k] != t) ++k;
    REQUIRE_MESSAGE(k < g.outputs.size(), "'" << name << "' is not a graph output");
    std::vector<double> got = values_of(outs[k], backend);
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      CAPTURE(i);
      CHECK(std::abs(got[i] - want[i]) <= 1e-5 * std::abs(want[i]) + 1e-6);
    }
  }
  if (!c.gradient) return;

  // f(x) = sum over float outputs of <out, R>; gradients from backward_from(R).
  const OutputWeights weights = random_output_weights(g, backend, rng);
  const std::vector<const Array*>& wptr = weights.pointers;
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  auto objective = [&]() {
    std::vector<Array> o = ex.forward(make_inputs(), ctx);
    double f = 0;
    for (size_t k = 0; k < o.size(); ++k) {
      if (!wptr[k]) continue;
      std::vector<double> a = values_of(o[k], backend), r = values_of(*wptr[k], backend);
      for (size_t i = 0; i < a.size(); ++i) f += a[i] * r[i];
    }
    return f;
  };
  ex.backward_from(make_inputs(), wptr, ctx);
  std::map<int, std::vector<double>> grads;
  for (int t : ex.gradient_tensors()) grads[t] = values_of(ex.gradient(t), backend);
  REQUIRE_MESSAGE(!grads.empty(), "no input takes a gradient: set gradient = false");

  for (const auto& [t, grad] : grads) {
    const Tensor& x = g.tensors[static_cast<size_t>(t)];
    CAPTURE(x.name);
    for (int dir = 0; dir < 2; ++dir) {
      std::vector<double> base = host_values.at(x.name), v(base.size());
      double scale = 0;
      for (double b : base) scale = std::max(scale, std::abs(b));
      double eps = 1e-2 * std::max(scale, 1.0);
      double analytic = 0;
      for (size_t i = 0; i < v.size(); ++i) {
        v[i] = u(rng);
        analytic += grad[i] * v[i];
      }
      auto set = [&](double s) {
        std::vector<double> p = base;
        for (size_t i = 0; i < p.size(); ++i) p[i] += s * v[i];
        host_values.set(x.name, p);
        if (state.count(t)) state[t] = array_of(x, p, backend, MemoryKind::Parameters);
      };
      set(eps);
      double fp = objective();
      set(-eps);
      double fm = objective();
      set(0);
      double numeric = (fp - fm) / (2 * eps);
      CAPTURE(analytic);
      CAPTURE(numeric);
      double floor = 1e-3 * std::sqrt(static_cast<double>(base.size()));
      CHECK(std::abs(analytic - numeric) <= c.tolerance * std::max(std::abs(analytic), std::abs(numeric)) + floor);
    }
  }
}

}  // namespace tensoropt::test
