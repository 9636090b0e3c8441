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

}  // namespace tensoropt::test
