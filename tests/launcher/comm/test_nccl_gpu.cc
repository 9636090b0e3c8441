// The NCCL communicator on a GPU (launcher/comm/nccl/nccl_communicator.h): a one-rank world through
// every collective on device buffers, both through a one-rank NCCL communicator and as the local
// copies of a group of one, against known answers with guard elements after every output (a wrong
// count or dtype writes them); the order after the compute stream; and the abort paths: a member
// that never comes, and a collective held past its deadline. Runs where the CUDA module loads and
// sees a GPU (scripts/gpu-check runs "gpu: nccl*" on a lent GPU machine); elsewhere each test says
// in one visible line why it skipped. One GPU cannot hold two ranks (NCCL refuses), so sums over
// several members and the uneven paths across members are not run here: the point-to-point plans
// are checked without a GPU (test_nccl.cc), the multi-process behaviour by the Gloo tests.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "graph/error.h"
#include "launcher/comm/nccl/nccl_communicator.h"
#include "tests/children.h"
#include "tests/gpu.h"

namespace tensoropt::comm {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// The module's NCCL table when a GPU is visible; else nullptr, with the reason printed.
const TensoroptNcclApi* gpu_nccl(const char* test) {
  const TensoroptCudaModule* module = test::gpu_module(test);
  return module ? module->nccl() : nullptr;
}

std::string api_error(const TensoroptNcclApi& api) {
  char text[1024] = "";
  api.error(text, sizeof text);
  return text;
}

#define API_OK(api, call) REQUIRE_MESSAGE((call) == TO_NCCL_OK, #call << ": " << api_error(api))

double since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// A device buffer of `count` elements of T plus kGuard guard elements after them, set to a
// sentinel that no collective here may write.
constexpr size_t kGuard = 16;
template <typename T>
struct DeviceArray {
  const TensoroptNcclApi& api;
  size_t count;
  T sentinel;
  void* p = nullptr;
  DeviceArray(const TensoroptNcclApi& a, size_t n, T s) : api(a), count(n), sentinel(s) {
    API_OK(api, api.malloc(0, (n + kGuard) * sizeof(T), &p));
    put(std::vector<T>(n, s));
  }
  ~DeviceArray() { (void)api.free(p); }
  void put(std::vector<T> v) {
    REQUIRE(v.size() == count);
    v.resize(count + kGuard, sentinel);
    API_OK(api, api.memcpy(p, v.data(), v.size() * sizeof(T)));
  }
  // The elements; the guard checked on the way.
  std::vector<T> get() const {
    std::vector<T> v(count + kGuard);
    API_OK(api, api.memcpy(v.data(), p, v.size() * sizeof(T)));
    for (size_t i = count; i < v.size(); ++i)
      if (std::memcmp(&v[i], &sentinel, sizeof(T)) != 0) FAIL_CHECK("guard element " << i - count << " was written");
    v.resize(count);
    return v;
  }
};

template <typename T>
std::vector<T> ramp(size_t n, int seed) {
  std::vector<T> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<T>(seed * 100 + static_cast<int>(i % 50));
  return v;
}

std::vector<uint16_t> bf16_ramp(size_t n, int seed) {
  std::vector<uint16_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = float_to_bf16(static_cast<float>(seed * 10) + 0.5f * static_cast<float>(i % 20));
  return v;
}

// A stream of the test's own, standing for the CUDA backend's compute stream.
struct Stream {
  const TensoroptNcclApi& api;
  void* s = nullptr;
  explicit Stream(const TensoroptNcclApi& a) : api(a) { API_OK(api, api.stream_create(0, &s)); }
  ~Stream() { (void)api.stream_destroy(s); }
};

// A hold on a stream (nccl_abi.h stream_hold), released after `after` by a thread, or at scope exit.
struct Hold {
  const TensoroptNcclApi& api;
  void* h = nullptr;
  std::thread releaser;
  Hold(const TensoroptNcclApi& a, void* stream) : api(a) { API_OK(api, api.stream_hold(stream, &h)); }
  void release_after(std::chrono::milliseconds after) {
    releaser = std::thread([this, after] {
      std::this_thread::sleep_for(after);
      (void)api.stream_release(h);
    });
  }
  ~Hold() {
    if (releaser.joinable()) releaser.join();
    else (void)api.stream_release(h);
  }
};

NcclOptions one_rank(const std::string& dir, void* compute_stream, bool through_nccl, std::chrono::milliseconds timeout = 10s) {
  NcclOptions o;
  o.rendezvous = "file:" + dir;
  o.timeout = timeout;
  o.compute_stream = compute_stream;
  o.nccl_for_groups_of_one = through_nccl;
  return o;
}

// Every collective of a one-rank world on `c`: with one member, each result is this member's input.
void every_collective(Communicator& c, const TensoroptNcclApi& api, Stream& compute) {
  const Group w = c.world();
  const size_t n = 37;
  {  // sums, in place, every dtype that has one
    DeviceArray<float> f(api, n, -7.f);
    f.put(ramp<float>(n, 1));
    c.all_reduce(f.p, static_cast<int64_t>(n), DType::F32, w);
    CHECK(f.get() == ramp<float>(n, 1));
    DeviceArray<uint16_t> b(api, n, 0xdead);
    b.put(bf16_ramp(n, 2));
    c.all_reduce(b.p, static_cast<int64_t>(n), DType::BF16, w);
    CHECK(b.get() == bf16_ramp(n, 2));
    DeviceArray<double> d(api, n, -7.0);
    d.put(ramp<double>(n, 3));
    c.all_reduce(d.p, static_cast<int64_t>(n), DType::F64, w);
    CHECK(d.get() == ramp<double>(n, 3));
    DeviceArray<int64_t> l(api, n, -7);
    l.put(ramp<int64_t>(n, 4));
    c.all_reduce(l.p, static_cast<int64_t>(n), DType::I64, w);
    CHECK(l.get() == ramp<int64_t>(n, 4));
    DeviceArray<int32_t> i(api, n, -7);
    i.put(ramp<int32_t>(n, 5));
    c.all_reduce(i.p, static_cast<int64_t>(n), DType::I32, w);
    CHECK(i.get() == ramp<int32_t>(n, 5));
    CHECK_THROWS_AS(c.all_reduce(i.p, 1, DType::I16, w), InternalError);  // no sum
  }
  {  // copies: out <- in (float32, and int16, which NCCL has no type for: bytes move)
    DeviceArray<float> in(api, n, -7.f), out(api, n, -7.f);
    in.put(ramp<float>(n, 6));
    c.all_gather(in.p, out.p, static_cast<int64_t>(n), DType::F32, w);
    CHECK(out.get() == ramp<float>(n, 6));
    DeviceArray<int16_t> in16(api, n, -7), out16(api, n, -7);
    in16.put(ramp<int16_t>(n, 7));
    c.all_gather_v(in16.p, out16.p, {static_cast<int64_t>(n)}, DType::I16, w);
    CHECK(out16.get() == ramp<int16_t>(n, 7));
    DeviceArray<float> a2a(api, n, -7.f);
    c.all_to_all(in.p, a2a.p, static_cast<int64_t>(n), DType::F32, w);
    CHECK(a2a.get() == ramp<float>(n, 6));
    DeviceArray<int16_t> a2a16(api, n, -7);
    c.all_to_all_v(in16.p, {static_cast<int64_t>(n)}, a2a16.p, {static_cast<int64_t>(n)}, DType::I16, w);
    CHECK(a2a16.get() == ramp<int16_t>(n, 7));
    CHECK_THROWS_AS(c.all_to_all_v(in16.p, {2}, a2a16.p, {3}, DType::I16, w), InternalError);
  }
  {  // reduce-scatter: out <- my piece of the sum
    DeviceArray<float> in(api, n, -7.f), out(api, n, -7.f);
    in.put(ramp<float>(n, 8));
    c.reduce_scatter(in.p, out.p, static_cast<int64_t>(n), DType::F32, w);
    CHECK(out.get() == ramp<float>(n, 8));
    DeviceArray<uint16_t> inb(api, n, 0xdead), outb(api, n, 0xdead);
    inb.put(bf16_ramp(n, 9));
    c.reduce_scatter_v(inb.p, outb.p, {static_cast<int64_t>(n)}, DType::BF16, w);
    CHECK(outb.get() == bf16_ramp(n, 9));
  }
  {  // broadcast from member 0, a barrier, zero counts, and the caller's errors
    DeviceArray<int64_t> b(api, n, -7);
    b.put(ramp<int64_t>(n, 10));
    c.broadcast(b.p, static_cast<int64_t>(n), DType::I64, 0, w);
    CHECK(b.get() == ramp<int64_t>(n, 10));
    c.barrier(w);
    c.all_gather(b.p, b.p, 0, DType::I64, w);
    CHECK(b.get() == ramp<int64_t>(n, 10));
    CHECK_THROWS_AS(c.broadcast(b.p, 1, DType::I64, 1, w), InternalError);
    CHECK_THROWS_AS(c.barrier(Group{{1}}), InternalError);
  }
  {  // async all-reduces, waited out of order, one dropped without a wait
    std::vector<std::unique_ptr<DeviceArray<float>>> bufs;
    std::vector<std::unique_ptr<Pending>> pending;
    for (int k = 0; k < 3; ++k) {
      bufs.push_back(std::make_unique<DeviceArray<float>>(api, n, -7.f));
      bufs.back()->put(ramp<float>(n, 20 + k));
      pending.push_back(c.all_reduce_async(bufs.back()->p, static_cast<int64_t>(n), DType::F32, w));
    }
    pending[2]->wait();
    pending[0]->wait();
    pending[0]->wait();  // again: returns at once
    pending.pop_back();
    pending.clear();  // [1] waits in its destructor
    for (int k = 0; k < 3; ++k) CHECK(bufs[static_cast<size_t>(k)]->get() == ramp<float>(n, 20 + k));
  }
  {  // ordered after the compute stream: the input is written there while the stream is held
    DeviceArray<float> src(api, n, -7.f), in(api, n, -7.f), out(api, n, -7.f);
    src.put(ramp<float>(n, 30));
    in.put(ramp<float>(n, 31));
    Hold hold(api, compute.s);
    API_OK(api, api.copy_async(in.p, src.p, n * sizeof(float), compute.s));
    hold.release_after(200ms);
    const auto start = Clock::now();
    c.all_gather(in.p, out.p, static_cast<int64_t>(n), DType::F32, w);
    CHECK(since(start) >= 0.15);
    CHECK(out.get() == ramp<float>(n, 30));
  }
}

}  // namespace

TEST_CASE("gpu: nccl one-rank world: every collective on device buffers, through NCCL and as local copies") {
  const TensoroptNcclApi* api = gpu_nccl("nccl every collective");
  if (!api) return;
  int version = 0;
  API_OK(*api, api->version(&version));
  MESSAGE("NCCL " << version);
  for (bool through_nccl : {true, false}) {
    INFO((through_nccl ? "through a one-rank NCCL communicator" : "a group of one: local copies"));
    test::TempDir dir;
    Stream compute(*api);
    const auto start = Clock::now();
    auto c = make_nccl_communicator(one_rank(dir.path, compute.s, through_nccl), *api);
    CHECK(c->backend() == "nccl");
    every_collective(*c, *api, compute);
    c.reset();
    MESSAGE((through_nccl ? "through NCCL: " : "local copies: ") << since(start) << " s, communicator made and closed");
  }
}

TEST_CASE("gpu: nccl abort: a member that never comes takes the group down within the timeout, and every later call throws") {
  const TensoroptNcclApi* api = gpu_nccl("nccl abort, a member that never comes");
  if (!api) return;
  test::TempDir dir;
  Stream compute(*api);
  NcclOptions o = one_rank(dir.path, compute.s, false, 1s);
  o.size = 2;  // rank 1 never comes: NCCL's communicator of [0,1] never finishes its bootstrap
  auto c = make_nccl_communicator(o, *api);
  DeviceArray<float> buf(*api, 8, -7.f);
  auto start = Clock::now();
  try {
    c->all_reduce(buf.p, 8, DType::F32, c->world());
    FAIL("returned");
  } catch (const CommError& e) {
    const std::string msg = e.what();
    INFO(msg);
    CHECK(msg.find("all_reduce over group [0,1] failed on rank 0") != std::string::npos);
    CHECK(msg.find("not made within 1000 ms") != std::string::npos);
  }
  const double took = since(start);
  MESSAGE("the group went down after " << took << " s (timeout 1 s)");
  CHECK(took >= 1.0);
  CHECK(took < 1.0 + 3.0);
  start = Clock::now();
  CHECK_THROWS_WITH_AS(c->barrier(c->world()), doctest::Contains("unusable after an earlier error"), CommError);
  CHECK_THROWS_AS(c->all_gather(buf.p, buf.p, 0, DType::F32, Group{{0}}), CommError);
  CHECK_THROWS_AS((void)c->all_reduce_async(buf.p, 8, DType::F32, c->world()), CommError);
  CHECK(since(start) < 0.5);
  c.reset();  // closes what is left without hanging
}

TEST_CASE("gpu: nccl abort: a collective held past its deadline throws CommError, and every later call throws") {
  const TensoroptNcclApi* api = gpu_nccl("nccl abort, a collective past its deadline");
  if (!api) return;
  test::TempDir dir;
  Stream compute(*api);
  DeviceArray<float> in(*api, 8, -7.f), out(*api, 8, -7.f);
  auto c = make_nccl_communicator(one_rank(dir.path, compute.s, false, 500ms), *api);
  {
    // The compute stream never finishes (until the hold goes at scope exit), so the collective
    // queued after it never does either.
    Hold hold(*api, compute.s);
    const auto start = Clock::now();
    try {
      c->all_gather(in.p, out.p, 8, DType::F32, c->world());
      FAIL("returned");
    } catch (const CommError& e) {
      const std::string msg = e.what();
      INFO(msg);
      CHECK(msg.find("all_gather over group [0] failed on rank 0") != std::string::npos);
      CHECK(msg.find("not done within 500 ms") != std::string::npos);
    }
    const double took = since(start);
    CHECK(took >= 0.5);
    CHECK(took < 0.5 + 1.0);
    CHECK_THROWS_WITH_AS(c->all_gather(in.p, out.p, 8, DType::F32, c->world()), doctest::Contains("unusable after an earlier error"),
                         CommError);
  }
  c.reset();
}

}  // namespace tensoropt::comm
