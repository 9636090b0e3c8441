// The CUDA backend held to the CPU backend without a GPU: its host logic and its kernel sources
// (launcher/runtime/cuda/device/) run over the host emulation of the driver (cuda_emulation.h).
// What this cannot see: launch configurations, warp shuffles with more than one lane, cuBLASLt
// (emulated by a textbook GEMM) and the CUDA runtime; test_cuda_gpu.cc checks those on a GPU.
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <vector>

#include "graph/dtype.h"
#include "launcher/runtime/cpu/backend.h"
#include "tests/launcher/runtime/backend_compare.h"
#include "tests/launcher/runtime/cuda_emulation.h"
#include "tests/launcher/runtime/fixture_training.h"

namespace tensoropt::test {
namespace {

using runtime::Array;
using runtime::MemoryKind;

Array host_array(runtime::Backend& b, DType t, Shape shape, const std::vector<float>& v) {
  Array a(t, std::move(shape), b.allocator(), MemoryKind::Transients);
  if (t == DType::F32) {
    b.write(a, v.data(), a.bytes());
  } else {
    std::vector<uint16_t> h;
    for (float f : v) h.push_back(float_to_bf16(f));
    b.write(a, h.data(), a.bytes());
  }
  return a;
}

std::vector<float> read_floats(runtime::Backend& b, const Array& a) {
  std::vector<float> v(static_cast<size_t>(a.numel()));
  if (a.dtype() == DType::F32) {
    b.read(a, v.data(), a.bytes());
  } else {
    std::vector<uint16_t> h(v.size());
    b.read(a, h.data(), a.bytes());
    for (size_t i = 0; i < v.size(); ++i) v[i] = bf16_to_float(h[i]);
  }
  return v;
}

std::vector<float> uniform(size_t n, uint64_t seed, float lo = -1, float hi = 1) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

double max_diff(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(static_cast<double>(a[i]) - b[i]) / (std::abs(b[i]) + 1.0));
  return worst;
}

}  // namespace

TEST_CASE("cuda emulated: every CUDA kernel equals the CPU kernel on every kernel case it can run") {
  runtime::cpu::CpuBackend cpu(1);
  runtime::cuda::CudaBackend cuda(emulated_cuda_driver(), 0);
  std::map<std::string, int> ok_by_op;
  std::set<std::string> with_kernel, without;
  std::ostringstream table;
  int ok = 0, refused = 0, no_kernel = 0;
  for (const KernelCase& c : all_kernel_cases()) {
    const Comparison r = compare_backends(c, cpu, cuda, 1e-4);
    if (r.status == "no kernel") {
      ++no_kernel;
      without.insert(c.op);
      continue;
    }
    with_kernel.insert(c.op);
    if (r.status == "ok") {
      ++ok;
      ++ok_by_op[c.op];
      continue;
    }
    if (r.status.rfind("refused", 0) == 0) {
      ++refused;
      table << "  " << c.op << " / " << c.name << ": " << r.status << "\n";
      continue;
    }
    CAPTURE(r.forward_error);
    CAPTURE(r.gradient_error);
    FAIL_CHECK(c.op << " / " << c.name << ": " << r.status);
  }
  std::string missing;
  for (const std::string& op : without) missing += " " + op;
  MESSAGE(ok << " kernel cases equal on the emulated CUDA backend, " << refused << " refused, " << no_kernel
             << " of ops without a CUDA kernel yet:" << missing << "\n" << table.str());
  // An op with a CUDA kernel must pass at least one case, or its kernel is untested.
  for (const std::string& op : with_kernel) CHECK_MESSAGE(ok_by_op[op] > 0, op << ": no kernel case ran on the CUDA backend");
}

TEST_CASE("cuda emulated: the backend primitives equal the CPU backend's") {
  runtime::cpu::CpuBackend cpu(1);
  runtime::cuda::CudaBackend cuda(emulated_cuda_driver(), 0);
  const std::vector<float> x = uniform(600, 1), y = uniform(600, 2);

  SUBCASE("fill, convert, accumulate and scale, float32 and bfloat16") {
    for (DType dst : {DType::F32, DType::BF16}) {
      for (DType src : {DType::F32, DType::BF16}) {
        std::vector<float> got, want;
        for (runtime::Backend* b : {static_cast<runtime::Backend*>(&cpu), static_cast<runtime::Backend*>(&cuda)}) {
          Array d = host_array(*b, dst, {20, 30}, x), s = host_array(*b, src, {20, 30}, y);
          b->accumulate(d, s);
          Array c(DType::F32, {20, 30}, b->allocator(), MemoryKind::Transients);
          b->convert(d, c);
          b->scale(c, -0.75);
          Array f(dst, {7}, b->allocator(), MemoryKind::Transients);
          b->fill(f, 0.1);
          std::vector<float> all = read_floats(*b, c), filled = read_floats(*b, f);
          all.insert(all.end(), filled.begin(), filled.end());
          (b == &cpu ? want : got) = all;
        }
        CHECK(max_diff(got, want) == 0);
      }
    }
  }
  SUBCASE("copy_slab along every dimension") {
    for (int dim = 0; dim < 3; ++dim) {
      std::vector<float> got, want;
      for (runtime::Backend* b : {static_cast<runtime::Backend*>(&cpu), static_cast<runtime::Backend*>(&cuda)}) {
        Array s = host_array(*b, DType::F32, {4, 5, 6}, std::vector<float>(x.begin(), x.begin() + 120));
        Shape ds = {4, 5, 6};
        ds[static_cast<size_t>(dim)] = 9;
        Array d = host_array(*b, DType::F32, ds, std::vector<float>(y.begin(), y.begin() + numel(ds)));
        b->copy_slab(s, dim, 1, d, 5, 3);
        (b == &cpu ? want : got) = read_floats(*b, d);
      }
      CHECK(max_diff(got, want) == 0);
    }
  }
  SUBCASE("cross_entropy and mse, with their gradients") {
    const std::vector<int64_t> labels = {3, -100, 0, 11, 7, 7};
    std::vector<float> got, want;
    std::vector<double> losses_got, losses_want;
    for (runtime::Backend* b : {static_cast<runtime::Backend*>(&cpu), static_cast<runtime::Backend*>(&cuda)}) {
      Array logits = host_array(*b, DType::F32, {2, 3, 12}, std::vector<float>(x.begin(), x.begin() + 72));
      Array lab(DType::I64, {2, 3}, b->allocator(), MemoryKind::Transients);
      b->write(lab, labels.data(), lab.bytes());
      Array dl(DType::F32, {2, 3, 12}, b->allocator(), MemoryKind::Transients);
      const double ce = b->cross_entropy(logits, lab, &dl);
      Array t = host_array(*b, DType::F32, {2, 3, 12}, std::vector<float>(y.begin(), y.begin() + 72));
      Array dm(DType::F32, {2, 3, 12}, b->allocator(), MemoryKind::Transients);
      const double m = b->mse(logits, t, &dm);
      std::vector<float> all = read_floats(*b, dl), more = read_floats(*b, dm);
      all.insert(all.end(), more.begin(), more.end());
      (b == &cpu ? want : got) = all;
      (b == &cpu ? losses_want : losses_got) = {ce, m};
    }
    CHECK(max_diff(got, want) < 1e-6);
    CHECK(losses_got[0] == doctest::Approx(losses_want[0]).epsilon(1e-9));
    CHECK(losses_got[1] == doctest::Approx(losses_want[1]).epsilon(1e-9));
  }
  SUBCASE("sgd with momentum and adam, adamw over three steps") {
    for (int kind = 0; kind < 3; ++kind) {
      std::vector<float> got, want;
      for (runtime::Backend* b : {static_cast<runtime::Backend*>(&cpu), static_cast<runtime::Backend*>(&cuda)}) {
        Array w = host_array(*b, DType::F32, {600}, x), g = host_array(*b, DType::F32, {600}, y);
        Array m = host_array(*b, DType::F32, {600}, std::vector<float>(600, 0.0f));
        Array v = host_array(*b, DType::F32, {600}, std::vector<float>(600, 0.0f));
        for (int step = 1; step <= 3; ++step) {
          if (kind == 0) b->sgd_step(w, g, m, {0.1, 0.9, 0.01}, step);
          else b->adam_step(w, g, m, v, {.lr = 0.01, .weight_decay = 0.1, .decoupled = kind == 2}, step);
        }
        (b == &cpu ? want : got) = read_floats(*b, w);
      }
      CAPTURE(kind);
      CHECK(max_diff(got, want) < 1e-6);
    }
  }
}

TEST_CASE("cuda emulated: the runtime fixtures train as PyTorch does, three steps of every optimizer") {
  runtime::cuda::CudaBackend cuda(emulated_cuda_driver(), 0);
  std::string missing;
  const std::vector<std::string> names = fixtures_with_kernels(cuda, &missing);
  MESSAGE("fixtures trained on the emulated CUDA backend: " << names.size() << " of " << training_fixtures().size()
                                                          << std::string(missing.empty() ? "" : "; not yet (an op without a CUDA kernel):") << missing);
  REQUIRE(!names.empty());
  for (const std::string& name : names) {
    for (const char* optimizer : {"sgd", "adam", "adamw"}) check_fixture_training(&cuda, name, optimizer);
  }
}

// Under --dtype bf16 the CUDA GEMMs read bfloat16 operands as stored (OpKernel::takes_bf16) where
// the CPU ones read float32 copies of them: the same values, summed in another order, so the
// losses agree to bfloat16's rounding of the outputs (relative 2e-3 over three steps).
TEST_CASE("cuda emulated: bf16 mixed precision trains the fixtures as the CPU backend does") {
  std::string missing;
  const std::vector<std::string> names = fixtures_with_kernels(runtime::cuda::CudaBackend(emulated_cuda_driver(), 0), &missing);
  REQUIRE(!names.empty());
  for (const std::string& name : names) {
    CAPTURE(name);
    runtime::cuda::CudaBackend cuda(emulated_cuda_driver(), 0);  // a fresh ledger per fixture, as the CPU session's
    Session gpu(name, "adam", {}, true, &cuda), cpu(name, "adam", {}, true);
    for (int step = 0; step < 3; ++step) {
      const double a = gpu.step(), b = cpu.step();
      CHECK(a == doctest::Approx(b).epsilon(2e-3));
    }
    // The activations are held in bfloat16 on both, as the planner counts them. Except: a
    // LayerNormalization, GroupNormalization or InstanceNormalization keeps its Scale for backward,
    // a view of the parameter where it reads the parameter itself (the CUDA kernels, which take
    // bfloat16 as stored) but an Activations copy of the float32 copy the CPU kernels are handed
    // under mixed precision: the CPU holds more there (the catalogue charges neither).
    const auto acts = [](Session& s) { return s.backend.allocator().stats().peak[static_cast<size_t>(MemoryKind::Activations)]; };
    bool keeps_scale = false;
    for (const Node& n : gpu.g.nodes) {
      keeps_scale = keeps_scale || n.op_type == "LayerNormalization" || n.op_type == "GroupNormalization" ||
                    n.op_type == "InstanceNormalization";
    }
    if (keeps_scale) CHECK(acts(gpu) <= acts(cpu));
    else CHECK(acts(gpu) == acts(cpu));
  }
}

TEST_CASE("cuda emulated: a driver failure is an error naming the call, out of memory names the bytes") {
  runtime::cuda::CudaBackend cuda(emulated_cuda_driver(), 0);
  Array a(DType::F32, {4}, cuda.allocator(), MemoryKind::Transients);
  CHECK_THROWS_WITH_AS(cuda.check(cuda.driver().unary(cuda.device(), 999, a.raw(), TO_DTYPE_F32, a.raw(), TO_DTYPE_F32, 4, 0, 0), "Relu"),
                       doctest::Contains("CUDA Relu: unary: unknown op code"), InternalError);
  CHECK_THROWS_WITH_AS(runtime::cuda::CudaBackend(emulated_cuda_driver(), 3), doctest::Contains("--device cuda:"), InputError);
}

TEST_CASE("out of memory: the error names the node, the output, the bytes and the kind") {
  runtime::cpu::CpuBackend cpu(1);
  const int64_t huge = int64_t{1} << 46;  // 256 TiB of float32: no machine has it
  CHECK_THROWS_WITH_AS(Array(DType::F32, {huge}, cpu.allocator(), MemoryKind::Activations),
                       doctest::Contains("out of memory allocating 281,474,976,710,656 bytes of activations"), runtime::OutOfMemory);
  Node relu;
  relu.name = "act";
  relu.op_type = "Relu";
  Array x = host_array(cpu, DType::F32, {4}, {1, -1, 2, -2});
  runtime::OpState state;
  const runtime::StepContext ctx{&cpu.allocator(), true, 0, 1, 1};
  const runtime::OutputSpec spec{true, {huge / 4}, DType::F32, DType::F32, MemoryKind::Activations};
  CHECK_THROWS_WITH_AS(runtime::forward_call(cpu, *cpu.kernel("Relu"), relu, 0, {&x}, {spec}, state, ctx, nullptr, nullptr),
                       doctest::Contains("node 'act' (Relu) (forward, output float32[17592186044416]): out of memory allocating"),
                       runtime::OutOfMemory);
}

}  // namespace tensoropt::test
