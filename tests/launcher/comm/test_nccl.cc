// The NCCL communicator without a GPU (launcher/comm/nccl/): its options, the NCCL id's exchange
// through a real file store between processes, the group keys, the point-to-point plans of the
// uneven collectives (every pair's calls match), and what the factory and the module's table say
// on a machine without a GPU. Its collectives on a GPU: test_nccl_gpu.cc.
#include <doctest/doctest.h>

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "graph/error.h"
#include "launcher/comm/nccl/id_exchange.h"
#include "launcher/comm/nccl/nccl_communicator.h"
#include "launcher/comm/nccl/point_to_point.h"
#include "tests/children.h"
#ifdef TENSOROPT_HAVE_CUDA
#include "launcher/runtime/cuda/loader.h"
#include "launcher/runtime/cuda/nccl_loader.h"
#endif

namespace tensoropt::comm {
namespace {

using namespace std::chrono_literals;
using nccl_impl::IdExchange;
using nccl_impl::NcclId;
using test::ChildResult;
using test::run_children;
using test::TempDir;

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// A recognisable id for `seed`: what member 0 makes and every other member must read back.
NcclId pattern_id(int seed) {
  NcclId id;
  for (size_t i = 0; i < id.size(); ++i) id[i] = static_cast<unsigned char>(seed * 31 + static_cast<int>(i) * 7);
  return id;
}

#ifdef TENSOROPT_HAVE_CUDA
// The module the build wrote beside the tensoropt binary (or TENSOROPT_CUDA_MODULE's).
const TensoroptCudaModule* module(std::string* why) {
  if (!std::getenv("TENSOROPT_CUDA_MODULE")) {
    const auto beside = std::filesystem::path(TENSOROPT_BINARY).parent_path() / "libtensoropt_cuda.so";
    setenv("TENSOROPT_CUDA_MODULE", beside.c_str(), 1);
  }
  return runtime::cuda::load_module(why);
}
#endif

void check_one_line_input_error(const NcclOptions& o, const TensoroptNcclApi& api, const std::string& part) {
  INFO("expects: " << part);
  try {
    (void)make_nccl_communicator(o, api);
    FAIL("accepted");
  } catch (const InputError& e) {
    const std::string msg = e.what();
    INFO(msg);
    CHECK(msg.find('\n') == std::string::npos);
    CHECK(has(msg, part));
  }
}

}  // namespace

TEST_CASE("comm: nccl options are refused with one line naming the option, before any NCCL call") {
  // A table with no functions: the checks come before any call (a call would crash the test).
  const TensoroptNcclApi none{};
  NcclOptions o;
  o.rendezvous = "file:/tmp/never-used";
  auto with = [&](auto edit) {
    NcclOptions x = o;
    edit(x);
    return x;
  };
  check_one_line_input_error(with([](NcclOptions& x) { x.size = 0; }), none, "nccl communicator: world size 0 is below 1");
  check_one_line_input_error(with([](NcclOptions& x) {
    x.size = 2;
    x.rank = 2;
  }), none, "rank 2 outside 0..1");
  check_one_line_input_error(with([](NcclOptions& x) { x.rank = -1; }), none, "rank -1 outside 0..0");
  check_one_line_input_error(with([](NcclOptions& x) { x.timeout = 0ms; }), none, "the timeout must be positive");
  check_one_line_input_error(with([](NcclOptions& x) { x.device = -1; }), none, "device -1 is not a CUDA device ordinal");
  check_one_line_input_error(with([](NcclOptions& x) { x.rendezvous = "tcp://host:1"; }), none, "--rendezvous 'tcp://host:1'");
  check_one_line_input_error(with([](NcclOptions& x) { x.rendezvous = "redis://host"; }), none, "redis://HOST:PORT");
}

TEST_CASE("comm: nccl id keys name the lane and the group's ranks, as the Gloo communicator's group keys do") {
  CHECK(nccl_impl::nccl_id_key(Group{{0, 2}}, "") == "nccl-g[0,2]");
  CHECK(nccl_impl::nccl_id_key(Group{{0, 2}}, "a") == "nccl-a-g[0,2]");
  CHECK(nccl_impl::nccl_id_key(Group{{2, 0}}, "") != nccl_impl::nccl_id_key(Group{{0, 2}}, ""));  // order numbers the members
  const Group big = world_group(64);
  const std::string key = nccl_impl::nccl_id_key(big, "");
  CHECK(key.rfind("nccl-g64-", 0) == 0);  // long lists are hashed
  CHECK(key.size() == std::string("nccl-g64-").size() + 16);
  CHECK(key != nccl_impl::nccl_id_key(world_group(63), ""));
}

TEST_CASE("comm: nccl ids travel through a real file store: member 0 sets, the others wait and read, groups and jobs apart") {
  TempDir dir;
  const std::string spec = "file:" + dir.path + "/store";
  // Three processes; groups {0,1,2}, {1,2} (member 0 is world rank 1) and, under a second job's
  // prefix, {0,1,2} again with another id. Member 0 of each group sets its id late, so the others
  // really wait for it.
  auto results = run_children(3, [&](int rank) {
    auto member = [&](const std::string& prefix, const Group& g, int seed) {
      IdExchange ex(spec, prefix, 10s);
      const int index = g.index_of(rank);
      if (index < 0) return;
      if (index == 0) std::this_thread::sleep_for(300ms);
      const NcclId got = ex.exchange(nccl_impl::nccl_id_key(g, ""), index, [&] {
        if (index != 0) throw std::runtime_error("member " + std::to_string(index) + " was asked to make the id");
        return pattern_id(seed);
      });
      if (got != pattern_id(seed))
        throw std::runtime_error("rank " + std::to_string(rank) + " read another id for group " + g.str() + " of job '" + prefix + "'");
    };
    member("", world_group(3), 1);
    member("", Group{{1, 2}}, 2);
    member("job2", world_group(3), 3);
  }, 30s);
  for (size_t r = 0; r < results.size(); ++r) {
    INFO("rank " << r);
    CHECK(results[r].message == "ok");
  }
}

TEST_CASE("comm: an nccl id that never comes fails the wait after the timeout, naming the key") {
  TempDir dir;
  IdExchange ex("file:" + dir.path, "", 300ms);
  const auto start = std::chrono::steady_clock::now();
  try {
    (void)ex.exchange(nccl_impl::nccl_id_key(Group{{0, 1}}, "a"), 1, [] { return pattern_id(0); });
    FAIL("returned");
  } catch (const std::runtime_error& e) {
    INFO(e.what());
    CHECK(has(e.what(), "nccl-a-g[0,1]"));
    CHECK(has(e.what(), "300 ms"));
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(seconds >= 0.3);
  CHECK(seconds < 0.3 + 1.5);  // Gloo's FileStore polls; at most about a second late
  // A member 0 whose id cannot be set (the key is taken) says so.
  IdExchange first("file:" + dir.path, "", 1s);
  (void)first.exchange("k", 0, [] { return pattern_id(1); });
  CHECK_THROWS_WITH_AS(first.exchange("k", 0, [] { return pattern_id(1); }), doctest::Contains("key 'k'"), std::runtime_error);
}

TEST_CASE("comm: nccl point-to-point plans: every member's send to j matches j's receive from it, zero pieces left out") {
  std::mt19937 rng(23);
  for (int trial = 0; trial < 200; ++trial) {
    const int n = 1 + trial % 5;
    const int64_t es = trial % 3 == 0 ? 2 : 4;
    std::uniform_int_distribution<int64_t> count(0, 4);
    std::vector<int64_t> counts(static_cast<size_t>(n));
    for (auto& c : counts) c = count(rng);
    // a[i][j]: what member i sends member j in the all-to-all.
    std::vector<std::vector<int64_t>> a(static_cast<size_t>(n), std::vector<int64_t>(static_cast<size_t>(n)));
    for (auto& row : a)
      for (auto& c : row) c = count(rng);
    std::vector<nccl_impl::PointToPoint> gather, all_to_all;
    for (int i = 0; i < n; ++i) {
      std::vector<int64_t> recv(static_cast<size_t>(n));
      for (int j = 0; j < n; ++j) recv[static_cast<size_t>(j)] = a[static_cast<size_t>(j)][static_cast<size_t>(i)];
      gather.push_back(nccl_impl::gather_plan(counts, i, es));
      all_to_all.push_back(nccl_impl::all_to_all_plan(a[static_cast<size_t>(i)], recv, es));
    }
    for (const auto* plans : {&gather, &all_to_all}) {
      for (int i = 0; i < n; ++i) {
        const auto& mine = (*plans)[static_cast<size_t>(i)];
        int64_t end = 0;  // receives fill the output in group order, each byte once
        for (const auto& t : mine.recvs) {
          CHECK(t.bytes > 0);
          CHECK(t.offset == end);
          end = t.offset + t.bytes;
          const auto& theirs = (*plans)[static_cast<size_t>(t.peer)].sends;
          int matching = 0;
          for (const auto& s : theirs) matching += s.peer == i && s.bytes == t.bytes;
          CHECK(matching == 1);
        }
        for (const auto& s : mine.sends) {
          CHECK(s.bytes > 0);
          int matching = 0;
          for (const auto& t : (*plans)[static_cast<size_t>(s.peer)].recvs) matching += t.peer == i && t.bytes == s.bytes;
          CHECK(matching == 1);
        }
      }
    }
    // all_gather_v: every member receives the whole concatenation.
    int64_t total = 0;
    for (int64_t c : counts) total += c;
    for (const auto& p : gather) {
      int64_t got = 0;
      for (const auto& t : p.recvs) got += t.bytes;
      CHECK(got == total * es);
    }
  }
  CHECK(nccl_impl::piece_offsets({2, 0, 3}) == std::vector<int64_t>{0, 2, 2});
  CHECK(nccl_impl::equal_counts({3, 3, 3}));
  CHECK(!nccl_impl::equal_counts({3, 2, 3}));
}

#ifdef TENSOROPT_HAVE_CUDA
TEST_CASE("comm: the nccl factory without the CUDA module, and without a GPU, says so in one line") {
  const std::string why = "the CUDA module /nowhere/libtensoropt_cuda.so is missing (the build writes it next to the tensoropt binary)";
  CHECK_THROWS_WITH_AS(runtime::cuda::nccl_api(nullptr, why), ("--device cuda (the NCCL communicator): " + why).c_str(), InputError);

  std::string load_why;
  const TensoroptCudaModule* m = module(&load_why);
  REQUIRE_MESSAGE(m != nullptr, load_why);  // the build wrote it
  REQUIRE(static_cast<bool>(m->nccl));
  const TensoroptNcclApi& api = *m->nccl();
  int version = 0;
  REQUIRE(api.version(&version) == TO_NCCL_OK);
  CHECK(version >= 21400);  // non-blocking communicators (ncclConfig_t.blocking) came with NCCL 2.14
  std::string gpu_why;
  if (runtime::cuda::gpu_count(*m, &gpu_why) > 0) {
    MESSAGE("a GPU is visible: the no-GPU answers are not checked here");
    CHECK(&runtime::cuda::nccl_api() == &api);
    return;
  }
  try {
    (void)runtime::cuda::nccl_api();
    FAIL("returned a table without a GPU");
  } catch (const InputError& e) {
    const std::string msg = e.what();
    INFO(msg);
    CHECK(msg.find('\n') == std::string::npos);
    CHECK(has(msg, "no GPU visible"));
  }
  // The table itself answers without a GPU: no device (or no driver: a failure with its reason),
  // and a failed call says which and why.
  int gpus = -1;
  char text[512] = "";
  if (api.device_count(&gpus) != TO_NCCL_OK) {
    CHECK(api.error(text, sizeof text) > 0);
    CHECK(has(text, "cudaGetDeviceCount"));
    MESSAGE("cudaGetDeviceCount here: " << text);
  }
  CHECK(gpus == 0);
  void* stream = nullptr;
  CHECK(api.stream_create(0, &stream) == TO_NCCL_FAILED);
  CHECK(api.error(text, sizeof text) > 0);
  CHECK(has(text, "cuda"));
  // The communicator's factory: device 0 is not a visible GPU.
  TempDir dir;
  NcclOptions o;
  o.rendezvous = "file:" + dir.path;
  check_one_line_input_error(o, api, "nccl communicator: device 0 is not a visible GPU (0 visible");
  CHECK_THROWS_AS(runtime::cuda::make_cuda_communicator(o), InputError);
}
#endif

}  // namespace tensoropt::comm
