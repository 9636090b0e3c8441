// Clip, Dropout and Cast on the CUDA backend, as the CPU's cpu/elementwise.cc (kernel sources:
// device/elementwise_misc.h). N = elements; x, y, dy, dx are [N]. Dropout and Cast read bfloat16
// as stored under mixed precision and write their outputs in the storage dtype (takes_bf16).
#include <cmath>
#include <cstdint>
#include <string>

#include "graph/dtype.h"
#include "launcher/runtime/cuda/elementwise_parts.h"

namespace tensoropt::runtime::cuda {
namespace {

using namespace cuda_kernels;  // EW_* codes

// ---- Clip(x, min?, max?): y = min(max(x, lo), hi); dx = dy where lo <= x <= hi, else 0. lo and
// hi are device scalars (inputs 1 and 2, read by the kernel: no wait), or the float attributes
// min and max (opset 6-10), or the dtype's lowest and highest. A float32 forward keeps [lo, hi]
// in its state (8 bytes) for the backward, which sees only x.
void clip_bound(const OpCall& c, size_t input, const char* attr, int* kind, const void** ptr, double* value) {
  if (input < c.in.size() && c.in[input]) {
    const Array& b = *c.in[input];
    if (b.numel() != 1 || b.dtype() != c.in[0]->dtype()) kernel_error(c.node, std::string(attr) + " is not a scalar of the input's dtype");
    *kind = EW_BOUND_POINTER;
    *ptr = b.raw();
  } else if (dtype_is_float(c.in[0]->dtype()) && c.node.attr(attr)) {
    *kind = EW_BOUND_VALUE;
    *value = c.node.attr_float(attr, 0);
  } else {
    *kind = EW_BOUND_LIMIT;
  }
}

void clip_forward(CudaBackend& be, const OpCall& c) {
  const DType t = c.in[0]->dtype();
  if (t != DType::F32 && t != DType::F64 && t != DType::I64 && t != DType::I32)
    kernel_error(c.node, "no CUDA kernel for " + std::string(dtype_name(t)) + " input");
  EwClipArgs args{};
  args.dtype = dtype_code(t);
  args.x = c.in[0]->raw();
  args.y = c.out[0]->raw();
  args.n = c.out[0]->numel();
  clip_bound(c, 1, "min", &args.lo_kind, &args.lo_ptr, &args.lo_value);
  clip_bound(c, 2, "max", &args.hi_kind, &args.hi_ptr, &args.hi_value);
  Array bounds;
  if (t == DType::F32) {
    bounds = Array(DType::F32, {2}, *c.ctx.allocator, MemoryKind::Activations);
    args.bounds = bounds.data<float>();
  }
  be.launch("ew_clip", args, c.node.op_type);
  if (bounds.defined()) c.state.saved = {bounds};
}

void clip_backward(CudaBackend& be, const GradCall& c) {
  require_f32(c.node, *c.in[0], "the input");
  require_f32(c.node, *c.dout[0], "the output gradient");
  EwClipBackwardArgs args{c.in[0]->data<float>(), c.dout[0]->data<float>(), c.din[0]->data<float>(),
                          c.state.saved.at(0).data<float>(), c.din[0]->numel()};
  be.launch("ew_clip_backward", args, c.node.op_type);
}

// ---- Dropout(data, ratio = 0.5, training_mode = false) -> (output, mask?), as the CPU's: active
// when the step trains, training_mode is true and ratio > 0; then element i is kept when the top
// 24 bits of splitmix64(key + i) are >= ratio·2^24, i its index in the whole tensor, so both
// backends (and every sharding) drop the same elements; y = x·(kept ? 1/(1 - ratio) : 0). The
// state keeps the mask (1 byte per element) and the scale (4 bytes). Inactive: y = x, the mask
// output all true, dx = dy. The ratio and training_mode scalars are read back from the device
// (they decide what the state keeps).
double float_scalar(CudaBackend& be, const Node& node, const Array& a, const char* what) {
  if (a.numel() != 1) kernel_error(node, std::string(what) + " is not a scalar");
  if (a.dtype() == DType::F32) {
    float v = 0;
    be.read(a, &v, sizeof v);
    return v;
  }
  if (a.dtype() == DType::F64) {
    double v = 0;
    be.read(a, &v, sizeof v);
    return v;
  }
  kernel_error(node, std::string(what) + " is " + std::string(dtype_name(a.dtype())) + ", not float32 or float64");
}

bool dropout_active(CudaBackend& be, const OpCall& c, double* ratio) {
  *ratio = 0.5;
  if (c.in.size() > 1 && c.in[1]) *ratio = float_scalar(be, c.node, *c.in[1], "ratio");
  if (!(*ratio >= 0 && *ratio <= 1)) kernel_error(c.node, "ratio " + std::to_string(*ratio) + " is outside [0, 1]");
  if (!c.ctx.training || c.in.size() < 3 || !c.in[2]) return false;
  const Array& mode = *c.in[2];
  if (mode.dtype() != DType::Bool || mode.numel() != 1) kernel_error(c.node, "training_mode is not a bool scalar");
  uint8_t on = 0;
  be.read(mode, &on, 1);
  return on != 0 && *ratio > 0;
}

void dropout_forward(CudaBackend& be, const OpCall& c) {
  const Array& x = *c.in[0];
  Array& y = *c.out[0];
  Array* mask_out = c.out.size() > 1 ? c.out[1] : nullptr;
  double ratio = 0;
  if (!dropout_active(be, c, &ratio)) {
    copy_or_cast(be, c.node, x, y);
    if (mask_out) be.fill(*mask_out, 1);
    return;
  }
  if (x.rank() > TO_MAX_RANK) kernel_error(c.node, "the CUDA kernels take at most " + std::to_string(TO_MAX_RANK) + " axes");
  Array mask(DType::Bool, x.shape(), *c.ctx.allocator, MemoryKind::Activations);
  Array scale(DType::F32, {1}, *c.ctx.allocator, MemoryKind::Activations);
  EwDropoutArgs args{};
  args.scale = ratio >= 1 ? 0.0f : static_cast<float>(1.0 / (1.0 - ratio));
  be.fill(scale, args.scale);
  args.threshold = static_cast<uint64_t>(std::llround(ratio * 16777216.0));
  args.key = splitmix64(splitmix64(splitmix64(c.ctx.seed) ^ static_cast<uint64_t>(c.ctx.step)) ^ static_cast<uint64_t>(c.node_index));
  args.x = x.raw();
  args.y = y.raw();
  args.x_dtype = require_float(c.node, x, "the input");
  args.y_dtype = require_float(c.node, y, "the output");
  args.mask = mask.data<uint8_t>();
  args.mask_out = mask_out ? mask_out->data<uint8_t>() : nullptr;
  args.n = x.numel();
  args.rank = x.rank();
  const Shape& global = c.shard ? c.shard->global[0] : x.shape();
  int64_t stride = 1;
  for (int d = x.rank() - 1; d >= 0; --d) {
    const auto a = static_cast<size_t>(d);
    args.shape[d] = x.dim(d);
    args.offset[d] = c.shard ? c.shard->offset[0][a] : 0;
    args.global_stride[d] = stride;
    stride *= global[a];
  }
  be.launch("ew_dropout", args, c.node.op_type);
  c.state.saved = {mask, scale};
}

void dropout_backward(CudaBackend& be, const GradCall& c) {
  if (c.state.saved.empty()) return copy_or_cast(be, c.node, *c.dout[0], *c.din[0]);
  EwDropoutBackwardArgs args{c.dout[0]->raw(), require_float(c.node, *c.dout[0], "the output gradient"), c.din[0]->data<float>(),
                             c.state.saved[0].data<uint8_t>(), c.state.saved[1].data<float>(), c.din[0]->numel()};
  be.launch("ew_dropout_backward", args, c.node.op_type);
}

// ---- Cast(to): y = x converted; a float32 result of a Cast to float16 or bfloat16 is rounded to
// that precision (the runtime keeps float tensors as float32). Between floats dx = dy converted
// back; nothing flows back through an integer or bool side.
void cast_forward(CudaBackend& be, const OpCall& c) {
  int round = EW_ROUND_NONE;
  const auto to = dtype_from_onnx(static_cast<int>(c.node.attr_int("to", 0)));
  const bool float_out = c.out[0]->dtype() == DType::F32 || c.out[0]->dtype() == DType::BF16;  // bfloat16: as stored
  if (float_out && to && *to == DType::F16) round = EW_ROUND_F16;
  if (c.out[0]->dtype() == DType::F32 && to && *to == DType::BF16) round = EW_ROUND_BF16;
  cast_array(be, c.node, *c.in[0], *c.out[0], round);
}

}  // namespace

void register_elementwise_misc(CudaBackend& be, KernelTable& table) {
  table["Clip"] = {[&be](const OpCall& c) { clip_forward(be, c); }, [&be](const GradCall& c) { clip_backward(be, c); }};
  // Dropout and Cast take bfloat16 as stored (OpKernel::takes_bf16); Clip reads float32 copies.
  OpKernel dropout{[&be](const OpCall& c) { dropout_forward(be, c); }, [&be](const GradCall& c) { dropout_backward(be, c); }};
  dropout.takes_bf16 = true;
  table["Dropout"] = std::move(dropout);
  OpKernel cast{[&be](const OpCall& c) { cast_forward(be, c); },
                [&be](const GradCall& c) { cast_array(be, c.node, *c.dout[0], *c.din[0]); }};
  cast.takes_bf16 = true;
  table["Cast"] = std::move(cast);
}

}  // namespace tensoropt::runtime::cuda
