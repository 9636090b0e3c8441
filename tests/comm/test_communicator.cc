// GlooCommunicator: every collective against its known answer on 1-4 forked processes and on the
// axes of 2x2 and 2x3 meshes (equal and uneven counts, several dtypes), groups along mesh axes,
// rendezvous specs, misuse, a peer killed with SIGKILL, a rendezvous that never completes, and the
// Redis store. The processes meet through a file store in a fresh temporary directory; a child
// reports "ok" or its exception's message through a pipe, and every child is reaped.
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <ostream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "graph/error.h"
#include "launcher/comm/gloo_communicator.h"
#include "planner/parallel/cluster.h"
#include "planner/parallel/mesh.h"

namespace tensoropt::comm {

// For doctest's failure messages.
std::ostream& operator<<(std::ostream& os, const Group& g) { return os << g.str(); }

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

struct ChildResult {
  std::string message;  // "ok", an exception's message, or how the process ended
  double seconds = 0;   // from the fork to the child's end, as the parent saw it
};

// A fresh directory, removed with everything in it at scope exit.
struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/tensoropt-comm.XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

// Runs body(i) in n forked processes and waits for all of them; a child still running after
// `limit` is killed (and reported as such). When kill_rank >= 0, that child gets SIGKILL after
// kill_after. Never returns with a child unreaped.
std::vector<ChildResult> run_children(int n, const std::function<void(int)>& body, std::chrono::milliseconds limit = 40s,
                                      int kill_rank = -1, std::chrono::milliseconds kill_after = 0ms) {
  std::vector<pid_t> pids;
  std::vector<int> pipes;
  const auto start = Clock::now();
  std::fflush(nullptr);
  for (int i = 0; i < n; ++i) {
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      close(fds[0]);
      std::string msg = "ok";
      try {
        body(i);
      } catch (const std::exception& e) {
        msg = e.what();
      }
      ssize_t w = write(fds[1], msg.data(), msg.size());
      (void)w;
      _exit(0);
    }
    close(fds[1]);
    pids.push_back(pid);
    pipes.push_back(fds[0]);
  }
  std::vector<ChildResult> results(static_cast<size_t>(n));
  std::vector<bool> done(static_cast<size_t>(n), false);
  int left = n;
  bool killed_one = false;
  while (left > 0) {
    const auto now = Clock::now();
    if (kill_rank >= 0 && !killed_one && now - start >= kill_after) {
      kill(pids[static_cast<size_t>(kill_rank)], SIGKILL);
      killed_one = true;
    }
    for (int i = 0; i < n; ++i) {
      const auto k = static_cast<size_t>(i);
      if (done[k]) continue;
      if (now - start > limit) kill(pids[k], SIGKILL);
      int status = 0;
      if (waitpid(pids[k], &status, WNOHANG) != pids[k]) continue;
      done[k] = true;
      --left;
      results[k].seconds = std::chrono::duration<double>(Clock::now() - start).count();
      std::string msg;
      char buf[4096];
      for (ssize_t r; (r = read(pipes[k], buf, sizeof buf)) > 0;) msg.append(buf, static_cast<size_t>(r));
      close(pipes[k]);
      if (WIFSIGNALED(status)) msg = "killed by signal " + std::to_string(WTERMSIG(status));
      else if (msg.empty()) msg = "exited without a message, status " + std::to_string(WEXITSTATUS(status));
      results[k].message = msg;
    }
    std::this_thread::sleep_for(5ms);
  }
  return results;
}

// Tests of results wait up to 10 s (6 processes under ASan on a loaded 2-core machine need more
// than 3 s at times); the fault tests pass their own short timeouts.
GlooOptions options(int rank, int size, const std::string& rendezvous, std::chrono::milliseconds timeout = 10s) {
  GlooOptions o;
  o.rank = rank;
  o.size = size;
  o.rendezvous = rendezvous;
  o.timeout = timeout;
  o.hostname = "127.0.0.1";
  return o;
}

void check_all_ok(const std::vector<ChildResult>& results) {
  for (size_t i = 0; i < results.size(); ++i) {
    INFO("child " << i);
    CHECK(results[i].message == "ok");
  }
}

// ---- known answers ----------------------------------------------------------------------------

// What world rank r contributes at element i: small integers, exact in every dtype and their sums.
template <typename T>
T val(int r, int64_t i) {
  return static_cast<T>(r * 100 + i % 50);
}

template <typename T>
void expect(const std::vector<T>& got, const std::vector<T>& want, const std::string& what) {
  if (got.size() != want.size())
    throw std::runtime_error(what + ": " + std::to_string(got.size()) + " elements, expected " + std::to_string(want.size()));
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i] != want[i])
      throw std::runtime_error(what + ": element " + std::to_string(i) + " is " + std::to_string(got[i]) + ", expected " +
                               std::to_string(want[i]));
}

template <typename T>
void check_all_reduce(Communicator& c, const Group& g, DType dt, const std::string& name) {
  const int64_t n = 37;
  std::vector<T> buf(n), want(n, T(0));
  for (int64_t i = 0; i < n; ++i) {
    buf[static_cast<size_t>(i)] = val<T>(c.rank(), i);
    for (int r : g.ranks) want[static_cast<size_t>(i)] += val<T>(r, i);
  }
  c.all_reduce(buf.data(), n, dt, g);
  expect(buf, want, "all_reduce " + name + " over " + g.str());
}

template <typename T>
void check_all_gather(Communicator& c, const Group& g, DType dt, const std::vector<int64_t>& counts, const std::string& name) {
  const int me = g.index_of(c.rank());
  std::vector<T> in(static_cast<size_t>(counts[static_cast<size_t>(me)])), want;
  for (size_t k = 0; k < in.size(); ++k) in[k] = val<T>(c.rank(), static_cast<int64_t>(k));
  for (size_t j = 0; j < counts.size(); ++j)
    for (int64_t k = 0; k < counts[j]; ++k) want.push_back(val<T>(g.ranks[j], k));
  std::vector<T> out(want.size(), T(0));
  c.all_gather_v(in.data(), out.data(), counts, dt, g);
  expect(out, want, "all_gather " + name + " over " + g.str());
}

template <typename T>
void check_reduce_scatter(Communicator& c, const Group& g, DType dt, const std::vector<int64_t>& counts, const std::string& name) {
  const auto me = static_cast<size_t>(g.index_of(c.rank()));
  int64_t total = 0, offset = 0;
  for (size_t j = 0; j < counts.size(); ++j) {
    if (j == me) offset = total;
    total += counts[j];
  }
  std::vector<T> in(static_cast<size_t>(total)), want(static_cast<size_t>(counts[me]), T(0));
  for (int64_t i = 0; i < total; ++i) in[static_cast<size_t>(i)] = val<T>(c.rank(), i);
  for (int64_t k = 0; k < counts[me]; ++k)
    for (int r : g.ranks) want[static_cast<size_t>(k)] += val<T>(r, offset + k);
  std::vector<T> out(want.size(), T(-1));
  c.reduce_scatter_v(in.data(), out.data(), counts, dt, g);
  expect(out, want, "reduce_scatter " + name + " over " + g.str());
}

// Group rank a sends cnt(a, b) elements to group rank b; element k is sender*1000 + b*10 + k.
template <typename T>
void check_all_to_all(Communicator& c, const Group& g, DType dt, const std::function<int64_t(int, int)>& cnt,
                      const std::string& name) {
  const int me = g.index_of(c.rank()), n = g.size();
  std::vector<int64_t> sc, rc;
  std::vector<T> in, want;
  for (int j = 0; j < n; ++j) {
    sc.push_back(cnt(me, j));
    rc.push_back(cnt(j, me));
    for (int64_t k = 0; k < cnt(me, j); ++k) in.push_back(static_cast<T>(c.rank() * 1000 + j * 10 + k));
    for (int64_t k = 0; k < cnt(j, me); ++k) want.push_back(static_cast<T>(g.ranks[static_cast<size_t>(j)] * 1000 + me * 10 + k));
  }
  std::vector<T> out(want.size(), T(-1));
  c.all_to_all_v(in.data(), sc, out.data(), rc, dt, g);
  expect(out, want, "all_to_all " + name + " over " + g.str());
}

template <typename T>
void check_broadcast(Communicator& c, const Group& g, DType dt, const std::string& name) {
  for (int root = 0; root < g.size(); ++root) {
    const int64_t n = 23;
    std::vector<T> buf(n), want(n);
    for (int64_t i = 0; i < n; ++i) {
      want[static_cast<size_t>(i)] = val<T>(g.ranks[static_cast<size_t>(root)], i);
      buf[static_cast<size_t>(i)] = g.index_of(c.rank()) == root ? val<T>(c.rank(), i) : T(0);
    }
    c.broadcast(buf.data(), n, dt, root, g);
    expect(buf, want, "broadcast " + name + " from group rank " + std::to_string(root) + " over " + g.str());
  }
}

// bfloat16 sums: small integers (exact in bfloat16, as are their sums up to 256), and on two
// members 256 + 3 = 259, halfway between 258 and 260, which rounds to the even 260 (truncation
// would give 258).
void check_bf16_sums(Communicator& c, const Group& g) {
  auto bf16 = [](float f) {
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    return static_cast<uint16_t>(bits >> 16);  // exact for these values
  };
  const int n = g.size();
  const int64_t count = 41;
  std::vector<uint16_t> buf(count), want(count);
  int members = 0;
  for (int r : g.ranks) members += r + 1;
  for (int64_t i = 0; i < count; ++i) {
    buf[static_cast<size_t>(i)] = bf16(static_cast<float>((c.rank() + 1) * (i % 5 + 1)));
    want[static_cast<size_t>(i)] = bf16(static_cast<float>(members * (i % 5 + 1)));
  }
  std::vector<uint16_t> in = buf;
  c.all_reduce(buf.data(), count, DType::BF16, g);
  expect(buf, want, "all_reduce bfloat16 over " + g.str());
  std::vector<int64_t> counts(static_cast<size_t>(n), 3);
  std::vector<uint16_t> rs_in(in.begin(), in.begin() + 3 * n), rs_out(3);
  c.reduce_scatter_v(rs_in.data(), rs_out.data(), counts, DType::BF16, g);
  const auto me = static_cast<size_t>(g.index_of(c.rank()));
  expect(rs_out, std::vector<uint16_t>(want.begin() + 3 * me, want.begin() + 3 * me + 3), "reduce_scatter bfloat16 over " + g.str());
  if (n == 2) {
    std::vector<uint16_t> x{bf16(me == 0 ? 256.0f : 3.0f)};
    c.all_reduce(x.data(), 1, DType::BF16, g);
    expect(x, std::vector<uint16_t>{bf16(260.0f)}, "all_reduce bfloat16 256 + 3 over " + g.str());
  }
}

// Every collective over `g`, whose members all call this; several dtypes, equal and uneven counts
// (with zeros), float16/bfloat16 moved as bytes, bfloat16 summed.
void check_collectives(Communicator& c, const Group& g) {
  const int n = g.size();
  check_all_reduce<float>(c, g, DType::F32, "float32");
  check_all_reduce<double>(c, g, DType::F64, "float64");
  check_all_reduce<int64_t>(c, g, DType::I64, "int64");
  check_all_reduce<int32_t>(c, g, DType::I32, "int32");
  std::vector<int64_t> equal(static_cast<size_t>(n), 5), uneven;
  for (int j = 0; j < n; ++j) uneven.push_back((j * 2) % 3);  // 0, 2, 1, 0, ...
  check_all_gather<float>(c, g, DType::F32, equal, "float32 equal");
  check_all_gather<int64_t>(c, g, DType::I64, uneven, "int64 uneven");
  check_all_gather<uint16_t>(c, g, DType::BF16, uneven, "bfloat16 uneven");
  check_all_gather<uint16_t>(c, g, DType::F16, equal, "float16 equal");
  std::vector<int64_t> uneven_rs;
  for (int j = 0; j < n; ++j) uneven_rs.push_back((j + 2) % 3 + (j == 0 ? 3 : 0));  // 5, 0, 1, 2, ...
  check_reduce_scatter<double>(c, g, DType::F64, equal, "float64 equal");
  check_reduce_scatter<float>(c, g, DType::F32, uneven_rs, "float32 uneven");
  check_reduce_scatter<int32_t>(c, g, DType::I32, uneven_rs, "int32 uneven");
  check_reduce_scatter<int64_t>(c, g, DType::I64, equal, "int64 equal");
  // Equal counts at the halving-doubling limit (256 KiB of float32 input on a power-of-two group)
  // and just over it, twice each: the second call runs the cached algorithm.
  for (int64_t bytes : {int64_t{1} << 18, (int64_t{1} << 18) + 4 * n})
    for (int again = 0; again < 2; ++again)
      check_reduce_scatter<float>(c, g, DType::F32, std::vector<int64_t>(static_cast<size_t>(n), bytes / 4 / n),
                                  "float32 equal, " + std::to_string(bytes) + " bytes");
  // Over 1 MiB of input, with an empty piece.
  std::vector<int64_t> large;
  for (int j = 0; j < n; ++j) large.push_back(j == 1 ? 0 : 300000 + j);
  check_reduce_scatter<float>(c, g, DType::F32, large, "float32 uneven, over 1 MiB");
  check_all_to_all<int32_t>(c, g, DType::I32, [](int, int) { return int64_t{3}; }, "int32 equal");
  check_all_to_all<double>(c, g, DType::F64, [](int a, int b) { return int64_t{(a + 2 * b) % 3}; }, "float64 uneven");
  check_broadcast<float>(c, g, DType::F32, "float32");
  check_broadcast<uint16_t>(c, g, DType::BF16, "bfloat16");
  check_bf16_sums(c, g);
  c.barrier(g);
  // The equal-count helpers are the _v calls with equal counts.
  std::vector<float> x(static_cast<size_t>(2 * n), static_cast<float>(c.rank())), y(static_cast<size_t>(2 * n), -1.0f);
  c.all_to_all(x.data(), y.data(), 2, DType::F32, g);
  for (int j = 0; j < n; ++j)
    expect(std::vector<float>(y.begin() + 2 * j, y.begin() + 2 * j + 2), std::vector<float>(2, static_cast<float>(g.ranks[static_cast<size_t>(j)])),
           "all_to_all equal over " + g.str());
}

void check_world(int n) {
  TempDir dir;
  auto results = run_children(n, [&](int rank) {
    auto c = make_gloo_communicator(options(rank, n, "file:" + dir.path));
    if (c->rank() != rank || c->size() != n || c->backend() != "gloo") throw std::runtime_error("identity");
    check_collectives(*c, c->world());
  });
  check_all_ok(results);
}

// ---- tests ------------------------------------------------------------------------------------

TEST_CASE("comm: mesh_axis_group gives the groups along each axis, as DeviceMesh::group does") {
  CHECK(mesh_axis_group({2, 3}, 4, 1) == Group{{3, 4, 5}});
  CHECK(mesh_axis_group({2, 3}, 4, 0) == Group{{1, 4}});
  CHECK(mesh_axis_group({2, 2}, 0, 0) == Group{{0, 2}});
  CHECK(mesh_axis_group({2, 2}, 3, 1) == Group{{2, 3}});
  CHECK(mesh_axis_group({2, 3, 2}, 7, 1) == Group{{7, 9, 11}});
  CHECK(mesh_axis_group({4}, 2, 0) == world_group(4));
  CHECK(mesh_axis_group({2, 3}, 4, 1).str() == "[3,4,5]");
  const planner::Cluster cluster = planner::load_cluster("h100-sxm");
  for (const std::vector<int>& shape : std::vector<std::vector<int>>{{1}, {6}, {2, 2}, {2, 3}, {3, 2}, {2, 1, 4}, {2, 3, 2}}) {
    const auto mesh = planner::DeviceMesh::with_shape(cluster, shape);
    for (int r = 0; r < mesh.size(); ++r)
      for (int a = 0; a < mesh.ndim(); ++a) {
        INFO("shape " << shape.size() << " axes, rank " << r << ", axis " << a);
        CHECK(mesh_axis_group(shape, r, a).ranks == mesh.group(r, a));
      }
  }
  CHECK_THROWS_AS(mesh_axis_group({2, 3}, 6, 0), InternalError);
  CHECK_THROWS_AS(mesh_axis_group({2, 3}, 0, 2), InternalError);
  CHECK_THROWS_AS(mesh_axis_group({2, 0}, 0, 0), InternalError);
}

TEST_CASE("comm: parse_rendezvous reads file:DIR and redis://HOST:PORT and refuses anything else with one line") {
  auto f = parse_rendezvous("file:/tmp/x");
  CHECK(f.kind == RendezvousSpec::Kind::File);
  CHECK(f.dir == "/tmp/x");
  auto r = parse_rendezvous("redis://node7:6379");
  CHECK(r.kind == RendezvousSpec::Kind::Redis);
  CHECK(r.host == "node7");
  CHECK(r.port == 6379);
  for (const char* bad : {"file:", "redis://host", "redis://:6379", "redis://host:", "redis://host:0", "redis://host:65536",
                          "redis://host:63x9", "tcp://host:1", "", "/tmp/dir"}) {
    INFO(bad);
    try {
      parse_rendezvous(bad);
      FAIL("accepted");
    } catch (const InputError& e) {
      const std::string msg = e.what();
      CHECK(msg.find('\n') == std::string::npos);
      CHECK(msg.find(std::string("'") + bad + "'") != std::string::npos);
    }
  }
  CHECK_THROWS_AS(make_gloo_communicator(options(0, 2, "redis://host")), InputError);
  CHECK_THROWS_AS(make_gloo_communicator(options(2, 2, "file:/tmp")), InputError);
  CHECK_THROWS_AS(make_gloo_communicator(options(0, 1, "file:/tmp", 0ms)), InputError);
}

TEST_CASE("comm: every collective matches its known answer on 2 processes") { check_world(2); }
TEST_CASE("comm: every collective matches its known answer on 3 processes") { check_world(3); }
TEST_CASE("comm: every collective matches its known answer on 4 processes") { check_world(4); }

TEST_CASE("comm: collectives along each axis of a 2x2 and a 2x3 mesh, axes interleaved") {
  for (const std::vector<int>& shape : std::vector<std::vector<int>>{{2, 2}, {2, 3}}) {
    TempDir dir;
    const int n = shape[0] * shape[1];
    INFO("mesh " << shape[0] << "x" << shape[1]);
    auto results = run_children(n, [&](int rank) {
      auto c = make_gloo_communicator(options(rank, n, "file:" + dir.path));
      const Group g0 = mesh_axis_group(shape, rank, 0), g1 = mesh_axis_group(shape, rank, 1);
      check_collectives(*c, g1);
      check_collectives(*c, g0);
      check_all_reduce<float>(*c, g1, DType::F32, "float32 again");  // the cached contexts
      check_all_reduce<float>(*c, c->world(), DType::F32, "float32 world");
      check_reduce_scatter<float>(*c, g0, DType::F32, std::vector<int64_t>(2, 1000), "float32 large");
      c->barrier(c->world());  // the last collective before the communicator goes (communicator.h)
    });
    check_all_ok(results);
  }
}

TEST_CASE("comm: async all-reduces run beside blocking collectives, in order, and equal the known sums") {
  const std::vector<int> shape{2, 2};
  const int n = 4;
  TempDir dir;
  auto results = run_children(n, [&](int rank) {
    auto c = make_gloo_communicator(options(rank, n, "file:" + dir.path));
    const Group g0 = mesh_axis_group(shape, rank, 0), g1 = mesh_axis_group(shape, rank, 1);
    // Bucket-like buffers of several sizes, some summed over both axes in turn (the second sum
    // must see the first's result: the lane keeps their order).
    const std::vector<int64_t> sizes{1, 1000, 1 << 18, 37, 1 << 16};
    std::vector<std::vector<float>> bufs;
    std::vector<std::unique_ptr<Pending>> pending;
    for (size_t b = 0; b < sizes.size(); ++b) {
      bufs.emplace_back(static_cast<size_t>(sizes[b]));
      for (size_t i = 0; i < bufs[b].size(); ++i) bufs[b][i] = static_cast<float>((rank + 1) * ((i % 7) + b + 1));
      pending.push_back(c->all_reduce_async(bufs[b].data(), sizes[b], DType::F32, b % 2 ? g0 : c->world()));
      if (b % 2) pending.push_back(c->all_reduce_async(bufs[b].data(), sizes[b], DType::F32, g1));
      // Blocking collectives go on meanwhile, on the same groups.
      check_all_reduce<float>(*c, g1, DType::F32, "blocking float32 beside async");
      check_all_reduce<double>(*c, c->world(), DType::F64, "blocking float64 beside async");
    }
    // A Pending dropped without wait still completes before its buffer could go.
    std::vector<double> dropped(100, 1.0);
    c->all_reduce_async(dropped.data(), 100, DType::F64, c->world()).reset();
    for (double x : dropped)
      if (x != n) throw std::runtime_error("a dropped Pending did not complete its sum");
    for (auto& p : pending) p->wait();
    for (auto& p : pending) p->wait();  // a second wait returns at once
    // Every rank's (rank + 1) summed over the world (both axes, or the world at once): 1+2+3+4.
    for (size_t b = 0; b < sizes.size(); ++b)
      for (size_t i = 0; i < bufs[b].size(); ++i)
        if (bufs[b][i] != static_cast<float>(10 * ((i % 7) + b + 1)))
          throw std::runtime_error("bucket " + std::to_string(b) + " element " + std::to_string(i) + " is " +
                                   std::to_string(bufs[b][i]));
  });
  check_all_ok(results);
}

TEST_CASE("comm: a peer killed during async all-reduces makes wait throw CommError, and the communicator unusable") {
  TempDir dir;
  const int n = 3;
  auto results = run_children(
      n,
      [&](int rank) {
        auto c = make_gloo_communicator(options(rank, n, "file:" + dir.path, 3s));
        std::vector<float> a(1 << 16, 1.0f), b(1 << 16, 1.0f);
        try {
          for (;;) {
            auto p = c->all_reduce_async(a.data(), static_cast<int64_t>(a.size()), DType::F32, c->world());
            auto q = c->all_reduce_async(b.data(), static_cast<int64_t>(b.size()), DType::F32, c->world());
            p->wait();
            q->wait();
          }
        } catch (const CommError& e) {
          const std::string first = e.what();
          try {
            c->barrier(c->world());
          } catch (const CommError& again) {
            if (std::string(again.what()).find("unusable") == std::string::npos)
              throw std::runtime_error(std::string("second error: ") + again.what());
            throw std::runtime_error(first);
          }
          throw std::runtime_error("a call after a CommError succeeded");
        }
      },
      /*limit=*/20s, /*kill_rank=*/2, /*kill_after=*/1500ms);
  CHECK(results[2].message == "killed by signal 9");
  for (int r = 0; r < 2; ++r) {
    const std::string& msg = results[static_cast<size_t>(r)].message;
    INFO(msg);
    CHECK(msg.find("all_reduce over group [0,1,2] failed on rank " + std::to_string(r)) != std::string::npos);
    CHECK(results[static_cast<size_t>(r)].seconds < 1.5 + 3.0 + 2.0);
  }
}

TEST_CASE("comm: a world of one copies locally, and misuse is an InternalError") {
  TempDir dir;
  auto results = run_children(1, [&](int) {
    auto c = make_gloo_communicator(options(0, 1, "file:" + dir.path));
    check_collectives(*c, c->world());
    float x = 1;
    const auto internal = [&](const std::function<void()>& f, const char* what) {
      try {
        f();
      } catch (const InternalError&) {
        return;
      }
      throw std::runtime_error(std::string("no InternalError for ") + what);
    };
    internal([&] { c->all_reduce(&x, 1, DType::F32, Group{{1}}); }, "a rank outside the world");
    internal([&] { c->all_reduce(&x, 1, DType::F32, Group{{0, 0}}); }, "a repeated rank");
    internal([&] { c->all_reduce(&x, 1, DType::F16, c->world()); }, "a sum of float16");
    internal([&] { c->all_reduce(&x, -1, DType::F32, c->world()); }, "a negative count");
    internal([&] { c->all_gather_v(&x, &x, {1, 1}, DType::F32, c->world()); }, "two counts for a group of one");
    internal([&] { c->broadcast(&x, 1, DType::F32, 1, c->world()); }, "a root outside the group");
    internal([&] { c->all_gather(&x, &x, 1, DType::String, c->world()); }, "a dtype without a size");
  });
  check_all_ok(results);
}

TEST_CASE("comm: a peer killed with SIGKILL mid-collective makes the others throw CommError naming the collective, group and rank") {
  TempDir dir;
  const int n = 3;
  const auto timeout = 3s;
  auto results = run_children(
      n,
      [&](int rank) {
        auto c = make_gloo_communicator(options(rank, n, "file:" + dir.path, timeout));
        std::vector<float> buf(1 << 16, 1.0f);
        try {
          for (;;) c->all_reduce(buf.data(), static_cast<int64_t>(buf.size()), DType::F32, c->world());
        } catch (const CommError& e) {
          const std::string first = e.what();
          // Unusable afterwards: the next call fails at once, saying so.
          const auto t0 = Clock::now();
          try {
            c->barrier(c->world());
          } catch (const CommError& again) {
            if (std::string(again.what()).find("unusable") == std::string::npos || Clock::now() - t0 > 100ms)
              throw std::runtime_error(std::string("second error: ") + again.what());
            throw std::runtime_error(first);
          }
          throw std::runtime_error("a call after a CommError succeeded");
        }
      },
      /*limit=*/20s, /*kill_rank=*/2, /*kill_after=*/1500ms);
  CHECK(results[2].message == "killed by signal 9");
  MESSAGE("rank 0 said: " << results[0].message);
  for (int r = 0; r < 2; ++r) {
    const std::string& msg = results[static_cast<size_t>(r)].message;
    INFO(msg);
    CHECK(msg.find("all_reduce over group [0,1,2] failed on rank " + std::to_string(r)) != std::string::npos);
    // Within the timeout of the kill at 1.5 s (plus slack for a loaded machine).
    CHECK(results[static_cast<size_t>(r)].seconds < 1.5 + 3.0 + 2.0);
  }
}

TEST_CASE("comm: a rendezvous that never completes throws CommError within the timeout") {
  TempDir dir;
  // Rank 0 alone waits for its peers' addresses; rank 1 alone (of 3) also waits for rank 0's
  // hostname, a wait Gloo makes without a timeout of its own.
  for (int rank : {0, 1}) {
    INFO("rank " << rank << " alone");
    auto results = run_children(1, [&](int) {
      (void)make_gloo_communicator(options(rank, 3, "file:" + dir.path + "/" + std::to_string(rank), 1s));
    });
    const std::string& msg = results[0].message;
    INFO(msg);
    CHECK(msg.find("rendezvous over group [0,1,2] failed on rank " + std::to_string(rank)) != std::string::npos);
    CHECK(results[0].seconds < 1.0 + 1.0 + 1.5);  // Gloo polls the store with 1 s granularity
  }
}

// A free loopback port, as the kernel hands one out (a race with other processes is possible but
// harmless here: redis-server then fails to start and the test says so).
int free_port() {
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  REQUIRE(bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  socklen_t len = sizeof a;
  REQUIRE(getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  close(s);
  return ntohs(a.sin_port);
}

bool can_connect(int port) {
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  close(s);
  return ok;
}

std::string find_redis_server() {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  for (size_t b = 0; b <= dirs.size();) {
    size_t e = dirs.find(':', b);
    if (e == std::string::npos) e = dirs.size();
    const std::string p = dirs.substr(b, e - b) + "/redis-server";
    if (access(p.c_str(), X_OK) == 0) return p;
    b = e + 1;
  }
  for (const char* p : {"/usr/bin/redis-server", "/usr/sbin/redis-server"})
    if (access(p, X_OK) == 0) return p;
  return "";
}

TEST_CASE("comm: the processes meet through a Redis server (redis://127.0.0.1:PORT), two jobs told apart by prefix") {
  const std::string server = find_redis_server();
  if (server.empty()) {
    MESSAGE("skipped: redis-server is not installed (Debian's redis-server package; scripts/setup installs it)");
    return;
  }
  TempDir dir;
  const int port = free_port();
  std::fflush(nullptr);
  const pid_t redis = fork();
  REQUIRE(redis >= 0);
  if (redis == 0) {
    const std::string p = std::to_string(port);
    execl(server.c_str(), "redis-server", "--port", p.c_str(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
          "--dir", dir.path.c_str(), "--logfile", (dir.path + "/redis.log").c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  bool up = false;
  for (int i = 0; i < 500 && !up; ++i) {
    up = can_connect(port);
    if (!up) std::this_thread::sleep_for(10ms);
  }
  if (up) {
    const std::string spec = "redis://127.0.0.1:" + std::to_string(port);
    for (const char* job : {"job1", "job2"}) {
      auto results = run_children(4, [&](int rank) {
        GlooOptions o = options(rank, 4, spec);
        o.prefix = job;
        auto c = make_gloo_communicator(o);
        check_all_reduce<float>(*c, c->world(), DType::F32, "float32");
        check_all_gather<int64_t>(*c, mesh_axis_group({2, 2}, rank, 1), DType::I64, {3, 1}, "int64 uneven");
        check_reduce_scatter<double>(*c, mesh_axis_group({2, 2}, rank, 0), DType::F64, {2, 5}, "float64 uneven");
      });
      INFO("job " << job);
      check_all_ok(results);
    }
  }
  kill(redis, SIGTERM);
  int status = 0;
  waitpid(redis, &status, 0);
  REQUIRE_MESSAGE(up, "redis-server did not accept connections on port " << port);
}

}  // namespace
}  // namespace tensoropt::comm
