// Convolution kernels launched by name (registry.h), for Conv and ConvTranspose (host side:
// ../conv.cc). Legend: N batch, M channels, P positions of a plane (the product of the spatial
// sizes); planes are (n, channel) pairs, row-major.
//   "conv_workspace", "conv": the executor's convolution (conv_args.h): cuDNN on a GPU, the direct
//     loops of conv_reference.h on the host. conv_workspace plans it and says the scratch bytes
//     conv needs; the host allocates them where the run's memory is counted.
//   "conv_pad": dst[p, i] = src[p, i - offset] inside src, else 0, per axis (a negative offset
//     crops): the explicit padding of a convolution whose pads cuDNN cannot take as they are.
//   "conv_bias": y[n, m, :] += b[m].
//   "conv_bias_grad": db[m] = Σ_{n, P} dy[n, m, :], one warp per plane into partial [N, M], then
//     one warp per channel over its N partial sums (enough warps for a GPU at any batch).
#pragma once

#include "launcher/runtime/cuda/device/conv_args.h"
#include "launcher/runtime/cuda/device/hd.h"
#include "launcher/runtime/cuda/device/registry.h"

namespace tensoropt::cuda_kernels {

struct ConvPadArgs {
  const float* src;  // [planes, src_dims...]
  float* dst;        // [planes, dst_dims...]
  int64_t planes;
  int64_t src_dims[3], dst_dims[3], offset[3];
};

struct ConvBiasArgs {
  float* y;           // [N, M, P]
  const float* bias;  // [M]
  int64_t n, m, positions;
};

struct ConvBiasGradArgs {
  const float* dy;  // [N, M, P]
  float* partial;   // [N, M] scratch
  float* db;        // [M]
  int64_t n, m, positions;
};

template <class Exec>
int conv_workspace(Exec& ex, const ConvArgs& a) {
  return ex.conv_workspace(a);
}

template <class Exec>
int conv_run(Exec& ex, const ConvArgs& a) {
  return ex.conv(a);
}

template <class Exec>
int conv_pad(Exec& ex, const ConvPadArgs& a) {
  const ConvPadArgs s = a;
  const int64_t src_plane = s.src_dims[0] * s.src_dims[1] * s.src_dims[2];
  const int64_t dst_plane = s.dst_dims[0] * s.dst_dims[1] * s.dst_dims[2];
  return ex.each(s.planes * dst_plane, [=] TO_HD_LAMBDA(int64_t e) {
    const int64_t p = e / dst_plane, r = e % dst_plane;
    const int64_t i2 = r % s.dst_dims[2] - s.offset[2];
    const int64_t i1 = r / s.dst_dims[2] % s.dst_dims[1] - s.offset[1];
    const int64_t i0 = r / (s.dst_dims[2] * s.dst_dims[1]) - s.offset[0];
    const bool inside = i0 >= 0 && i0 < s.src_dims[0] && i1 >= 0 && i1 < s.src_dims[1] && i2 >= 0 && i2 < s.src_dims[2];
    s.dst[e] = inside ? s.src[p * src_plane + (i0 * s.src_dims[1] + i1) * s.src_dims[2] + i2] : 0.0f;
  });
}

template <class Exec>
int conv_bias(Exec& ex, const ConvBiasArgs& a) {
  float* y = a.y;
  const float* b = a.bias;
  const int64_t m = a.m, positions = a.positions;
  return ex.each(a.n * m * positions, [=] TO_HD_LAMBDA(int64_t i) { y[i] += b[i / positions % m]; });
}

template <class Exec>
int conv_bias_grad(Exec& ex, const ConvBiasGradArgs& a) {
  const float* dy = a.dy;
  float* partial = a.partial;
  float* db = a.db;
  const int64_t n = a.n, m = a.m, positions = a.positions;
  if (int s = ex.rows(n * m, [=] TO_HD_LAMBDA(const Lanes& l, int64_t r) {
        float sum = 0;
        for (int64_t i = l.lane; i < positions; i += l.width) sum += dy[r * positions + i];
        sum = l.sum(sum);
        if (l.lane == 0) partial[r] = sum;
      }))
    return s;
  return ex.rows(m, [=] TO_HD_LAMBDA(const Lanes& l, int64_t ch) {
    float sum = 0;
    for (int64_t k = l.lane; k < n; k += l.width) sum += partial[k * m + ch];
    sum = l.sum(sum);
    if (l.lane == 0) db[ch] = sum;
  });
}

template <class Exec>
void conv_kernels(KernelList<Exec>& out) {
  out.push_back(kernel<Exec, ConvArgs, conv_workspace<Exec>>("conv_workspace"));
  out.push_back(kernel<Exec, ConvArgs, conv_run<Exec>>("conv"));
  out.push_back(kernel<Exec, ConvPadArgs, conv_pad<Exec>>("conv_pad"));
  out.push_back(kernel<Exec, ConvBiasArgs, conv_bias<Exec>>("conv_bias"));
  out.push_back(kernel<Exec, ConvBiasGradArgs, conv_bias_grad<Exec>>("conv_bias_grad"));
}

}  // namespace tensoropt::cuda_kernels
