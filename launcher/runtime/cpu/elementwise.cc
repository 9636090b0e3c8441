// Elementwise kernels (graph/ops/elementwise.cc): Clip, Dropout, Cast and Identity here; unary
// maths and activations in elementwise_unary.cc, arithmetic with numpy broadcasting in
// elementwise_binary.cc, comparisons, logic and Where in elementwise_logic.cc, the loops they share
// in elementwise_loops.h. N = elements of the output; x, y, dy, dx are [N].
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include "launcher/runtime/cpu/elementwise_loops.h"
#include "launcher/runtime/cpu/elementwise_parts.h"
#include "launcher/runtime/cpu/kernels.h"

namespace tensoropt::runtime::cpu {
namespace {

// dst = src, byte for byte (same size).
void copy_bytes(const Array& src, Array& dst, int threads) {
  const char* s = static_cast<const char*>(src.raw());
  char* d = static_cast<char*>(dst.raw());
  parallel_for(src.bytes(), 1 << 18, threads, [&](int64_t lo, int64_t hi) {
    std::memcpy(d + lo, s + lo, static_cast<size_t>(hi - lo));
  });
}

// The single value of a float scalar input (ratio); a kernel_error unless it is one float.
double float_scalar(const Node& node, const Array& a, const char* what) {
  if (a.numel() != 1) kernel_error(node, std::string(what) + " is not a scalar");
  if (a.dtype() == DType::F32) return a.data<float>()[0];
  if (a.dtype() == DType::F64) return a.data<double>()[0];
  kernel_error(node, std::string(what) + " is " + std::string(dtype_name(a.dtype())) + ", not float32 or float64");
}

// ---- Clip(x, min?, max?): y = min(max(x, lo), hi) (NaN stays NaN; lo > hi gives hi everywhere);
// dx = dy where lo <= x <= hi, else 0, as PyTorch's clamp. lo and hi are inputs 1 and 2 (opset
// 11+), or the float attributes min and max (opset 6-10); absent, the dtype's lowest and highest
// value (ONNX). Backward sees only x (the catalogue saves the input), so a float32 forward keeps
// [lo, hi] in its state: 8 bytes.
template <class T>
T clip_bound(const OpCall& c, size_t input, const char* attr, T fallback) {
  if (input < c.in.size() && c.in[input]) {
    const Array& b = *c.in[input];
    if (b.numel() != 1 || b.dtype() != c.in[0]->dtype()) {
      kernel_error(c.node, std::string(attr) + " is not a scalar of the input's dtype");
    }
    return b.data<T>()[0];
  }
  if constexpr (std::is_floating_point_v<T>) return static_cast<T>(c.node.attr_float(attr, static_cast<double>(fallback)));
  else return fallback;
}

template <class T>
void clip_values(const OpCall& c) {
  const T lo = clip_bound<T>(c, 1, "min", std::numeric_limits<T>::lowest());
  const T hi = clip_bound<T>(c, 2, "max", std::numeric_limits<T>::max());
  const T* x = c.in[0]->data<T>();
  T* y = c.out[0]->data<T>();
  parallel_for(c.out[0]->numel(), kElementwiseGrain, c.ctx.threads, [&](int64_t lo_i, int64_t hi_i) {
#pragma omp simd
    for (int64_t i = lo_i; i < hi_i; ++i) {
      const T v = pick(x[i] < lo, lo, x[i]);
      y[i] = pick(v > hi, hi, v);
    }
  });
  if constexpr (std::is_same_v<T, float>) {
    Array bounds(DType::F32, {2}, *c.ctx.allocator, MemoryKind::Activations);
    bounds.data<float>()[0] = lo;
    bounds.data<float>()[1] = hi;
    c.state.saved = {bounds};
  }
}

void clip_forward(const OpCall& c) {
  switch (c.in[0]->dtype()) {
    case DType::F32: return clip_values<float>(c);
    case DType::F64: return clip_values<double>(c);
    case DType::I64: return clip_values<int64_t>(c);
    case DType::I32: return clip_values<int32_t>(c);
    default: kernel_error(c.node, "no CPU kernel for " + std::string(dtype_name(c.in[0]->dtype())) + " input");
  }
}

void clip_backward(const GradCall& c) {
  require_f32(c.node, *c.in[0], "the input");
  require_f32(c.node, *c.dout[0], "the output gradient");
  const float lo = c.state.saved.at(0).data<float>()[0], hi = c.state.saved.at(0).data<float>()[1];
  const float* x = c.in[0]->data<float>();
  const float* dy = c.dout[0]->data<float>();
  float* dx = c.din[0]->data<float>();
  parallel_for(c.din[0]->numel(), kElementwiseGrain, c.ctx.threads, [&](int64_t lo_i, int64_t hi_i) {
#pragma omp simd
    for (int64_t i = lo_i; i < hi_i; ++i) {
      const float v = x[i], g = dy[i];
      dx[i] = pick((v >= lo) & (v <= hi), g, 0.0f);
    }
  });
}

// ---- Dropout(data, ratio = 0.5, training_mode = false) -> (output, mask?). Active when the step
// trains (StepContext::training), training_mode is true and ratio > 0 (the catalogue's rule; the
// opset 7-11 forms have no training_mode and are always inactive). Active: element i is kept when
// the top 24 bits of hash(seed, step, node, i) are >= ratio·2^24, with i the element's index in
// the whole tensor (a worker's shard reads its offsets in OpCall::shard), so every sharding draws
// the one-device mask; y = x·(kept ? 1/(1 - ratio) : 0) and dx = dy·(kept ? 1/(1 - ratio) : 0),
// multiplied as PyTorch does (ratio = 1 drops everything). The state keeps the mask (1 byte per
// element) and the scale (4 bytes). Inactive: y = x, the mask output all true, dx = dy.
uint64_t splitmix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The rows along the last axis of a (local) tensor of `shape` and, with `shard`, where each row
// starts in the whole tensor (input 0's global shape and offsets); without it the tensor is whole.
struct GlobalRows {
  int64_t count = 1, length = 1;
  Shape local, global;
  std::vector<int64_t> offset;
  GlobalRows(const Shape& shape, const ShardInfo* shard) : local(shape) {
    length = shape.empty() ? 1 : shape.back();
    count = length > 0 ? numel(shape) / length : 0;
    global = shard ? shard->global[0] : shape;
    offset = shard ? shard->offset[0] : std::vector<int64_t>(shape.size(), 0);
  }
  // The whole tensor's linear index of local row r's first element.
  int64_t global_start(int64_t r) const {
    int64_t index = 0, stride = 1;
    for (size_t a = local.size(); a-- > 0;) {
      const int64_t k = a + 1 == local.size() ? 0 : r % local[a];
      if (a + 1 != local.size()) r /= local[a];
      index += (k + offset[a]) * stride;
      stride *= global[a];
    }
    return index;
  }
};

bool dropout_active(const OpCall& c, double* ratio) {
  *ratio = 0.5;
  if (c.in.size() > 1 && c.in[1]) *ratio = float_scalar(c.node, *c.in[1], "ratio");
  if (!(*ratio >= 0 && *ratio <= 1)) kernel_error(c.node, "ratio " + std::to_string(*ratio) + " is outside [0, 1]");
  if (!c.ctx.training || c.in.size() < 3 || !c.in[2]) return false;
  const Array& mode = *c.in[2];
  if (mode.dtype() != DType::Bool || mode.numel() != 1) kernel_error(c.node, "training_mode is not a bool scalar");
  return mode.data<uint8_t>()[0] != 0 && *ratio > 0;
}

void dropout_forward(const OpCall& c) {
  const Array& x = *c.in[0];
  Array& y = *c.out[0];
  Array* mask_out = c.out.size() > 1 ? c.out[1] : nullptr;
  double ratio = 0;
  if (!dropout_active(c, &ratio)) {
    copy_bytes(x, y, c.ctx.threads);
    if (mask_out) std::memset(mask_out->raw(), 1, static_cast<size_t>(mask_out->bytes()));
    return;
  }
  require_f32(c.node, x, "the input");
  Array mask(DType::Bool, x.shape(), *c.ctx.allocator, MemoryKind::Activations);
  Array scale(DType::F32, {1}, *c.ctx.allocator, MemoryKind::Activations);
  const float s = ratio >= 1 ? 0.0f : static_cast<float>(1.0 / (1.0 - ratio));
  scale.data<float>()[0] = s;
  const uint64_t threshold = static_cast<uint64_t>(std::llround(ratio * 16777216.0));
  const uint64_t key = splitmix64(splitmix64(splitmix64(c.ctx.seed) ^ static_cast<uint64_t>(c.ctx.step)) ^
                                  static_cast<uint64_t>(c.node_index));
  const float* px = x.data<float>();
  float* py = y.data<float>();
  uint8_t* pm = mask.data<uint8_t>();
  // Row by row along the last axis: a row's elements are consecutive in the whole tensor too.
  const GlobalRows rows(x.shape(), c.shard);
  parallel_for(rows.count, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, rows.length)), c.ctx.threads,
               [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const uint64_t first = key + static_cast<uint64_t>(rows.global_start(r));
      for (int64_t j = 0, i = r * rows.length; j < rows.length; ++j, ++i) {
        const bool keep = (splitmix64(first + static_cast<uint64_t>(j)) >> 40) >= threshold;
        pm[i] = keep;
        py[i] = px[i] * pick(keep, s, 0.0f);
      }
    }
  });
  if (mask_out) copy_bytes(mask, *mask_out, c.ctx.threads);
  c.state.saved = {mask, scale};
}

void dropout_backward(const GradCall& c) {
  if (c.state.saved.empty()) return copy_bytes(*c.dout[0], *c.din[0], c.ctx.threads);
  const uint8_t* mask = c.state.saved[0].data<uint8_t>();
  const float s = c.state.saved[1].data<float>()[0];
  const float* dy = c.dout[0]->data<float>();
  float* dx = c.din[0]->data<float>();
  parallel_for(c.din[0]->numel(), kElementwiseGrain, c.ctx.threads, [&](int64_t lo, int64_t hi) {
#pragma omp simd
    for (int64_t i = lo; i < hi; ++i) dx[i] = dy[i] * pick(mask[i] != 0, s, 0.0f);
  });
}

// ---- Cast(to): y = x converted (convert() in elementwise_loops.h); between float dtypes
// dx = dy converted back. Nothing flows back through an integer or bool side.
// The runtime holds every float tensor as float32 (array.h): a Cast to float16 or bfloat16
// rounds the values to that type's precision, as the model asks, and keeps them in float32.
float round_to_half(float v, bool bf16) {
  if (bf16) return bf16_to_float(float_to_bf16(v));
  if (!std::isfinite(v)) return v;
  float a = std::fabs(v);
  if (a >= 65520.0f) return std::copysign(INFINITY, v);  // past float16's largest, 65504
  int e = 0;
  std::frexp(a, &e);
  // float16 keeps 10 mantissa bits; below 2^-14 its quantum stays 2^-24 (subnormals).
  float quantum = std::ldexp(1.0f, std::max(e - 1, -14) - 10);
  return std::copysign(std::nearbyint(a / quantum) * quantum, v);
}

void cast_forward(const OpCall& c) {
  convert(c.node, *c.in[0], *c.out[0], c.ctx.threads);
  auto to = dtype_from_onnx(static_cast<int>(c.node.attr_int("to", 0)));
  if (c.out[0]->dtype() == DType::F32 && to && (*to == DType::F16 || *to == DType::BF16)) {
    float* y = c.out[0]->data<float>();
    const bool bf16 = *to == DType::BF16;
    parallel_for(c.out[0]->numel(), 1 << 14, c.ctx.threads, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) y[i] = round_to_half(y[i], bf16);
    });
  }
}
void cast_backward(const GradCall& c) { convert(c.node, *c.dout[0], *c.din[0], c.ctx.threads); }

// ---- Identity: y is a view of x (aliases_input: the executor makes it); dx = dy.
void identity_backward(const GradCall& c) { copy_bytes(*c.dout[0], *c.din[0], c.ctx.threads); }

}  // namespace

void register_elementwise(KernelTable& table) {
  register_elementwise_unary(table);
  register_elementwise_binary(table);
  register_elementwise_logic(table);
  table["Clip"] = {clip_forward, clip_backward};
  table["Dropout"] = {dropout_forward, dropout_backward};
  table["Cast"] = {cast_forward, cast_backward};
  table["Identity"] = {[](const OpCall&) {}, identity_backward, /*aliases_input=*/true};
}

}  // namespace tensoropt::runtime::cpu
