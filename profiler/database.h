// The profile database (docs/profile.md "The file"): the device it was made on, and the op shards,
// collectives and optimizer steps timed there. Plain data; reading validates every field.
//
// Errors: read_profile throws InputError, one line naming the file and the field, for a file that
// cannot be read, is not JSON, is not "format": "tensoropt-profile", has another version, or has a
// missing, mistyped or out-of-range field. write_profile throws InputError when the file cannot be
// written. Thread-safety: plain values.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace tensoropt::profiler {

inline constexpr int kProfileVersion = 1;

struct DeviceId {
  std::string backend;  // "cpu", "cuda"
  std::string name;     // the CPU's model name, the GPU's name
  int units = 0;        // logical cores, streaming multiprocessors
  std::map<std::string, std::string> facts;  // the backend's facts (library versions, ISA)
  std::string tensoropt;                     // the version that timed it
  bool operator==(const DeviceId&) const = default;
  // "cpu Intel(R) Xeon(R) ... (2 cores; gemm avx512, denormals flush; tensoropt 0.1.0)"
  std::string line() const;
};

using Points = std::vector<std::pair<double, double>>;  // (bytes, seconds), sorted by bytes

struct OpEntry {
  std::string op, signature;  // profiler/signature.h
  int workers = 1, threads = 1;
  double forward_s = 0, backward_s = 0;
  int repeats = 0;
};

struct CollectiveEntry {
  std::string kind;  // "all_reduce", "all_gather", "reduce_scatter", "all_to_all"
  std::string level = "intra";
  int group = 2, workers = 2;
  Points points;
  double latency_s = 0, bandwidth_Bps = 0;  // the least-squares line, for reading
};

struct OptimizerEntry {
  std::string kind;   // planner::optimizer_name: "sgd", "momentum", "adam"
  std::string dtype;  // planner::precision_name: "fp32", "bf16"
  int workers = 1, threads = 1;
  Points points;      // (bytes of the parameter's weights, seconds)
  double fixed_s = 0, per_byte_s = 0;
};

// What the executors spend around the kernels, per kernel call (a node's forward or backward):
// the one-device step's time less its kernels' time (the kernel timer's), over its calls. The loss
// and the bookkeeping of values and gradients are in it.
struct ExecutorEntry {
  std::string dtype;
  int workers = 1, threads = 1;
  double per_call_s = 0;
  int steps = 0;
};

// How much of a gradient bucket's all-reduce a step still waits for when it runs beside the
// backward (as the runtime runs it): (time of a backward op's calls with the all-reduce started
// beside them - the same calls alone) / the all-reduce alone, at one bucket's bytes.
struct OverlapEntry {
  int group = 2, workers = 2;
  double bytes = 0;
  double exposed = 1;
};

struct ProfileDb {
  DeviceId device;
  std::vector<OpEntry> ops;
  std::vector<CollectiveEntry> collectives;
  std::vector<OptimizerEntry> optimizer;
  std::vector<ExecutorEntry> executor;
  std::vector<OverlapEntry> overlap;
};

ProfileDb read_profile(const std::string& path);
// Sorts the entries (docs/profile.md) and writes the file.
void write_profile(ProfileDb db, const std::string& path);
// `add`'s entries into `into`, each replacing one of the same key.
void merge_profile(ProfileDb& into, const ProfileDb& add);

// The least-squares line t = a + b * x through `points` (a >= 0, b >= 0: clamped); {t, 0} for
// one point.
std::pair<double, double> fit_line(const Points& points);

}  // namespace tensoropt::profiler
