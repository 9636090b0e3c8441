// `tensoropt profile` (docs/profile.md): the launcher side checks the flags, the model and an
// existing database (exit 2, one line, before any worker starts), then runs the profile in this
// process (--gpus 1) or starts N local workers (launcher/launch/local.h) that time side by side;
// the worker side times the op shards, the collectives and the optimizer steps the model's
// strategy spaces on N devices ask about, skipping what the database already holds for this
// device, and rank 0 writes the merged database.
// Not thread-safe (a command).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace tensoropt::cli {

struct ProfileArgs {
  std::string model;
  int gpus = 1;
  int64_t batch = 8;
  std::string device;  // empty: cuda where a GPU is visible, else cpu
  std::optional<std::string> output;
  std::string dtype = "fp32";
  int threads = 0;     // 0: the cores shared among the workers (OMP_NUM_THREADS first)
  int repeats = 9;
  std::optional<double> max_seconds;
  std::string cluster;  // empty: cpu on cpu, h100-sxm on cuda (the meshes' shapes only)
  int mesh_axes = 2;
};

// The database path: --output, else MODEL's file name with "-profile.json" in the working directory.
std::string profile_output(const ProfileArgs& a);

int run_profile(ProfileArgs a, const std::vector<std::string>& argv, std::ostream& out, std::ostream& err);

}  // namespace tensoropt::cli
