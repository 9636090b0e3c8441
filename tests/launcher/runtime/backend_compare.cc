#include "tests/launcher/runtime/backend_compare.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "graph/dtype.h"
#include "graph/error.h"
#include "graph/import.h"
#include "launcher/runtime/executor.h"

namespace tensoropt::test {
namespace {

using runtime::Array;
using runtime::Backend;
using runtime::MemoryKind;

}  // namespace

Array array_of(const Tensor& x, const std::vector<double>& v, Backend& b, MemoryKind kind) {
  Array a(runtime::runtime_dtype(x), x.shape, b.allocator(), kind);
  if (static_cast<int64_t>(v.size()) != a.numel()) throw std::runtime_error("wrong number of values for '" + x.name + "'");
  std::vector<char> bytes(static_cast<size_t>(a.bytes()));
  for (size_t i = 0; i < v.size(); ++i) {
    switch (a.dtype()) {
      case DType::F32: { const auto f = static_cast<float>(v[i]); std::memcpy(&bytes[i * 4], &f, 4); break; }
      case DType::F64: std::memcpy(&bytes[i * 8], &v[i], 8); break;
      case DType::I64: { const auto k = static_cast<int64_t>(v[i]); std::memcpy(&bytes[i * 8], &k, 8); break; }
      case DType::I32: { const auto k = static_cast<int32_t>(v[i]); std::memcpy(&bytes[i * 4], &k, 4); break; }
      case DType::Bool: case DType::U8: bytes[i] = v[i] != 0; break;
      default: throw std::runtime_error("unsupported dtype for '" + x.name + "'");
    }
  }
  b.write(a, bytes.data(), a.bytes());
  return a;
}

std::vector<double> values_of(const Array& a, Backend& b) {
  std::vector<char> bytes(static_cast<size_t>(a.bytes()));
  b.read(a, bytes.data(), a.bytes());
  std::vector<double> v(static_cast<size_t>(a.numel()));
  for (size_t i = 0; i < v.size(); ++i) {
    switch (a.dtype()) {
      case DType::F32: { float f; std::memcpy(&f, &bytes[i * 4], 4); v[i] = f; break; }
      case DType::F64: std::memcpy(&v[i], &bytes[i * 8], 8); break;
      case DType::I64: { int64_t k; std::memcpy(&k, &bytes[i * 8], 8); v[i] = static_cast<double>(k); break; }
      case DType::I32: { int32_t k; std::memcpy(&k, &bytes[i * 4], 4); v[i] = k; break; }
      case DType::Bool: case DType::U8: v[i] = static_cast<unsigned char>(bytes[i]); break;
      case DType::BF16: { uint16_t h; std::memcpy(&h, &bytes[i * 2], 2); v[i] = bf16_to_float(h); break; }
      default: break;
    }
  }
  return v;
}

namespace {

double relative_error(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return INFINITY;
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) && std::isnan(b[i])) continue;
    if (std::isinf(b[i]) && a[i] == b[i]) continue;
    worst = std::max(worst, std::abs(a[i] - b[i]) / (std::abs(b[i]) + 1.0));
    if (std::isnan(a[i]) != std::isnan(b[i])) worst = INFINITY;
  }
  return worst;
}

}  // namespace

const std::vector<double>& CaseValues::operator()(const Tensor& x) {
  auto it = values_.find(x.name);
  if (it != values_.end()) return it->second;
  std::vector<double> v;
  if (auto given = c_.values.find(x.name); given != c_.values.end()) {
    v = given->second;
  } else if (x.value) {
    for (int64_t i = 0; i < x.value->size(); ++i) v.push_back(x.value->real(i));
  } else {
    if (!dtype_is_float(x.dtype)) throw std::runtime_error("give values for integer input '" + x.name + "'");
    const auto r = c_.ranges.count(x.name) ? c_.ranges.at(x.name) : c_.range;
    std::uniform_real_distribution<double> u(r.first, r.second);
    for (int64_t i = 0; i < x.elements(); ++i) v.push_back(u(rng_));
  }
  return values_[x.name] = std::move(v);
}

OutputWeights random_output_weights(const Graph& g, Backend& backend, std::mt19937_64& rng) {
  OutputWeights w;
  w.arrays.resize(g.outputs.size());
  w.pointers.assign(g.outputs.size(), nullptr);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (size_t k = 0; k < g.outputs.size(); ++k) {
    const Tensor& y = g.tensors[static_cast<size_t>(g.outputs[k])];
    if (!dtype_is_float(y.dtype)) continue;
    std::vector<double> r;
    for (int64_t i = 0; i < y.elements(); ++i) r.push_back(u(rng));
    w.arrays[k] = array_of(y, r, backend, MemoryKind::Transients);
    w.pointers[k] = &w.arrays[k];
  }
  return w;
}

CaseRun run_case(const KernelCase& c, Backend& backend, bool bf16) {
  CaseRun run;
  try {
    Graph g = import_onnx_bytes(c.model.bytes(), c.name, {});
    CaseValues host_values(c);
    std::mt19937_64 rng(12345);
    std::map<int, Array> state;
    for (size_t t = 0; t < g.tensors.size(); ++t) {
      const Tensor& x = g.tensors[t];
      if (x.kind != TensorKind::Parameter && x.kind != TensorKind::Buffer && x.kind != TensorKind::Constant) continue;
      if (x.producer >= 0 || x.dtype == DType::Undefined) continue;
      state[static_cast<int>(t)] = array_of(x, host_values(x), backend, MemoryKind::Parameters);
    }
    std::vector<Array> inputs;
    for (int t : g.inputs) {
      const Tensor& x = g.tensors[static_cast<size_t>(t)];
      inputs.push_back(array_of(x, host_values(x), backend, MemoryKind::Inputs));
    }
    runtime::ExecutorOptions opts;
    opts.input_gradients = true;
    opts.bf16 = bf16;
    runtime::Executor ex(g, backend, state, opts);
    runtime::StepContext ctx{&backend.allocator(), true, 7, 1, 2};
    std::vector<Array> outs = ex.forward(inputs, ctx);
    for (const Array& o : outs) run.outputs.push_back(values_of(o, backend));
    if (!c.gradient) return run;
    const OutputWeights weights = random_output_weights(g, backend, rng);
    ex.backward_from(inputs, weights.pointers, ctx);
    for (int t : ex.gradient_tensors()) run.gradients[g.tensors[static_cast<size_t>(t)].name] = values_of(ex.gradient(t), backend);
  } catch (const InputError& e) {
    run.error = e.what();
    run.refused = true;
  } catch (const std::exception& e) {
    run.error = e.what();
  }
  return run;
}

Comparison compare_backends(const KernelCase& c, Backend& reference, Backend& test, double tolerance) {
  Comparison out{c.op, c.name, "ok"};
  if (!test.kernel(c.op)) {
    out.status = "no kernel";
    return out;
  }
  const CaseRun want = run_case(c, reference);
  if (!want.error.empty()) {
    out.status = "failed: the reference failed: " + want.error;
    return out;
  }
  const CaseRun got = run_case(c, test);
  if (!got.error.empty()) {
    out.status = (got.refused ? "refused: " : "failed: ") + got.error;
    return out;
  }
  for (size_t k = 0; k < want.outputs.size() && k < got.outputs.size(); ++k)
    out.forward_error = std::max(out.forward_error, relative_error(got.outputs[k], want.outputs[k]));
  if (got.outputs.size() != want.outputs.size()) out.forward_error = INFINITY;
  for (const auto& [name, g] : want.gradients) {
    auto it = got.gradients.find(name);
    out.gradient_error = std::max(out.gradient_error, it == got.gradients.end() ? INFINITY : relative_error(it->second, g));
  }
  if (!(out.forward_error <= tolerance) || !(out.gradient_error <= tolerance)) out.status = "mismatch";
  return out;
}

std::vector<KernelCase> all_kernel_cases() {
  std::vector<KernelCase> all;
  for (auto family : {elementwise_cases, linear_cases, pool_cases, norm_cases, movement_cases, resample_cases, shape_cases, norm_large_cases}) {
    for (KernelCase& c : family()) all.push_back(std::move(c));
  }
  return all;
}

}  // namespace tensoropt::test
