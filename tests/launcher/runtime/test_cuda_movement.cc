// The CUDA data-movement kernels (launcher/runtime/cuda/movement*.cc) where the kernel cases of
// test_cuda_emulated.cc cannot reach: Gather on a vocabulary shard (ShardInfo, which only the
// sharded executor passes), an index out of range, and the embedding gradient over many repeated
// indices, bit for bit equal to the CPU kernel (the same order of additions, no atomics). Over the
// host emulation of the driver, as test_cuda_emulated.cc.
#include <doctest/doctest.h>

#include <cstring>
#include <random>
#include <vector>

#include "graph/error.h"
#include "launcher/runtime/cpu/backend.h"
#include "tests/launcher/runtime/cuda_emulation.h"

namespace tensoropt::test {
namespace {

using runtime::Array;
using runtime::MemoryKind;

template <class T>
Array array_of(runtime::Backend& b, DType t, Shape shape, const std::vector<T>& v) {
  Array a(t, std::move(shape), b.allocator(), MemoryKind::Transients);
  REQUIRE(static_cast<int64_t>(v.size() * sizeof(T)) == a.bytes());
  b.write(a, v.data(), a.bytes());
  return a;
}

std::vector<float> floats_of(runtime::Backend& b, const Array& a) {
  std::vector<float> v(static_cast<size_t>(a.numel()));
  b.read(a, v.data(), a.bytes());
  return v;
}

std::vector<float> uniform(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

struct GatherRun {
  std::vector<float> out, dtable;
};

// Gather(table [A, W], indices [K]) forward and backward on `b`, with `shard` (nullptr: whole).
GatherRun run_gather(runtime::Backend& b, int64_t A, int64_t W, const std::vector<int64_t>& indices, const runtime::ShardInfo* shard) {
  Node node;
  node.name = "lookup";
  node.op_type = "Gather";
  node.inputs = {0, 1};
  node.outputs = {2};
  const auto K = static_cast<int64_t>(indices.size());
  Array table = array_of(b, DType::F32, {A, W}, uniform(static_cast<size_t>(A * W), 1));
  Array idx = array_of(b, DType::I64, {K}, indices);
  Array out(DType::F32, {K, W}, b.allocator(), MemoryKind::Transients);
  Array dy = array_of(b, DType::F32, {K, W}, uniform(static_cast<size_t>(K * W), 2));
  Array dtable(DType::F32, {A, W}, b.allocator(), MemoryKind::Transients);
  const runtime::OpKernel* k = b.kernel("Gather");
  REQUIRE(k);
  runtime::OpState state;
  const runtime::StepContext ctx{&b.allocator(), true, 7, 1, 1};
  k->forward(runtime::OpCall{node, 0, {&table, &idx}, {&out}, state, ctx, shard});
  const std::vector<Shape> in_shapes = {table.shape(), idx.shape()};
  k->backward(runtime::GradCall{node, 0, {nullptr, &idx}, {nullptr}, {&dy}, {&dtable, nullptr}, in_shapes, state, ctx, shard});
  return {floats_of(b, out), floats_of(b, dtable)};
}

}  // namespace

TEST_CASE("cuda emulated: Gather on a vocabulary shard equals the CPU kernel, zeros for the rows other shards hold") {
  runtime::cpu::CpuBackend cpu(1);
  runtime::cuda::CudaBackend cuda(emulated_cuda_driver(), 0);
  // This shard holds rows 5..9 of a 10-row table; -1 is row 9, 0 and 3 belong to the other shard.
  runtime::ShardInfo shard{{{10, 4}, {6}}, {{5, 0}, {0}}};
  const std::vector<int64_t> indices = {0, 7, 9, 3, 7, -1};
  const GatherRun want = run_gather(cpu, 5, 4, indices, &shard), got = run_gather(cuda, 5, 4, indices, &shard);
  CHECK(got.out == want.out);
  CHECK(got.dtable == want.dtable);
  CHECK(std::vector<float>(got.out.begin(), got.out.begin() + 4) == std::vector<float>(4, 0.0f));  // row 0: not held
  CHECK(got.out[4] != 0.0f);                                                                       // row 7: held
  CHECK_THROWS_WITH_AS(run_gather(cuda, 5, 4, {0, 10}, &shard), doctest::Contains("'lookup' (Gather): index 10 out of range"),
                       InputError);
}

TEST_CASE("cuda emulated: the embedding gradient over repeated indices is the CPU kernel's, bit for bit") {
  runtime::cpu::CpuBackend cpu(1);
  runtime::cuda::CudaBackend cuda(emulated_cuda_driver(), 0);
  std::vector<int64_t> indices;
  std::mt19937_64 rng(3);
  for (int k = 0; k < 96; ++k) indices.push_back(static_cast<int64_t>(rng() % 6) - (k % 5 == 0 ? 6 : 0));
  for (int64_t width : {40, 3}) {  // a warp per row, a thread per element
    CAPTURE(width);
    const GatherRun want = run_gather(cpu, 7, width, indices, nullptr), got = run_gather(cuda, 7, width, indices, nullptr);
    CHECK(got.out == want.out);
    CHECK(got.dtable == want.dtable);
  }
  CHECK_THROWS_WITH_AS(run_gather(cuda, 7, 3, {1, -8}, nullptr), doctest::Contains("index -8 out of range for an axis of size 7"),
                       InputError);
}

}  // namespace tensoropt::test
