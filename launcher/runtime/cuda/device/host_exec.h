// HostExec: the executor of the CUDA kernel sources on the host (hd.h), for the tests' emulated
// driver: each() and rows() are plain loops (rows with Lanes of width 1), memory is host memory,
// gemm is the textbook triple loop in double. It stands in for the GPU only where the CPU suite
// checks the kernels' maths and the backend's host logic (tests/launcher/runtime/
// test_cuda_emulated.cc); it is never a device a run can choose.
#pragma once

#include <chrono>
#include <cstdlib>
#include <vector>
#include <cstring>
#include <string>

#include "launcher/runtime/cuda/device/conv_reference.h"
#include "launcher/runtime/cuda/device/hd.h"
#include "launcher/runtime/cuda/driver_abi.h"

namespace tensoropt::cuda_kernels {

struct HostExec {
  std::string error;
  std::vector<std::chrono::steady_clock::time_point> events_;

  static HostExec* open(int ordinal, std::string* why) {
    if (ordinal != 0) {
      *why = "the host emulation has one device, 0";
      return nullptr;
    }
    return new HostExec;
  }

  int fail(std::string why) {
    error = std::move(why);
    return TO_CUDA_FAILED;
  }
  template <class F>
  int each(int64_t n, F f) {
    for (int64_t i = 0; i < n; ++i) f(i);
    return TO_CUDA_OK;
  }
  template <class F>
  int rows(int64_t count, F f) {
    const Lanes one;
    for (int64_t r = 0; r < count; ++r) f(one, r);
    return TO_CUDA_OK;
  }
  int alloc(int64_t bytes, void** out) {
    *out = std::aligned_alloc(64, static_cast<size_t>((bytes + 63) / 64 * 64));
    return *out ? TO_CUDA_OK : TO_CUDA_OUT_OF_MEMORY;
  }
  int release(void* p) {
    std::free(p);
    return TO_CUDA_OK;
  }
  int memory(int64_t* free_bytes, int64_t* total_bytes) {
    *free_bytes = *total_bytes = int64_t{1} << 40;
    return TO_CUDA_OK;
  }
  int upload(void* dst, const void* host, int64_t bytes) {
    if (bytes > 0) std::memcpy(dst, host, static_cast<size_t>(bytes));
    return TO_CUDA_OK;
  }
  int download(void* host, const void* src, int64_t bytes) { return upload(host, src, bytes); }
  int copy_rows(void* dst, int64_t dst_pitch, const void* src, int64_t src_pitch, int64_t width, int64_t count) {
    for (int64_t r = 0; r < count; ++r)
      std::memcpy(static_cast<char*>(dst) + r * dst_pitch, static_cast<const char*>(src) + r * src_pitch, static_cast<size_t>(width));
    return TO_CUDA_OK;
  }
  int synchronize() { return TO_CUDA_OK; }
  int event_record(int64_t* id) {
    *id = static_cast<int64_t>(events_.size());
    events_.push_back(std::chrono::steady_clock::now());
    return TO_CUDA_OK;
  }
  int event_elapsed(int64_t from, int64_t to, float* ms) {
    if (from < 0 || to < 0 || to >= static_cast<int64_t>(events_.size()) || from > to) return fail("event_elapsed: no such events");
    *ms = std::chrono::duration<float, std::milli>(events_[static_cast<size_t>(to)] - events_[static_cast<size_t>(from)]).count();
    return TO_CUDA_OK;
  }
  int events_reset() {
    events_.clear();
    return TO_CUDA_OK;
  }
  void* stream() { return nullptr; }
  std::string describe() { return "name: host emulation of the CUDA kernels\n"; }
  int gemm(const TensoroptGemm& g) {
    const auto element = [](const void* p, int dtype, int64_t i) {
      return dtype == TO_DTYPE_BF16 ? from_bf16(static_cast<const uint16_t*>(p)[i]) : static_cast<const float*>(p)[i];
    };
    for (int64_t p = 0; p < g.batch; ++p) {
      const int64_t a0 = p * g.stride_a, b0 = p * g.stride_b, c0 = p * g.stride_c;
      for (int64_t i = 0; i < g.m; ++i) {
        for (int64_t j = 0; j < g.n; ++j) {
          double s = 0;
          for (int64_t l = 0; l < g.k; ++l) {
            const float av = element(g.a, g.dtype_ab, a0 + (g.trans_a ? l * g.m + i : i * g.k + l));
            const float bv = element(g.b, g.dtype_ab, b0 + (g.trans_b ? j * g.k + l : l * g.n + j));
            s += static_cast<double>(av) * bv;
          }
          const int64_t at = c0 + i * g.n + j;
          const double prior = g.beta != 0 ? static_cast<double>(g.beta) * element(g.c, g.dtype_c, at) : 0.0;
          const auto v = static_cast<float>(g.alpha * s + prior);
          if (g.dtype_c == TO_DTYPE_BF16) static_cast<uint16_t*>(g.c)[at] = to_bf16(v);
          else static_cast<float*>(g.c)[at] = v;
        }
      }
    }
    return TO_CUDA_OK;
  }
  // The convolution of conv_args.h by direct loops (conv_reference.h), needing no workspace.
  int conv_workspace(const ConvArgs& a) {
    *a.workspace_needed = 0;
    return TO_CUDA_OK;
  }
  int conv(const ConvArgs& a) {
    conv_reference(a);
    return TO_CUDA_OK;
  }
};

}  // namespace tensoropt::cuda_kernels
