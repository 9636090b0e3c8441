#include "tests/children.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <thread>

namespace tensoropt::test {

using Clock = std::chrono::steady_clock;

TempDir::TempDir() {
  char tmpl[] = "/tmp/tensoropt-test.XXXXXX";
  if (mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
  path = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
}

std::vector<ChildResult> run_children(int n, const std::function<void(int)>& body, std::chrono::milliseconds limit,
                                      int kill_rank, std::chrono::milliseconds kill_after) {
  std::vector<pid_t> pids;
  std::vector<int> pipes;
  const auto start = Clock::now();
  std::fflush(nullptr);
  for (int i = 0; i < n; ++i) {
    int fds[2];
    if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
    const pid_t pid = fork();
    if (pid < 0) throw std::runtime_error("fork failed");
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
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return results;
}

}  // namespace tensoropt::test
