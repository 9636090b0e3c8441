// The tensoropt binary run as a user runs it, for the CLI tests that need no fixtures of
// test_cli.cc: its exit code, stdout and stderr. Not thread-safe (one temporary directory per
// test process).
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

namespace tensoropt::test {

struct CliResult {
  int code = -1;  // the exit status, or 128 + the signal that ended it
  std::string out, err;
};

// Runs `binary args` through the shell with stdin from /dev/null; `env` ("NAME=value ...") is put
// before the command. `binary` defaults to the one this build made (TENSOROPT_BINARY).
CliResult run_cli(const std::string& args, const std::string& env = "", const std::string& binary = TENSOROPT_BINARY);

// A file's whole text ("" when it cannot be read).
std::string slurp(const std::filesystem::path& path);

// The processes of `TENSOROPT_BINARY run ...` and `... join ...` whose command line holds `part` (a
// job's control directory: its launcher's, every worker's and every joining machine's has it).
std::vector<pid_t> runs_with(const std::string& part);

// How many lines `s` holds (its '\n's).
long lines(const std::string& s);

}  // namespace tensoropt::test
