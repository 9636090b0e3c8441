// CPU kernels of graph/ops/norm.cc (see kernels.h), one file per kind of op:
//   norm_axis.cc    Softmax, LogSoftmax, LpNormalization
//   norm_layer.cc   LayerNormalization
//   norm_group.cc   GroupNormalization, InstanceNormalization
//   norm_batch.cc   BatchNormalization
//   norm_reduce.cc  ReduceSum, ReduceMean, ReduceProd, ReduceMax, ReduceMin, ReduceL1, ReduceL2,
//                   ReduceSumSquare, ReduceLogSumExp
//   norm_select.cc  ArgMax, ArgMin, TopK, CumSum
// and what they share in norm_parts.h.
#include "launcher/runtime/cpu/kernels.h"
#include "launcher/runtime/cpu/norm_parts.h"

namespace tensoropt::runtime::cpu {

void register_norm(KernelTable& table) {
  register_norm_axis(table);
  register_norm_layer(table);
  register_norm_group(table);
  register_norm_batch(table);
  register_norm_reduce(table);
  register_norm_select(table);
}

}  // namespace tensoropt::runtime::cpu
