// The Einsum kernel (linear_einsum.cc), registered by register_linear (linear.cc).
#pragma once

#include "launcher/runtime/kernel.h"

namespace tensoropt::runtime::cpu {

void register_einsum(KernelTable& table);

}  // namespace tensoropt::runtime::cpu
