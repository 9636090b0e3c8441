#include "launcher/elastic/join.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <ostream>
#include <thread>

#include "graph/error.h"
#include "launcher/elastic/control.h"
#include "launcher/elastic/remote.h"
#include "launcher/launch/spawn.h"

namespace tensoropt {
namespace {

using Clock = std::chrono::steady_clock;

volatile sig_atomic_t g_signal = 0;
void on_signal(int sig) { g_signal = sig; }

// How often this process beats and looks at the launcher's files.
constexpr std::chrono::milliseconds kBeat{200};
// How long a new offer waits to see the launcher beat before calling the job gone.
constexpr std::chrono::seconds kFirstBeat{3};

// The worker's command line: the launcher's, with this machine's --threads when given.
std::vector<std::string> worker_argv(const nlohmann::ordered_json& job, std::optional<int> threads) {
  std::vector<std::string> argv = job.at("argv").get<std::vector<std::string>>();
  if (!threads) return argv;
  for (size_t i = 0; i + 1 < argv.size(); ++i)
    if (argv[i] == "--threads") {
      argv[i + 1] = std::to_string(*threads);
      return argv;
    }
  argv.insert(argv.end(), {"--threads", std::to_string(*threads)});
  return argv;
}

// This process's place on its machine when a launcher started it (torchrun's LOCAL_RANK, srun's
// SLURM_LOCALID, mpirun's OMPI_COMM_WORLD_LOCAL_RANK): its worker takes that device; else 0.
int local_rank() {
  for (const char* name : {"LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK"}) {
    const char* v = std::getenv(name);
    if (!v || !*v) continue;
    char* end = nullptr;
    const long x = std::strtol(v, &end, 10);
    if (*end != '\0' || x < 0 || x > 1 << 16) throw InputError(std::string(name) + "=" + v + ": not a local rank");
    return static_cast<int>(x);
  }
  return 0;
}

}  // namespace

int join_elastic(const std::string& control, std::optional<int> threads, std::ostream& out, std::ostream& err) {
  const std::optional<nlohmann::ordered_json> job = control::read_json(control + "/job.json");
  if (!job || !job->contains("argv") || !job->contains("store"))
    throw InputError(control + ": not the control directory of an elastic job (run --elastic --control DIR on the first machine)");
  if (std::filesystem::exists(control + "/ended.json")) throw InputError(control + ": the job is over");
  if (!remote::beats_within(control + "/launcher.beat", kFirstBeat)) {
    if (std::filesystem::exists(control + "/ended.json")) throw InputError(control + ": the job is over");
    throw InputError(control + ": the job is gone (its launcher has not beaten for 3 s)");
  }
  remote::Pulse launcher(control + "/launcher.beat");

  // The job's workers must be reachable from here: on another machine they listen on the interface
  // GLOO_SOCKET_IFNAME named when the job started (and this machine's worker on its own, or the same name).
  const std::string job_iface = job->value("gloo_socket_ifname", std::string());
  if (!remote::on_this_host(job->value("launcher", std::string())) && job_iface.empty())
    throw InputError(control + ": the job's workers listen on 127.0.0.1 only; start it with GLOO_SOCKET_IFNAME=IFACE (the network interface other "
                     "machines reach it on) to take workers from other machines");
  const char* own_iface = std::getenv("GLOO_SOCKET_IFNAME");
  if (!(own_iface && *own_iface) && !job_iface.empty()) setenv("GLOO_SOCKET_IFNAME", job_iface.c_str(), 1);
  const int device = local_rank();
  const std::string member = remote::this_member();
  const std::vector<std::string> argv = worker_argv(*job, threads);
  const std::string store = job->at("store").get<std::string>();
  setenv("TENSOROPT_MEMBER", member.c_str(), 1);
  setenv("TENSOROPT_JOB", job->value("job", std::string()).c_str(), 1);
  const std::string cwd = job->value("cwd", std::string());
  if (!cwd.empty() && std::filesystem::is_directory(cwd) && chdir(cwd.c_str()) != 0) err << "tensoropt: warning: cannot enter " << cwd << "\n";
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);

  control::write_json(remote::offer_path(control, member), {{"member", member}, {"pid", getpid()}});
  remote::beat(remote::beat_path(control, member));
  out << "offered  one worker to the job in " << control << " as " << member << "; waiting for its launcher\n" << std::flush;
  pid_t worker = 0;
  int generation = -1;        // of the worker started last
  bool stopped = false;       // the launcher stopped it
  bool rejoin = false;        // and will name a new generation (a restart from the checkpoint)
  auto last_beat = Clock::now();
  while (true) {
    if (Clock::now() - last_beat >= kBeat) {
      remote::beat(remote::beat_path(control, member));
      last_beat = Clock::now();
    }
    if (g_signal) {
      if (worker > 0) {  // the job survives it as a lost worker, told at once
        kill(worker, SIGKILL);
        int status = 0;
        waitpid(worker, &status, 0);
        remote::write_exit(control, member, generation, status);
      }
      err << "tensoropt: stopped by signal " << g_signal << (worker > 0 ? "; this machine's worker was killed, the job goes on without it" : "") << "\n";
      std::filesystem::remove(remote::offer_path(control, member));
      return 130;
    }
    if (launcher.silent_for() > remote::kSilence) {
      if (worker > 0) {
        kill(worker, SIGKILL);
        waitpid(worker, nullptr, 0);
      }
      err << "tensoropt: error: the job's launcher stopped answering (no beat in " << control << " for " << remote::kSilence.count()
          << " s)" << (worker > 0 ? "; this machine's worker was stopped" : "") << "\n";
      return 1;
    }
    if (worker == 0) {
      if (std::filesystem::exists(control + "/ended.json")) {
        out << "ended    the job is over\n";
        return 0;
      }
      const std::optional<remote::Assignment> a = remote::read_assignment(control, member);
      if (a && a->generation > generation) {
        generation = a->generation;
        out << "worker   rank " << a->rank << " of " << a->workers << " (generation " << generation << (a->restart ? ", from the checkpoint" : "") << ")\n"
            << std::flush;
        worker = start_worker(argv, a->rank, a->workers, store, generation, a->restart, device);
        stopped = rejoin = false;
      } else if (stopped && !rejoin) {
        return 0;
      }
    } else {
      const std::optional<remote::Stop> stop = remote::read_stop(control, member);
      if (stop && !stopped && stop->generation == generation) {
        stopped = true;
        rejoin = stop->rejoin;
        kill(worker, SIGKILL);
        out << "stopped  by the launcher: " << stop->why << "\n" << std::flush;
      }
      int status = 0;
      if (waitpid(worker, &status, WNOHANG) == worker) {
        worker = 0;
        remote::write_exit(control, member, generation, status);
        if (!stopped && WIFEXITED(status) && WEXITSTATUS(status) == control::kExitNoReplica) {
          stopped = rejoin = true;  // the launcher restarts the job from its checkpoint, this machine's worker with it
          out << "restart  the job goes on from its checkpoint: waiting to be named again\n" << std::flush;
        } else if (!stopped) {
          if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
            out << "left     the worker ended well\n";
            return 0;
          }
          err << "tensoropt: error: this machine's worker " << how_it_ended(status) << "\n";
          return 1;
        }
        if (!rejoin) {
          // A resize given up needs nothing more of this machine; a job stopped says why on its launcher.
          return stop && stop->failed ? 1 : 0;
        }
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace tensoropt
