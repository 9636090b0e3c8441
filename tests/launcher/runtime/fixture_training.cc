#include "tests/launcher/runtime/fixture_training.h"

#include <doctest/doctest.h>

#include <cmath>

#include "graph/import.h"
#include "launcher/runtime/cpu/backend.h"
#include "tests/launcher/runtime/reference.h"

namespace tensoropt::test {

using namespace runtime;

void check_close(const std::vector<float>& ours, const std::vector<float>& theirs, const std::string& what,
                 const std::vector<float>& gradient) {
  CAPTURE(what);
  REQUIRE(ours.size() == theirs.size());
  double scale = 0, worst = 0, gscale = 0;
  for (float t : theirs) scale = std::max(scale, static_cast<double>(std::abs(t)));
  for (float g : gradient) gscale = std::max(gscale, static_cast<double>(std::abs(g)));
  for (size_t i = 0; i < ours.size(); ++i) {
    if (!gradient.empty() && std::abs(gradient[i]) <= 1e-6 * gscale) continue;
    worst = std::max(worst, static_cast<double>(std::abs(ours[i] - theirs[i])));
  }
  CAPTURE(worst);
  CAPTURE(scale);
  CHECK(worst <= 1e-4 * scale + 1e-6);
}

std::vector<float> read_values(Backend& backend, const Array& a) {
  REQUIRE(a.dtype() == DType::F32);
  std::vector<float> v(static_cast<size_t>(a.numel()));
  backend.read(a, v.data(), a.bytes());
  return v;
}

Session::Session(const std::string& name, const std::string& optimizer, std::vector<bool> recompute, bool bf16, Backend* on)
    : g(import_onnx_file(runtime_fixtures() + name + ".onnx", {.batch = 4})),
      own(on ? nullptr : std::make_unique<cpu::CpuBackend>(2)),
      backend(on ? *on : *own) {
  state = load_state(g, g.source_path, backend, 0);
  ExecutorOptions eo;
  eo.recompute = std::move(recompute);
  eo.bf16 = bf16;
  ex = std::make_unique<Executor>(g, backend, state.arrays, eo);
  opt = std::make_unique<Optimizer>(reference_settings(optimizer), backend, state.arrays, ex->gradient_tensors());
  const std::string dir = runtime_fixtures();
  data = npy_data(g, LossKind::CrossEntropy, dir + name + ".x.npy", dir + name + ".y.npy", backend);
  ctx = StepContext{&backend.allocator(), true, 0, 0, 2};
}

double Session::step() {
  ctx.step = opt->steps() + 1;
  Batch b = data->next(ctx.step);
  double loss = ex->train_step(b.inputs, b.target, ctx);
  opt->step(*ex);
  return loss;
}

void check_fixture_training(Backend* on, const std::string& name, const std::string& optimizer) {
  CAPTURE(name);
  CAPTURE(optimizer);
  Reference ref = reference(name);
  const auto losses = ref.head["losses"][optimizer].get<std::vector<double>>();
  Session s(name, optimizer, {}, false, on);
  CHECK(s.state.initialised.empty());
  for (size_t k = 0; k < losses.size(); ++k) {
    CAPTURE(k);
    double loss = s.step();
    CHECK(loss == doctest::Approx(losses[k]).epsilon(1e-4));
    if (k == 0 && std::string(optimizer) == "sgd") {
      for (int t : s.ex->gradient_tensors()) {
        Shape shape;
        std::vector<float> want = ref.tensor("grad/" + s.g.tensors[static_cast<size_t>(t)].name, shape);
        REQUIRE_MESSAGE(!want.empty(), s.g.tensors[static_cast<size_t>(t)].name);
        check_close(read_values(s.backend, s.ex->gradient(t)), want, "grad of " + s.g.tensors[static_cast<size_t>(t)].name);
      }
    }
  }
  int compared = 0;
  for (const auto& [t, a] : s.state.arrays) {
    const Tensor& x = s.g.tensors[static_cast<size_t>(t)];
    if (x.kind != TensorKind::Parameter && x.kind != TensorKind::Buffer) continue;
    if (a.dtype() != DType::F32) continue;
    Shape shape;
    std::vector<float> want = ref.tensor(std::string(optimizer) + "/" + x.name, shape);
    REQUIRE_MESSAGE(!want.empty(), x.name);
    Shape gshape;
    std::vector<float> grad = std::string(optimizer) != "sgd" && x.kind == TensorKind::Parameter
                                  ? ref.tensor("grad/" + x.name, gshape) : std::vector<float>{};
    check_close(read_values(s.backend, a), want, "final " + x.name, grad);
    ++compared;
  }
  CHECK(compared > 0);
}

const std::vector<std::string>& training_fixtures() {
  static const std::vector<std::string> names = {"mlp", "cnn_bn", "resblock", "gpt", "vit", "branches"};
  return names;
}

std::vector<std::string> fixtures_with_kernels(const Backend& backend, std::string* missing) {
  std::vector<std::string> out;
  for (const std::string& name : training_fixtures()) {
    const Graph g = import_onnx_file(runtime_fixtures() + name + ".onnx", {.batch = 4});
    std::string lacking;
    for (const Node& n : g.nodes)
      if (!backend.kernel(n.op_type) && lacking.empty()) lacking = n.op_type;
    if (lacking.empty()) out.push_back(name);
    else *missing += " " + name + " (" + lacking + ")";
  }
  return out;
}

}  // namespace tensoropt::test
