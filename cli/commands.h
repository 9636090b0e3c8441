// The tensoropt subcommands. Each writes its result to `out` and returns the process exit code;
// bad input is thrown as InputError (graph/error.h) for main to report with exit code 2.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>

namespace tensoropt::cli {

struct InspectArgs {
  std::string model;
  std::optional<int64_t> batch;
  bool json = false;
  bool verbose = false;
};
int run_inspect(const InspectArgs& args, std::ostream& out);

// The op catalogue as a table; as Markdown for docs/ops.md when `markdown`.
int run_ops(bool markdown, std::ostream& out);

}  // namespace tensoropt::cli
