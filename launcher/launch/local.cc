#include "launcher/launch/local.h"

#include "launcher/launch/spawn.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <thread>
#include <vector>

#include "graph/error.h"
#include "launcher/train/worker.h"
#include "planner/training.h"
#include "profiler/database.h"

namespace tensoropt {
namespace {

volatile sig_atomic_t g_stop_signal = 0;
void on_stop(int sig) { g_stop_signal = sig; }

// In a child just forked by `parent`: it dies with its parent, whatever kills the parent (SIGKILL
// too): the kernel sends it SIGKILL then. A parent already gone before that took effect is seen
// in getppid.
void die_with(pid_t parent) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(1);
}

// In a forked child: the program `path` (by default this same binary) with `argv`; never returns
// (exit 127 when exec fails).
[[noreturn]] void exec_self(const std::vector<std::string>& argv, const char* path = "/proc/self/exe") {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execv(path, args.data());
  _exit(127);
}

// Each launcher's private directory holds its pid, so that the next launcher can clear the
// directory of one that was killed before it could (SIGKILL runs no destructor).
constexpr const char* kRunDirPrefix = "tensoropt-run.";

void remove_stale_run_dirs() {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/tmp", ec)) {
    if (entry.path().filename().string().rfind(kRunDirPrefix, 0) != 0) continue;
    std::ifstream f(entry.path() / "launcher.pid");
    long pid = 0;
    if (!(f >> pid) || pid <= 0) continue;  // not ours, or being made
    if (kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // its launcher lives
    std::filesystem::remove_all(entry.path(), ec);
  }
}

// Forks this binary (or the program argv[0] with `program`) with argv, dying with this process;
// its stdout (and stderr with `both`) to `log`, truncated or appended.
pid_t fork_self(const std::vector<std::string>& argv, const std::string& log, bool both, bool append, bool program = false) {
  const pid_t self = getpid();
  const pid_t pid = fork();
  if (pid < 0) throw InternalError("fork failed");
  if (pid == 0) {
    die_with(self);
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | (append ? O_APPEND : O_TRUNC), 0644);
    if (fd >= 0) {
      dup2(fd, STDOUT_FILENO);
      if (both) dup2(fd, STDERR_FILENO);
    }
    if (program) exec_self(argv, argv.at(0).c_str());
    exec_self(argv);
  }
  return pid;
}

// Runs argv to the end; its stdout to `log`, stderr inherited. Returns the wait status.
int run_to_end(const std::vector<std::string>& argv, const std::string& log) {
  const pid_t pid = fork_self(argv, log, false, false);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw InternalError("waitpid failed");
    if (g_stop_signal) kill(pid, SIGTERM);
  }
  return status;
}

}  // namespace

pid_t spawn_logged(const std::vector<std::string>& argv, const std::string& log) { return fork_self(argv, log, true, true, true); }

namespace {

std::vector<pid_t> start_workers(const std::vector<std::string>& argv, int gpus, const std::string& dir) {
  std::vector<pid_t> pids;
  for (int r = 0; r < gpus; ++r) pids.push_back(start_worker(argv, r, gpus, "file:" + dir + "/store", -1));
  return pids;
}

// Waits for every worker; the first that ends badly, or a stop signal, takes the group down
// (SIGTERM, then SIGKILL after 5 s). Returns the launcher's exit code, having said why.
int wait_for_workers(const std::vector<pid_t>& pids, std::ostream& err) {
  std::vector<bool> done(pids.size(), false);
  int left = static_cast<int>(pids.size()), failed_rank = -1, failed_status = 0;
  std::chrono::steady_clock::time_point stopping{};
  bool stop_sent = false;
  while (left > 0) {
    // Of the workers found ended in one sweep, a killed one is the cause and a peer that failed in a
    // collective with it the consequence: the killed one is named.
    const bool first_failure = failed_rank < 0;
    for (size_t r = 0; r < pids.size(); ++r) {
      if (done[r]) continue;
      int status = 0;
      if (waitpid(pids[r], &status, WNOHANG) != pids[r]) continue;
      done[r] = true;
      --left;
      const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
      const bool cause = failed_rank < 0 || (first_failure && WIFSIGNALED(status) && !WIFSIGNALED(failed_status));
      if (!ok && cause && !stop_sent) {
        failed_rank = static_cast<int>(r);
        failed_status = status;
      }
    }
    if (left == 0) break;
    if (!stop_sent && (failed_rank >= 0 || g_stop_signal)) {
      for (size_t r = 0; r < pids.size(); ++r)
        if (!done[r]) kill(pids[r], SIGTERM);
      stop_sent = true;
      stopping = std::chrono::steady_clock::now();
    }
    if (stop_sent && std::chrono::steady_clock::now() - stopping > std::chrono::seconds(5)) {
      for (size_t r = 0; r < pids.size(); ++r)
        if (!done[r]) kill(pids[r], SIGKILL);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (g_stop_signal && failed_rank < 0) {
    err << "tensoropt: stopped by signal " << g_stop_signal << "; every worker was stopped\n";
    return 130;
  }
  if (failed_rank >= 0) {
    err << "tensoropt: error: rank " << failed_rank << " of " << pids.size() << " " << how_it_ended(failed_status)
        << "; the other workers were stopped\n";
    return WIFEXITED(failed_status) && WEXITSTATUS(failed_status) == 2 ? 2 : 1;
  }
  return 0;
}

}  // namespace

std::string how_it_ended(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    return "killed by signal " + std::to_string(sig) + " (" + strsignal(sig) + ")";
  }
  return "exited with code " + std::to_string(WEXITSTATUS(status));
}

int stop_signal() { return g_stop_signal; }

int plan_for_workers(const TrainSettings& s, const std::string& gpus, const std::string& dir, std::ostream& out, std::ostream& err) {
  std::vector<std::string> planner = {"tensoropt", "plan", s.model, "--gpus", gpus, "--batch",
                                      std::to_string(s.batch.value_or(8)), "--cluster", s.cluster, "--json", dir + "/plan.json",
                                      "--dtype", s.dtype.value_or("fp32")};
  for (const std::string& f : s.frozen) planner.insert(planner.end(), {"--frozen", f});
  if (s.profile) planner.insert(planner.end(), {"--profile", *s.profile});
  out << "planning " << s.model << " on " << gpus << " workers (cluster " << s.cluster << (s.profile ? ", profile " + *s.profile : "")
      << ")\n" << std::flush;
  const int status = run_to_end(planner, dir + "/plan.log");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    err << "tensoropt: error: planning failed (" << how_it_ended(status) << ")\n";
    return WIFEXITED(status) && WEXITSTATUS(status) == 2 ? 2 : 1;
  }
  std::ifstream log(dir + "/plan.log");
  for (std::string line; std::getline(log, line);)
    if (line.find("chosen:") != std::string::npos) out << line.substr(line.find("chosen:")) << "\n";
  return 0;
}

pid_t start_worker(const std::vector<std::string>& argv, int rank, int world, const std::string& store, int generation, bool restart,
                   int local_rank) {
  const pid_t self = getpid();
  const pid_t pid = fork();
  if (pid < 0) throw InternalError("fork failed");
  if (pid == 0) {
    die_with(self);
    setenv("RANK", std::to_string(rank).c_str(), 1);
    setenv("WORLD_SIZE", std::to_string(world).c_str(), 1);
    setenv("LOCAL_RANK", std::to_string(local_rank >= 0 ? local_rank : rank).c_str(), 1);
    setenv("TENSOROPT_RENDEZVOUS", store.c_str(), 1);
    setenv("TENSOROPT_LOCAL_LAUNCH", "1", 1);
    if (generation >= 0) setenv("TENSOROPT_GENERATION", std::to_string(generation).c_str(), 1);
    if (restart) setenv("TENSOROPT_RESTART", "1", 1);
    if (rank != 0 && generation < 0) {  // an elastic job's workers each print while they lead
      const int fd = open("/dev/null", O_WRONLY);
      if (fd >= 0) dup2(fd, STDOUT_FILENO);
    }
    exec_self(argv);
  }
  return pid;
}

int launch_workers(const std::vector<std::string>& argv, int gpus, std::ostream& err, const BeforeWorkers& before,
                   const Supervise& supervise) {
  remove_stale_run_dirs();
  char tmpl[] = "/tmp/tensoropt-run.XXXXXX";
  if (!mkdtemp(tmpl)) throw InternalError("cannot make a private directory under /tmp");
  const std::string dir = tmpl;
  std::ofstream(dir + "/launcher.pid") << getpid() << "\n";
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  } cleanup{dir};
  struct sigaction sa {};
  sa.sa_handler = on_stop;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  std::vector<std::string> worker_argv = argv;
  if (before)
    if (const int code = before(dir, worker_argv); code != 0) return code;
  if (supervise) return supervise(dir, worker_argv);
  return wait_for_workers(start_workers(worker_argv, gpus, dir), err);
}

void check_before_workers(const TrainSettings& s, int workers) {
  if (s.data.has_value() != s.labels.has_value()) throw InputError("--data and --labels go together");
  if (s.dtype) planner::parse_precision(*s.dtype);  // a bad --dtype: one line, before anything starts
  check_checkpoint_paths(s);
  (void)kernel_threads(s, workers);  // a bad OMP_NUM_THREADS: one line, before anything starts
  if (s.profile) (void)profiler::read_profile(*s.profile);  // a corrupt profile likewise
}

int launch_local(const std::vector<std::string>& argv, int gpus, const TrainSettings& s, std::ostream& out, std::ostream& err) {
  check_before_workers(s, gpus);
  if (s.plan) {  // a bad plan, point or strategy: one line, before any worker starts
    const planner::StoredStrategy stored = checked_point(s, gpus);
    if (!stored.settings) check_strategy_resolves(s, stored, kernel_threads(s, gpus));
  }
  return launch_workers(argv, gpus, err, [&](const std::string& dir, std::vector<std::string>& worker_argv) {
    if (!s.plan) {
      if (const int code = plan_for_workers(s, std::to_string(gpus), dir, out, err); code != 0) return code;
      worker_argv.insert(worker_argv.end(), {"--plan", dir + "/plan.json"});
    }
    if (s.threads <= 0) worker_argv.insert(worker_argv.end(), {"--threads", std::to_string(kernel_threads(s, gpus))});
    out << std::flush;
    return 0;
  });
}

}  // namespace tensoropt
