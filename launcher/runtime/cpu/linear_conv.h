// Conv and ConvTranspose kernels (linear_conv.cc), registered by register_linear (linear.cc).
#pragma once

#include "launcher/runtime/kernel.h"

namespace tensoropt::runtime::cpu {

void register_conv(KernelTable& table);  // Conv, ConvTranspose

}  // namespace tensoropt::runtime::cpu
