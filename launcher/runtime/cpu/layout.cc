// CPU kernels of graph/ops/layout.cc (see kernels.h).
#include "launcher/runtime/cpu/kernels.h"
#include "launcher/runtime/cpu/util.h"

namespace tensoropt::runtime::cpu {

void register_layout(KernelTable& table) { (void)table; }

}  // namespace tensoropt::runtime::cpu
