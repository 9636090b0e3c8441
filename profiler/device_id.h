// The device a backend runs on, as a profile database records it (docs/profile.md "Where
// measurements apply"): CPU: its model name (/proc/cpuinfo), logical cores and the backend's facts
// (GEMM instruction set, subnormal mode); GPU: its name, SMs and compute capability, and the
// versions of the driver and libraries the CUDA module loaded. Plus the tensoropt version.
// Thread-safe (reads the system and the backend).
#pragma once

#include "launcher/runtime/backend.h"
#include "profiler/database.h"

namespace tensoropt::profiler {

DeviceId device_id(const runtime::Backend& backend);

}  // namespace tensoropt::profiler
