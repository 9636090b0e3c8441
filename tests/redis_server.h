// A private redis-server for the tests that meet through Redis (Debian's redis-server package,
// which scripts/setup installs): started on a free loopback port, with no persistence, its files
// in a directory of its own, and stopped at scope exit.
// Not thread-safe.
#pragma once

#include <sys/types.h>

#include <string>

#include "tests/children.h"

namespace tensoropt::test {

struct RedisServer {
  std::string server;  // the redis-server binary; empty when none is installed (the test skips)
  int port = 0;
  bool up = false;     // it accepted a connection within 5 s
  RedisServer();
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;
  std::string spec() const { return "redis://127.0.0.1:" + std::to_string(port); }

 private:
  TempDir dir_;
  pid_t pid_ = 0;
};

}  // namespace tensoropt::test
