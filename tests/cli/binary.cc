#include "tests/cli/binary.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace tensoropt::test {
namespace {


// Where the outputs of a run go: a directory of this process, removed when it exits.
struct OutputDir {
  std::filesystem::path path = std::filesystem::temp_directory_path() / ("tensoropt_cli_binary_" + std::to_string(::getpid()));
  OutputDir() { std::filesystem::create_directories(path); }
  ~OutputDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

}  // namespace

CliResult run_cli(const std::string& args, const std::string& env, const std::string& binary) {
  static const OutputDir dir;
  const auto out = dir.path / "stdout", err = dir.path / "stderr";
  const std::string cmd = env + (env.empty() ? "" : " ") + binary + " " + args + " >" + out.string() + " 2>" + err.string() + " </dev/null";
  const int status = std::system(cmd.c_str());
  CliResult r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

long lines(const std::string& s) { return std::count(s.begin(), s.end(), '\n'); }

std::string slurp(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::vector<pid_t> runs_with(const std::string& part) {
  std::vector<pid_t> out;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmdline = slurp(entry.path() / "cmdline");
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    const bool ours = cmdline.rfind(std::string(TENSOROPT_BINARY) + " run ", 0) == 0 || cmdline.rfind(std::string(TENSOROPT_BINARY) + " join ", 0) == 0;
    if (ours && cmdline.find(part) != std::string::npos)
      out.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return out;
}

}  // namespace tensoropt::test
