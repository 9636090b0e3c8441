// CPU kernels of graph/ops/pool.cc (see kernels.h).
#include "launcher/runtime/cpu/kernels.h"
#include "launcher/runtime/cpu/util.h"

namespace tensoropt::runtime::cpu {

void register_pool(KernelTable& table) { (void)table; }

}  // namespace tensoropt::runtime::cpu
