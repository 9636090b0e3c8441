// Pooling kernels launched by name (registry.h), host side ../pool.cc: own kernels, not cuDNN
// (cuDNN's pooling is the legacy API, and its graph API's resample operation has no argmax with
// our tie and NaN rules). Numerics as the CPU backend's (launcher/runtime/cpu/pool.cc), sums in
// the same order, so results agree to the last bit where the CPU's do not vectorise a sum.
//
// Legend: X [planes, in...] -> Y [planes, out...], a plane one (n, c); I input positions, O
// output positions, K kernel elements, 3 spatial axes with unit axes in front. Output o of an
// axis reads input o·stride - pad + j·dilation for kernel offsets j, those inside [0, in).
//   "maxpool": Y[o] = max over the window, the first maximum in kernel order winning, a NaN
//     always; A[o] = its position in the plane (-1: no tap inside); Indices (optional) = the
//     position flattened over X, spatially row-major or, with column_major, column-major.
//   "maxpool_backward": dX[i] = Σ_{o: A[o] = i} dY[o], a thread per input position gathering the
//     outputs whose windows hold it, in increasing o (the CPU's scatter order).
//   "avgpool": Y[o] = Σ_window X · inv[o]; "avgpool_backward": dX[i] = Σ_{o ∋ i} dY[o] · inv[o],
//     by increasing kernel offset. inv[o] = 1 / (taps of o inside the input, or with include_pad
//     inside [-pad, in + pad_end)), 0 for none.
//   "global_avgpool": Y[p] = Σ X[p, :] / count, a warp per plane; backward dX[p, :] = dY[p] / count.
//   "global_maxpool": Y[p] = max X[p, :] (NaN if any); backward dY[p] to the first position equal
//     to Y[p] (the last NaN when Y[p] is NaN), 0 elsewhere; a warp per plane.
#pragma once

#include <math.h>

#include "launcher/runtime/cuda/device/hd.h"
#include "launcher/runtime/cuda/device/registry.h"

namespace tensoropt::cuda_kernels {

struct PoolWindow {
  int64_t in[3], out[3], kernel[3], stride[3], dilation[3], pad[3], pad_end[3];
};

struct MaxPoolArgs {
  const float* x;
  float* y;
  int64_t* arg;      // [planes, O]: the argmax in the plane, kept for backward
  int64_t* indices;  // [planes, O] or null
  int64_t planes;
  PoolWindow w;
  int rank;          // spatial axes of X (1 to 3), for column-major Indices
  int column_major;
};

struct MaxPoolBackwardArgs {
  const float* dy;
  const int64_t* arg;
  float* dx;
  int64_t planes;
  PoolWindow w;
};

struct AvgPoolArgs {
  const float* src;  // X (forward) or dY (backward)
  float* dst;        // Y or dX
  int64_t planes;
  PoolWindow w;
  int include_pad;
};

struct GlobalPoolArgs {
  const float* x;   // [planes, in]: forward, and GlobalMaxPool's backward
  const float* y;   // [planes]: GlobalMaxPool's backward
  const float* dy;  // [planes]: backward
  float* out;       // Y [planes], or dX [planes, in]
  int64_t planes, in;
  float count;      // GlobalAveragePool's divisor
};

TO_HD int64_t window_in(const PoolWindow& w) { return w.in[0] * w.in[1] * w.in[2]; }
TO_HD int64_t window_out(const PoolWindow& w) { return w.out[0] * w.out[1] * w.out[2]; }
TO_HD int64_t window_taps(const PoolWindow& w) { return w.kernel[0] * w.kernel[1] * w.kernel[2]; }

// Input position of output (o0, o1, o2) at kernel offset j in the plane, or -1 in the padding.
TO_HD int64_t window_input(const PoolWindow& w, int64_t o0, int64_t o1, int64_t o2, int64_t j) {
  const int64_t j2 = j % w.kernel[2], j1 = j / w.kernel[2] % w.kernel[1], j0 = j / (w.kernel[2] * w.kernel[1]);
  const int64_t i0 = o0 * w.stride[0] - w.pad[0] + j0 * w.dilation[0];
  const int64_t i1 = o1 * w.stride[1] - w.pad[1] + j1 * w.dilation[1];
  const int64_t i2 = o2 * w.stride[2] - w.pad[2] + j2 * w.dilation[2];
  if (i0 < 0 || i0 >= w.in[0] || i1 < 0 || i1 >= w.in[1] || i2 < 0 || i2 >= w.in[2]) return -1;
  return (i0 * w.in[1] + i1) * w.in[2] + i2;
}

// Output position whose kernel offset j reads input (i0, i1, i2), or -1 when none does.
TO_HD int64_t window_output(const PoolWindow& w, int64_t i0, int64_t i1, int64_t i2, int64_t j) {
  const int64_t j2 = j % w.kernel[2], j1 = j / w.kernel[2] % w.kernel[1], j0 = j / (w.kernel[2] * w.kernel[1]);
  const int64_t t0 = i0 + w.pad[0] - j0 * w.dilation[0], t1 = i1 + w.pad[1] - j1 * w.dilation[1],
                t2 = i2 + w.pad[2] - j2 * w.dilation[2];
  if (t0 < 0 || t1 < 0 || t2 < 0 || t0 % w.stride[0] || t1 % w.stride[1] || t2 % w.stride[2]) return -1;
  const int64_t o0 = t0 / w.stride[0], o1 = t1 / w.stride[1], o2 = t2 / w.stride[2];
  if (o0 >= w.out[0] || o1 >= w.out[1] || o2 >= w.out[2]) return -1;
  return (o0 * w.out[1] + o1) * w.out[2] + o2;
}

// inv[o] of AveragePool for output o of the plane.
TO_HD float avg_inverse(const PoolWindow& w, int64_t o, bool include_pad) {
  const int64_t pos[3] = {o / (w.out[2] * w.out[1]), o / w.out[2] % w.out[1], o % w.out[2]};
  int64_t d = 1;
  for (int a = 0; a < 3; ++a) {
    const int64_t lo = include_pad ? -w.pad[a] : 0, hi = include_pad ? w.in[a] + w.pad_end[a] : w.in[a];
    int64_t n = 0;
    for (int64_t j = 0; j < w.kernel[a]; ++j) {
      const int64_t i = pos[a] * w.stride[a] - w.pad[a] + j * w.dilation[a];
      n += i >= lo && i < hi;
    }
    d *= n;
  }
  return d > 0 ? 1.0f / static_cast<float>(d) : 0.0f;
}

// The smallest v over the lanes of a row (hd.h's Lanes), every lane getting it.
TO_HD int64_t lanes_min_index(const Lanes& l, int64_t v) {
#if defined(__CUDA_ARCH__)
  for (int o = l.width / 2; o > 0; o /= 2) {
    const int64_t u = __shfl_xor_sync(0xffffffffu, v, o);
    v = u < v ? u : v;
  }
#else
  (void)l;
#endif
  return v;
}

template <class Exec>
int maxpool(Exec& ex, const MaxPoolArgs& a) {
  const MaxPoolArgs s = a;
  const int64_t in = window_in(s.w), out = window_out(s.w), taps = window_taps(s.w);
  return ex.each(s.planes * out, [=] TO_HD_LAMBDA(int64_t e) {
    const int64_t p = e / out, o = e % out;
    const int64_t o2 = o % s.w.out[2], o1 = o / s.w.out[2] % s.w.out[1], o0 = o / (s.w.out[2] * s.w.out[1]);
    const float* xp = s.x + p * in;
    float best = -INFINITY;
    int64_t at = -1;
    for (int64_t j = 0; j < taps; ++j) {
      const int64_t i = window_input(s.w, o0, o1, o2, j);
      if (i < 0) continue;
      const float v = xp[i];
      if (v > best || v != v || at < 0) {
        best = v;
        at = i;
      }
    }
    s.y[e] = best;
    s.arg[e] = at;
    if (!s.indices) return;
    int64_t i = at;
    if (s.column_major && i >= 0) {
      const int64_t iw = i % s.w.in[2], ih = i / s.w.in[2] % s.w.in[1], id = i / (s.w.in[2] * s.w.in[1]);
      i = s.rank == 1 ? iw : s.rank == 2 ? ih + iw * s.w.in[1] : id + ih * s.w.in[0] + iw * s.w.in[0] * s.w.in[1];
    }
    s.indices[e] = p * in + i;
  });
}

template <class Exec>
int maxpool_backward(Exec& ex, const MaxPoolBackwardArgs& a) {
  const MaxPoolBackwardArgs s = a;
  const int64_t in = window_in(s.w), out = window_out(s.w), taps = window_taps(s.w);
  return ex.each(s.planes * in, [=] TO_HD_LAMBDA(int64_t e) {
    const int64_t p = e / in, i = e % in;
    const int64_t i2 = i % s.w.in[2], i1 = i / s.w.in[2] % s.w.in[1], i0 = i / (s.w.in[2] * s.w.in[1]);
    float sum = 0.0f;
    // A larger kernel offset reads i from a smaller output: offsets downwards visit outputs upwards.
    for (int64_t j = taps - 1; j >= 0; --j) {
      const int64_t o = window_output(s.w, i0, i1, i2, j);
      if (o >= 0 && s.arg[p * out + o] == i) sum += s.dy[p * out + o];
    }
    s.dx[e] = sum;
  });
}

template <class Exec>
int avgpool(Exec& ex, const AvgPoolArgs& a) {
  const AvgPoolArgs s = a;
  const int64_t in = window_in(s.w), out = window_out(s.w), taps = window_taps(s.w);
  return ex.each(s.planes * out, [=] TO_HD_LAMBDA(int64_t e) {
    const int64_t p = e / out, o = e % out;
    const int64_t o2 = o % s.w.out[2], o1 = o / s.w.out[2] % s.w.out[1], o0 = o / (s.w.out[2] * s.w.out[1]);
    float sum = 0.0f;
    for (int64_t j = 0; j < taps; ++j) {
      const int64_t i = window_input(s.w, o0, o1, o2, j);
      if (i >= 0) sum += s.src[p * in + i];
    }
    s.dst[e] = sum * avg_inverse(s.w, o, s.include_pad != 0);
  });
}

template <class Exec>
int avgpool_backward(Exec& ex, const AvgPoolArgs& a) {
  const AvgPoolArgs s = a;
  const int64_t in = window_in(s.w), out = window_out(s.w), taps = window_taps(s.w);
  return ex.each(s.planes * in, [=] TO_HD_LAMBDA(int64_t e) {
    const int64_t p = e / in, i = e % in;
    const int64_t i2 = i % s.w.in[2], i1 = i / s.w.in[2] % s.w.in[1], i0 = i / (s.w.in[2] * s.w.in[1]);
    float sum = 0.0f;
    for (int64_t j = 0; j < taps; ++j) {
      const int64_t o = window_output(s.w, i0, i1, i2, j);
      if (o >= 0) sum += s.src[p * out + o] * avg_inverse(s.w, o, s.include_pad != 0);
    }
    s.dst[e] = sum;
  });
}

template <class Exec>
int global_avgpool(Exec& ex, const GlobalPoolArgs& a) {
  const GlobalPoolArgs s = a;
  return ex.rows(s.planes, [=] TO_HD_LAMBDA(const Lanes& l, int64_t p) {
    float sum = 0.0f;
    for (int64_t i = l.lane; i < s.in; i += l.width) sum += s.x[p * s.in + i];
    sum = l.sum(sum);
    if (l.lane == 0) s.out[p] = sum / s.count;
  });
}

template <class Exec>
int global_avgpool_backward(Exec& ex, const GlobalPoolArgs& a) {
  const GlobalPoolArgs s = a;
  return ex.each(s.planes * s.in, [=] TO_HD_LAMBDA(int64_t i) { s.out[i] = s.dy[i / s.in] / s.count; });
}

template <class Exec>
int global_maxpool(Exec& ex, const GlobalPoolArgs& a) {
  const GlobalPoolArgs s = a;
  return ex.rows(s.planes, [=] TO_HD_LAMBDA(const Lanes& l, int64_t p) {
    float best = -INFINITY, nans = 0.0f;
    for (int64_t i = l.lane; i < s.in; i += l.width) {
      const float v = s.x[p * s.in + i];
      if (v != v) nans = 1.0f;
      else best = fmaxf(best, v);
    }
    nans = l.sum(nans);
    best = l.max(best);
    if (l.lane == 0) s.out[p] = nans > 0.0f ? NAN : best;
  });
}

template <class Exec>
int global_maxpool_backward(Exec& ex, const GlobalPoolArgs& a) {
  const GlobalPoolArgs s = a;
  return ex.rows(s.planes, [=] TO_HD_LAMBDA(const Lanes& l, int64_t p) {
    const float* xp = s.x + p * s.in;
    const float yp = s.y[p];
    const bool nan = yp != yp;
    // The first position equal to Y, or the last NaN as the smallest of -position.
    int64_t found = s.in;
    for (int64_t i = l.lane; i < s.in; i += l.width) {
      const float v = xp[i];
      const int64_t key = nan ? (v != v ? s.in - 1 - i : s.in) : (v == yp ? i : s.in);
      found = key < found ? key : found;
    }
    found = lanes_min_index(l, found);
    const int64_t at = found == s.in ? -1 : nan ? s.in - 1 - found : found;
    for (int64_t i = l.lane; i < s.in; i += l.width) s.out[p * s.in + i] = i == at ? s.dy[p] : 0.0f;
  });
}

template <class Exec>
void pool_kernels(KernelList<Exec>& out) {
  out.push_back(kernel<Exec, MaxPoolArgs, maxpool<Exec>>("maxpool"));
  out.push_back(kernel<Exec, MaxPoolBackwardArgs, maxpool_backward<Exec>>("maxpool_backward"));
  out.push_back(kernel<Exec, AvgPoolArgs, avgpool<Exec>>("avgpool"));
  out.push_back(kernel<Exec, AvgPoolArgs, avgpool_backward<Exec>>("avgpool_backward"));
  out.push_back(kernel<Exec, GlobalPoolArgs, global_avgpool<Exec>>("global_avgpool"));
  out.push_back(kernel<Exec, GlobalPoolArgs, global_avgpool_backward<Exec>>("global_avgpool_backward"));
  out.push_back(kernel<Exec, GlobalPoolArgs, global_maxpool<Exec>>("global_maxpool"));
  out.push_back(kernel<Exec, GlobalPoolArgs, global_maxpool_backward<Exec>>("global_maxpool_backward"));
}

}  // namespace tensoropt::cuda_kernels
