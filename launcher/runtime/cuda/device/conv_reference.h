// HostExec's convolution (conv_args.h): direct loops over every output position, group and kernel
// offset, summed in double. It stands where cuDNN runs on a GPU, so the emulated comparison
// (tests/launcher/runtime/test_cuda_emulated.cc) holds the host logic of ../conv.cc (padding,
// groups, the transposed convolution's roles, bias) and the argument marshalling to the CPU
// backend's im2col kernels. Host code only; no executor.
#pragma once

#include <cstdint>
#include <vector>

#include "launcher/runtime/cuda/device/conv_args.h"

namespace tensoropt::cuda_kernels {

// fn(xi, wi, yi): every (input, weight, output) element triple the forward multiplies, with
// xi, wi, yi their offsets in x, w, y. Group gi's outputs read its C/g input channels.
template <class Fn>
void conv_taps(const ConvArgs& a, Fn&& fn) {
  const int64_t cg = a.c / a.groups, mg = a.m / a.groups;
  const int64_t in_size = a.in[0] * a.in[1] * a.in[2], out_size = a.out[0] * a.out[1] * a.out[2];
  const int64_t k_size = a.kernel[0] * a.kernel[1] * a.kernel[2];
  for (int64_t n = 0; n < a.n; ++n) {
    for (int64_t m = 0; m < a.m; ++m) {
      const int64_t gi = m / mg;
      for (int64_t o = 0; o < out_size; ++o) {
        const int64_t o2 = o % a.out[2], o1 = o / a.out[2] % a.out[1], o0 = o / (a.out[2] * a.out[1]);
        for (int64_t j = 0; j < k_size; ++j) {
          const int64_t j2 = j % a.kernel[2], j1 = j / a.kernel[2] % a.kernel[1], j0 = j / (a.kernel[2] * a.kernel[1]);
          const int64_t i0 = o0 * a.stride[0] - a.pad[0] + j0 * a.dilation[0];
          const int64_t i1 = o1 * a.stride[1] - a.pad[1] + j1 * a.dilation[1];
          const int64_t i2 = o2 * a.stride[2] - a.pad[2] + j2 * a.dilation[2];
          if (i0 < 0 || i0 >= a.in[0] || i1 < 0 || i1 >= a.in[1] || i2 < 0 || i2 >= a.in[2]) continue;
          const int64_t i = (i0 * a.in[1] + i1) * a.in[2] + i2;
          for (int64_t ci = 0; ci < cg; ++ci)
            fn(((n * a.c) + gi * cg + ci) * in_size + i, (m * cg + ci) * k_size + j, (n * a.m + m) * out_size + o);
        }
      }
    }
  }
}

inline void conv_reference(const ConvArgs& a) {
  const int64_t cg = a.c / a.groups;
  const int64_t x_count = a.n * a.c * a.in[0] * a.in[1] * a.in[2];
  const int64_t w_count = a.m * cg * a.kernel[0] * a.kernel[1] * a.kernel[2];
  const int64_t y_count = a.n * a.m * a.out[0] * a.out[1] * a.out[2];
  const int64_t count = a.direction == TO_CONV_FORWARD ? y_count : a.direction == TO_CONV_BACKWARD_DATA ? x_count : w_count;
  std::vector<double> acc(static_cast<size_t>(count), 0.0);
  conv_taps(a, [&](int64_t xi, int64_t wi, int64_t yi) {
    if (a.direction == TO_CONV_FORWARD) acc[static_cast<size_t>(yi)] += static_cast<double>(a.x[xi]) * a.w[wi];
    else if (a.direction == TO_CONV_BACKWARD_DATA) acc[static_cast<size_t>(xi)] += static_cast<double>(a.w[wi]) * a.y[yi];
    else acc[static_cast<size_t>(wi)] += static_cast<double>(a.x[xi]) * a.y[yi];
  });
  for (int64_t i = 0; i < count; ++i) a.result[i] = static_cast<float>(acc[static_cast<size_t>(i)]);
}

}  // namespace tensoropt::cuda_kernels
