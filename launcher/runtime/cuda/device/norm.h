// The norm family's named kernels (registry.h): normalisations, softmax, reductions and
// selections, one header per kind of op as the CPU kernels (cpu/norm_*.cc); host side in
// cuda/norm_*.cc.
#pragma once

#include "launcher/runtime/cuda/device/norm_axis.h"
#include "launcher/runtime/cuda/device/norm_batch.h"
#include "launcher/runtime/cuda/device/norm_group.h"
#include "launcher/runtime/cuda/device/norm_layer.h"
#include "launcher/runtime/cuda/device/norm_reduce.h"
#include "launcher/runtime/cuda/device/norm_select.h"
#include "launcher/runtime/cuda/device/registry.h"

namespace tensoropt::cuda_kernels {

template <class Exec>
void norm_kernels(KernelList<Exec>& out) {
  out.push_back(kernel<Exec, AxisArgs, softmax<Exec>>("softmax"));
  out.push_back(kernel<Exec, AxisArgs, softmax_backward<Exec>>("softmax_backward"));
  out.push_back(kernel<Exec, AxisArgs, log_softmax<Exec>>("log_softmax"));
  out.push_back(kernel<Exec, AxisArgs, log_softmax_backward<Exec>>("log_softmax_backward"));
  out.push_back(kernel<Exec, AxisArgs, lp_norm<Exec>>("lp_norm"));
  out.push_back(kernel<Exec, AxisArgs, lp_norm_backward<Exec>>("lp_norm_backward"));
  out.push_back(kernel<Exec, LayerNormArgs, layer_norm<Exec>>("layer_norm"));
  out.push_back(kernel<Exec, LayerNormBackwardArgs, layer_norm_backward<Exec>>("layer_norm_backward"));
  out.push_back(kernel<Exec, LayerNormParamArgs, layer_norm_params<Exec>>("layer_norm_params"));
  out.push_back(kernel<Exec, LayerNormParamArgs, layer_norm_dscale_terms<Exec>>("layer_norm_dscale_terms"));
  out.push_back(kernel<Exec, ExpandArgs, norm_expand<Exec>>("norm_expand"));
  out.push_back(kernel<Exec, GroupNormArgs, group_norm<Exec>>("group_norm"));
  out.push_back(kernel<Exec, GroupNormArgs, group_norm_backward<Exec>>("group_norm_backward"));
  out.push_back(kernel<Exec, BatchNormArgs, batch_norm<Exec>>("batch_norm"));
  out.push_back(kernel<Exec, BatchNormArgs, batch_norm_backward<Exec>>("batch_norm_backward"));
  out.push_back(kernel<Exec, ReduceArgs, reduce<Exec>>("reduce"));
  out.push_back(kernel<Exec, ReduceArgs, reduce_backward<Exec>>("reduce_backward"));
  out.push_back(kernel<Exec, SelectArgs, arg_extreme<Exec>>("arg_extreme"));
  out.push_back(kernel<Exec, SelectArgs, top_k<Exec>>("top_k"));
  out.push_back(kernel<Exec, TopKBackwardArgs, top_k_backward<Exec>>("top_k_backward"));
  out.push_back(kernel<Exec, CumSumArgs, cumsum<Exec>>("cumsum"));
}

}  // namespace tensoropt::cuda_kernels
