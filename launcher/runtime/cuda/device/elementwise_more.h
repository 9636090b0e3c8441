// The elementwise family's named kernels (registry.h): the kernels of any dtype
// (elementwise_typed.h) and Cast, Clip and Dropout (elementwise_misc.h). The float32 unary maths
// and two-input arithmetic run through the driver table's own entries (unary.h, binary.h).
// Host side: cuda/elementwise*.cc.
#pragma once

#include "launcher/runtime/cuda/device/elementwise_misc.h"
#include "launcher/runtime/cuda/device/elementwise_typed.h"
#include "launcher/runtime/cuda/device/registry.h"

namespace tensoropt::cuda_kernels {

template <class Exec>
void elementwise_kernels(KernelList<Exec>& out) {
  out.push_back(kernel<Exec, EwBinaryArgs, ew_binary<Exec>>("ew_binary"));
  out.push_back(kernel<Exec, EwUnaryIntArgs, ew_unary_int<Exec>>("ew_unary_int"));
  out.push_back(kernel<Exec, EwTestArgs, ew_test<Exec>>("ew_test"));
  out.push_back(kernel<Exec, EwWhereArgs, ew_where<Exec>>("ew_where"));
  out.push_back(kernel<Exec, EwWhereBackwardArgs, ew_where_backward<Exec>>("ew_where_backward"));
  out.push_back(kernel<Exec, TensoroptBinary, ew_prelu_backward<Exec>>("ew_prelu_backward"));
  out.push_back(kernel<Exec, EwCastArgs, ew_cast<Exec>>("ew_cast"));
  out.push_back(kernel<Exec, EwClipArgs, ew_clip<Exec>>("ew_clip"));
  out.push_back(kernel<Exec, EwClipBackwardArgs, ew_clip_backward<Exec>>("ew_clip_backward"));
  out.push_back(kernel<Exec, EwDropoutArgs, ew_dropout<Exec>>("ew_dropout"));
  out.push_back(kernel<Exec, EwDropoutBackwardArgs, ew_dropout_backward<Exec>>("ew_dropout_backward"));
}

}  // namespace tensoropt::cuda_kernels
