// The backends a run can train on, by the name `run --device` takes: one entry per backend, so a
// new device is one more entry here and nothing else in the launcher changes. "cuda" is listed
// where the build has CUDA support; its backend runs over the CUDA module's driver (cuda/loader.h).
//
// check_device refuses an unknown name, or one this build lacks, with one line naming the flag,
// the value and what is allowed (for `cuda`: it loads the CUDA module to say whether the module is
// missing or no GPU is visible), and a setting of the environment the
// backend refuses (the CPU backend's TENSOROPT_GEMM, TENSOROPT_DENORMALS), naming the variable
// (InputError): the CLI calls it before any work starts.
// make_backend builds the backend (REQUIRES: check_device passed). Thread-safe.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "launcher/runtime/backend.h"

namespace tensoropt::runtime {

struct BackendOptions {
  int threads = 1;  // the CPU backend's kernel threads
  int gpu = 0;      // the CUDA backend's GPU, among the visible ones
};

// The devices this build can train on, in the order `--help` lists them ("cpu", ...).
std::vector<std::string> backend_names();

void check_device(std::string_view device);

// The device `run` trains on when --device is not given: "cuda" where this build has CUDA support
// and a GPU is visible, else "cpu". Loads the CUDA module only where the NVIDIA driver's device
// node exists, so a machine without one pays nothing.
std::string default_device();

// InputError when `workers` processes of this machine would each need a GPU of their own and
// fewer are visible ("cuda" only; `flag` names what asked for them).
void check_local_gpus(std::string_view device, int workers, std::string_view flag);

std::unique_ptr<Backend> make_backend(std::string_view device, const BackendOptions& options);

}  // namespace tensoropt::runtime
