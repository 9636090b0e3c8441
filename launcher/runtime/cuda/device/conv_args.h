// The one convolution every Conv and ConvTranspose pass of the CUDA backend reduces to (host
// side: ../conv.cc), as the executors run it: DeviceExec on cuDNN's graph API (../conv_cudnn.cu),
// HostExec by the direct loops of conv_reference.h. Cross-correlation, float32 in and out, float32
// accumulation, symmetric zero padding, dense NC... layouts, results overwritten (beta = 0).
//
// Legend: N batch, C input channels, M output channels, g groups (C and M divisible by g).
//   x [N, C, in...], w [M, C/g, kernel...], y [N, M, out...]; 2 or 3 spatial axes, given as the
//   last `spatial` of three (a 1-D convolution has a unit axis in front).
//   Output position o of an axis reads input o·stride - pad + j·dilation for kernel offsets j,
//   and out = (in + 2·pad - dilation·(kernel - 1) - 1) / stride + 1 (the caller ensures it).
//   FORWARD:         result y = conv(x, w)
//   BACKWARD_DATA:   result x = the adjoint of FORWARD in x, applied to y (dX from dY and W)
//   BACKWARD_FILTER: result w = the adjoint of FORWARD in w, applied to y (dW from dY and X)
#pragma once

#include <stdint.h>

namespace tensoropt::cuda_kernels {

enum { TO_CONV_FORWARD = 0, TO_CONV_BACKWARD_DATA = 1, TO_CONV_BACKWARD_FILTER = 2 };

struct ConvArgs {
  int direction;  // TO_CONV_*
  int spatial;    // 2 or 3
  int64_t n, c, m, groups;
  int64_t in[3], out[3], kernel[3], stride[3], dilation[3], pad[3];  // unit axes in front
  const float* x;             // read by FORWARD and BACKWARD_FILTER
  const float* w;             // read by FORWARD and BACKWARD_DATA
  const float* y;             // dY, read by BACKWARD_DATA and BACKWARD_FILTER
  float* result;              // y (FORWARD), x (BACKWARD_DATA) or w (BACKWARD_FILTER)
  void* workspace;            // conv: scratch of workspace_bytes, at least what conv_workspace said
  int64_t workspace_bytes;
  int64_t* workspace_needed;  // conv_workspace: HOST memory, gets the bytes `conv` needs
};

}  // namespace tensoropt::cuda_kernels
