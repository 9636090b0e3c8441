// Rendezvous: specs (file:DIR, redis://HOST:PORT) and the factory's option checks, a rendezvous
// that never completes, and processes meeting through a Redis server, two jobs told apart by
// prefix.
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "graph/error.h"
#include "tests/launcher/comm/known_answers.h"

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
      }, kChildLimit);
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
