// Forked processes for the tests of multi-process code (communicators, sharded execution): run a
// body in n children, each reporting "ok" or its exception's message through a pipe, and a fresh
// temporary directory for their file store. Every child is reaped before run_children returns.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace tensoropt::test {

struct ChildResult {
  std::string message;  // "ok", an exception's message, or how the process ended
  double seconds = 0;   // from the fork to the child's end, as the parent saw it
};

// A fresh directory under /tmp, removed with everything in it at scope exit.
struct TempDir {
  std::string path;
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

// Runs body(i) in n forked processes and waits for all of them; a child still running after
// `limit` is killed (and reported as such). When kill_rank >= 0, that child gets SIGKILL after
// kill_after. Never returns with a child unreaped.
std::vector<ChildResult> run_children(int n, const std::function<void(int)>& body,
                                      std::chrono::milliseconds limit = std::chrono::seconds(20), int kill_rank = -1,
                                      std::chrono::milliseconds kill_after = std::chrono::milliseconds(0));

}  // namespace tensoropt::test
