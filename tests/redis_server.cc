#include "tests/redis_server.h"

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

namespace tensoropt::test {
namespace {

// A free loopback port, as the kernel hands one out (a race with other processes is possible but
// harmless here: redis-server then fails to start and `up` says so).
int free_port() {
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  int port = 0;
  socklen_t len = sizeof a;
  if (bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) == 0) port = ntohs(a.sin_port);
  close(s);
  return port;
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

}  // namespace

RedisServer::RedisServer() : server(find_redis_server()) {
  if (server.empty()) return;
  port = free_port();
  std::fflush(nullptr);
  pid_ = fork();
  if (pid_ < 0) return;
  if (pid_ == 0) {
    const std::string p = std::to_string(port);
    execl(server.c_str(), "redis-server", "--port", p.c_str(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir",
          dir_.path.c_str(), "--logfile", (dir_.path + "/redis.log").c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  for (int i = 0; i < 500 && !up; ++i) {
    up = can_connect(port);
    if (!up) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

RedisServer::~RedisServer() {
  if (pid_ <= 0) return;
  kill(pid_, SIGTERM);
  int status = 0;
  waitpid(pid_, &status, 0);
}

}  // namespace tensoropt::test
