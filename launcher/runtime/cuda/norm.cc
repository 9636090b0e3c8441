// CUDA kernels of graph/ops/norm.cc, host side, one file per kind of op as the CPU backend's
// (cpu/norm.cc): norm_axis.cc, norm_layer.cc, norm_group.cc, norm_batch.cc, norm_reduce.cc,
// norm_select.cc, and what they share in norm_parts.h. The kernel sources: device/norm*.h.
#include "launcher/runtime/cuda/norm_parts.h"

namespace tensoropt::runtime::cuda {

void register_norm(CudaBackend& be, KernelTable& table) {
  register_norm_axis(be, table);
  register_norm_layer(be, table);
  register_norm_group(be, table);
  register_norm_batch(be, table);
  register_norm_reduce(be, table);
  register_norm_select(be, table);
}

}  // namespace tensoropt::runtime::cuda
