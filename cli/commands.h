// The tensoropt subcommands. Each writes its result to `out` and returns the process exit code;
// bad input is thrown as InputError (graph/error.h) for main to report with exit code 2.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace tensoropt::cli {

// The batch `plan` takes when --batch is not given: this many per GPU at the largest count asked
// for; `inspect` (one device) takes it for a model whose batch axis is dynamic.
inline constexpr int64_t kDefaultBatchPerDevice = 8;

struct InspectArgs {
  std::string model;
  std::optional<int64_t> batch;
  bool json = false;
  bool verbose = false;
  std::vector<std::string> frozen;     // --frozen patterns (graph/import.h)
};
int run_inspect(const InspectArgs& args, std::ostream& out);

struct PlanArgs {
  std::string model;
  std::string gpus;                    // --gpus grammar (planner/gpu_counts.h)
  std::string cluster = "h100-sxm";
  std::optional<int64_t> batch;        // default: 8 samples per GPU at the largest count
  std::string optimizer = "adam";
  std::string dtype = "fp32";
  std::optional<std::string> memory_budget;  // default: the cluster's usable memory
  double epsilon = 0;
  int mesh_axes = 2;
  bool recompute = true;               // false: --no-recompute
  std::string recompute_mode = "selective";  // --recompute: selective, all or none
  bool zero = true;
  int64_t param_persistence = 100000;  // SpaceOptions::param_persistence
  std::optional<std::string> json;     // file, or "-" for stdout
  std::optional<std::string> plot;
  std::optional<std::string> dump_space;
  bool baselines = false;
  int rows = 20;                       // table rows per GPU count; 0: all
  std::string planner_memory = "4GiB";  // FT's working sets together; "0": no limit
  bool exact = false;                   // no work budget: every tractable mesh solved exactly
  std::vector<std::string> frozen;     // --frozen patterns (graph/import.h)
  std::optional<std::string> profile;  // a profile database (docs/profile.md)
};
int run_plan(const PlanArgs& args, std::ostream& out, std::ostream& err);

struct EvaluateArgs {
  std::string model;
  std::string strategy;                // strategy file or plan file
  std::optional<int> gpus;             // which frontier of a plan file
  std::optional<int> point;            // which point (default: the chosen one)
  // For strategy files (defaults h100-sxm, adam, fp32; --batch required). A plan file brings its
  // own: given with one, each must agree with it.
  std::optional<std::string> cluster;
  std::optional<int64_t> batch;
  std::optional<std::string> optimizer;
  std::optional<std::string> dtype;
  std::optional<std::vector<std::string>> frozen;  // a plan file records its own
  bool json = false;
  bool by_layer = false;  // a row per layer of what the strategy does and costs (planner/explain.h)
  bool by_node = false;   // a row per node
  std::optional<std::string> profile;  // a profile database (docs/profile.md)
};
int run_evaluate(const EvaluateArgs& args, std::ostream& out, std::ostream& err);

// The op catalogue as a table; as Markdown for docs/ops.md when `markdown`.
int run_ops(bool markdown, std::ostream& out);

// `tensoropt status DIR [--json]` and `tensoropt resize DIR --gpus N`: an elastic job's control
// directory read and asked to change its worker count (launcher/elastic/control.h, job_commands.cc).
struct JobArgs {
  std::string dir;
  int gpus = 0;
  bool json = false;
};
int run_status(const JobArgs& args, std::ostream& out);
int run_resize(const JobArgs& args, std::ostream& out);

}  // namespace tensoropt::cli
