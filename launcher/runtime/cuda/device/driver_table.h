// The driver table (driver_abi.h) over an executor: make_driver_table<DeviceExec>() is the module's
// (driver.cu), make_driver_table<HostExec>() the tests' emulation (host_exec.h), from the same
// kernel sources. A TensoroptCudaDevice* is the executor itself, made by Exec::open.
//
// Exec provides: static Exec* open(int ordinal, std::string* why); `std::string error`;
// fail(why); each(n, f) and rows(count, f) (hd.h's Lanes); alloc, release, memory, upload,
// download, copy_rows, synchronize, stream, describe; event_record, event_elapsed, events_reset;
// gemm(TensoroptGemm).
#pragma once

#include <algorithm>
#include <cstring>
#include <string>

#include "launcher/runtime/cuda/device/binary.h"
#include "launcher/runtime/cuda/device/einsum.h"
#include "launcher/runtime/cuda/device/norm.h"
#include "launcher/runtime/cuda/device/optimizer.h"
#include "launcher/runtime/cuda/device/movement.h"
#include "launcher/runtime/cuda/device/elementwise_more.h"
#include "launcher/runtime/cuda/device/conv.h"
#include "launcher/runtime/cuda/device/pool.h"
#include "launcher/runtime/cuda/device/primitives.h"
#include "launcher/runtime/cuda/device/registry.h"
#include "launcher/runtime/cuda/device/unary.h"
#include "launcher/runtime/cuda/driver_abi.h"

namespace tensoropt::cuda_kernels {

inline size_t copy_text(const std::string& s, char* out, size_t size) {
  if (size > 0) {
    const size_t n = std::min(s.size(), size - 1);
    std::memcpy(out, s.data(), n);
    out[n] = '\0';
  }
  return s.size();
}

// Every kernel family's named kernels (registry.h): one line per family.
template <class Exec>
const KernelList<Exec>& family_kernels() {
  static const KernelList<Exec> list = [] {
    KernelList<Exec> out;
    optimizer_kernels(out);
    einsum_kernels(out);
    norm_kernels(out);
    movement_kernels(out);
    elementwise_kernels(out);
    conv_kernels(out);
    pool_kernels(out);
    return out;
  }();
  return list;
}

template <class Exec>
struct DriverFunctions {
  static Exec& x(TensoroptCudaDevice* d) { return *reinterpret_cast<Exec*>(d); }

  static TensoroptCudaDevice* open(int ordinal, char* why, size_t size) {
    std::string reason;
    Exec* e = Exec::open(ordinal, &reason);
    if (!e) copy_text(reason, why, size);
    return reinterpret_cast<TensoroptCudaDevice*>(e);
  }
  static void close(TensoroptCudaDevice* d) { delete &x(d); }
  static size_t error(TensoroptCudaDevice* d, char* text, size_t size) { return copy_text(x(d).error, text, size); }
  static size_t describe(TensoroptCudaDevice* d, char* text, size_t size) { return copy_text(x(d).describe(), text, size); }
  static void* stream(TensoroptCudaDevice* d) { return x(d).stream(); }
  static int alloc(TensoroptCudaDevice* d, int64_t bytes, void** out) { return x(d).alloc(bytes, out); }
  static int release(TensoroptCudaDevice* d, void* p) { return x(d).release(p); }
  static int memory(TensoroptCudaDevice* d, int64_t* f, int64_t* t) { return x(d).memory(f, t); }
  static int upload(TensoroptCudaDevice* d, void* dst, const void* h, int64_t bytes) { return x(d).upload(dst, h, bytes); }
  static int download(TensoroptCudaDevice* d, void* h, const void* src, int64_t bytes) { return x(d).download(h, src, bytes); }
  static int copy_rows(TensoroptCudaDevice* d, void* dst, int64_t dp, const void* src, int64_t sp, int64_t w, int64_t r) {
    return x(d).copy_rows(dst, dp, src, sp, w, r);
  }
  static int synchronize(TensoroptCudaDevice* d) { return x(d).synchronize(); }
  static int event_record(TensoroptCudaDevice* d, int64_t* id) { return x(d).event_record(id); }
  static int event_elapsed(TensoroptCudaDevice* d, int64_t from, int64_t to, float* ms) { return x(d).event_elapsed(from, to, ms); }
  static int events_reset(TensoroptCudaDevice* d) { return x(d).events_reset(); }
  static int fill(TensoroptCudaDevice* d, void* p, int dtype, int64_t n, double v) { return cuda_kernels::fill(x(d), p, dtype, n, v); }
  static int convert(TensoroptCudaDevice* d, const void* s, int sd, void* t, int td, int64_t n) {
    return cuda_kernels::convert(x(d), s, sd, t, td, n);
  }
  static int accumulate(TensoroptCudaDevice* d, void* t, int td, const void* s, int sd, int64_t n) {
    return cuda_kernels::accumulate(x(d), t, td, s, sd, n);
  }
  static int scale(TensoroptCudaDevice* d, float* a, int64_t n, float f) { return cuda_kernels::scale(x(d), a, n, f); }
  static int cross_entropy(TensoroptCudaDevice* d, const float* logits, const void* labels, int ld, int64_t rows, int64_t classes,
                           float* dlogits, double* loss) {
    return cuda_kernels::cross_entropy(x(d), logits, labels, ld, rows, classes, dlogits, loss);
  }
  static int mse(TensoroptCudaDevice* d, const float* y, const float* t, int64_t n, float* dy, double* loss) {
    return cuda_kernels::mse(x(d), y, t, n, dy, loss);
  }
  static int sgd(TensoroptCudaDevice* d, const TensoroptSgd* a) { return cuda_kernels::sgd(x(d), *a); }
  static int adam(TensoroptCudaDevice* d, const TensoroptAdam* a) { return cuda_kernels::adam(x(d), *a); }
  static int unary(TensoroptCudaDevice* d, int op, const void* in, int in_dtype, void* out, int out_dtype, int64_t n, float a,
                   float b) {
    return cuda_kernels::unary(x(d), op, in, in_dtype, out, out_dtype, n, a, b);
  }
  static int unary_backward(TensoroptCudaDevice* d, int op, const void* s, int s_dtype, const void* dy, int dy_dtype, float* dx,
                            int64_t n, float a, float b) {
    return cuda_kernels::unary_backward(x(d), op, s, s_dtype, dy, dy_dtype, dx, n, a, b);
  }
  static int binary(TensoroptCudaDevice* d, const TensoroptBinary* a) { return cuda_kernels::binary(x(d), *a); }
  static int binary_backward(TensoroptCudaDevice* d, const TensoroptBinary* a) { return cuda_kernels::binary_backward(x(d), *a); }
  static int sum_to(TensoroptCudaDevice* d, const TensoroptSumTo* a) { return cuda_kernels::sum_to(x(d), *a); }
  static int gemm(TensoroptCudaDevice* d, const TensoroptGemm* a) { return x(d).gemm(*a); }
  static int launch(TensoroptCudaDevice* d, const char* name, const void* args, size_t size) {
    return launch_by_name(x(d), family_kernels<Exec>(), name, args, size);
  }
};

template <class Exec>
TensoroptCudaDriver make_driver_table() {
  using F = DriverFunctions<Exec>;
  TensoroptCudaDriver t{};
  t.open = F::open;
  t.close = F::close;
  t.error = F::error;
  t.describe = F::describe;
  t.stream = F::stream;
  t.alloc = F::alloc;
  t.release = F::release;
  t.memory = F::memory;
  t.upload = F::upload;
  t.download = F::download;
  t.copy_rows = F::copy_rows;
  t.synchronize = F::synchronize;
  t.event_record = F::event_record;
  t.event_elapsed = F::event_elapsed;
  t.events_reset = F::events_reset;
  t.fill = F::fill;
  t.convert = F::convert;
  t.accumulate = F::accumulate;
  t.scale = F::scale;
  t.cross_entropy = F::cross_entropy;
  t.mse = F::mse;
  t.sgd = F::sgd;
  t.adam = F::adam;
  t.unary = F::unary;
  t.unary_backward = F::unary_backward;
  t.binary = F::binary;
  t.binary_backward = F::binary_backward;
  t.sum_to = F::sum_to;
  t.gemm = F::gemm;
  t.launch = F::launch;
  return t;
}

}  // namespace tensoropt::cuda_kernels
