// Kernels launched by name through the driver table's `launch` (driver_abi.h). A kernel family
// (device/<family>.h) defines a POD argument struct per kernel, the kernel as
// `template <class Exec> int f(Exec&, const Args&)`, and a function that lists its kernels:
//
//   template <class Exec>
//   void norm_kernels(KernelList<Exec>& out) {
//     out.push_back(kernel<Exec, SoftmaxArgs, softmax<Exec>>("softmax"));
//   }
//
// family_kernels() below calls every family's list; launch() finds the name and checks that the
// caller's args size is the registered struct's size. Host side: CudaBackend::launch (backend.h).
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "launcher/runtime/cuda/driver_abi.h"

namespace tensoropt::cuda_kernels {

template <class Exec>
struct KernelEntry {
  const char* name;
  size_t args_size;
  int (*run)(Exec& ex, const void* args);
};

template <class Exec>
using KernelList = std::vector<KernelEntry<Exec>>;

template <class Exec, class Args, int (*F)(Exec&, const Args&)>
KernelEntry<Exec> kernel(const char* name) {
  return {name, sizeof(Args), [](Exec& ex, const void* args) { return F(ex, *static_cast<const Args*>(args)); }};
}

// Runs the kernel `name` (linear search: a few dozen names, next to a kernel launch).
template <class Exec>
int launch_by_name(Exec& ex, const KernelList<Exec>& list, const char* name, const void* args, size_t size) {
  for (const KernelEntry<Exec>& e : list) {
    if (std::strcmp(e.name, name) != 0) continue;
    if (e.args_size != size)
      return ex.fail(std::string("kernel ") + name + ": arguments of " + std::to_string(size) + " bytes, the module's take " +
                     std::to_string(e.args_size));
    return e.run(ex, args);
  }
  return ex.fail(std::string("no kernel named '") + name + "' in this CUDA module");
}

}  // namespace tensoropt::cuda_kernels
