// Rendezvous: specs (file:DIR, redis://HOST:PORT) and the factory's option checks, a rendezvous
// that never completes, and processes meeting through a Redis server, two jobs told apart by
// prefix.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "graph/error.h"
#include "tests/launcher/comm/known_answers.h"
#include "tests/redis_server.h"

namespace tensoropt::comm {
namespace {

using namespace std::chrono_literals;
using namespace test_known;

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

TEST_CASE("comm: a rendezvous that never completes throws CommError within the timeout") {
  TempDir dir;
  // Rank 0 alone waits for its peers' addresses; rank 1 alone (of 3) also waits for rank 0's
  // hostname, a wait Gloo makes without a timeout of its own.
  for (int rank : {0, 1}) {
    INFO("rank " << rank << " alone");
    auto results = run_children(1, [&](int) {
      (void)make_gloo_communicator(options(rank, 3, "file:" + dir.path + "/" + std::to_string(rank), 1s));
    }, kChildLimit);
    const std::string& msg = results[0].message;
    INFO(msg);
    CHECK(msg.find("rendezvous over group [0,1,2] failed on rank " + std::to_string(rank)) != std::string::npos);
    CHECK(results[0].seconds < 1.0 + 1.0 + 1.5);  // Gloo polls the store with 1 s granularity
  }
}

TEST_CASE("comm: the processes meet through a Redis server (redis://127.0.0.1:PORT), two jobs told apart by prefix") {
  const test::RedisServer redis;
  if (redis.server.empty()) {
    MESSAGE("skipped: redis-server is not installed (Debian's redis-server package; scripts/setup installs it)");
    return;
  }
  REQUIRE_MESSAGE(redis.up, "redis-server did not accept connections on port " << redis.port);
  const std::string spec = redis.spec();
  for (const char* job : {"job1", "job2"}) {
    auto results = run_children(4, [&](int rank) {
      GlooOptions o = options(rank, 4, spec);
      o.prefix = job;
      auto c = make_gloo_communicator(o);
      check_all_reduce<float>(*c, c->world(), DType::F32, "float32");
      check_all_gather<int64_t>(*c, mesh_axis_group({2, 2}, rank, 1), DType::I64, {3, 1}, "int64 uneven");
      check_reduce_scatter<double>(*c, mesh_axis_group({2, 2}, rank, 0), DType::F64, {2, 5}, "float64 uneven");
    }, kChildLimit);
    INFO("job " << job);
    check_all_ok(results);
  }
}

}  // namespace
}  // namespace tensoropt::comm
