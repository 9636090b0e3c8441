// DeviceExec's convolution (device/conv_args.h) on cuDNN 9's graph (backend) C API: per shape,
// one operation graph of one convolution operation (forward, backward-data or backward-filter),
// its engine configurations from the heuristics (mode A, then the fallback list), and the first
// that passes our numerics filter, fits the workspace cap and finalizes as an execution plan. Plans
// are cached per (direction, shape, window) for the device's lifetime; each call executes its
// plan with a variant pack of the three tensors and the caller's workspace, on the compute stream.
// The cuDNN handle is made at the first convolution, so a run without one never loads cuDNN's
// engines. Compiled only into the module.
//
// Numerics: float32 tensors, float32 compute type (CUDNN_ATTR_CONVOLUTION_COMP_TYPE), and engines
// whose numerical notes include TENSOR_CORE (TF32 for float32 data), DOWN_CONVERT_INPUTS,
// REDUCED_PRECISION_REDUCTION, FFT or any WINOGRAD are skipped: what remains are the direct and
// implicit-GEMM engines, whose float32 sums compare with the CPU backend's within 1e-4.
// NONDETERMINISTIC engines are allowed (as PyTorch's default): sums may round differently between
// runs. Workspace: at most kWorkspaceCap bytes per call, allocated by the host (conv.cc) through
// the run's allocator so measured memory counts it.
//
// What only a GPU can confirm (the host emulation runs conv_reference.h instead; the GPU check
// `scripts/gpu-check` compares every Conv and ConvTranspose case with the CPU backend):
//   - that the runtime cuDNN is at least 9.8, whose operation graphs and plans take no handle
//     (CUDNN_ATTR_OPERATIONGRAPH_HANDLE and _EXECUTION_PLAN_HANDLE are deprecated in the headers
//     and refused by our -Werror build); an older one is refused here by version, in one line;
//   - that the heuristics (A, else FALLBACK) offer, for every case, a float32 engine without the
//     notes above, within the workspace cap: fp32 1-D (as 2-D with a unit axis), 2-D and 3-D;
//     groups given only by W's channel count (C / (W's dim 1), as the backend API infers them),
//     depthwise included; dilations; strides; symmetric padding (conv.cc makes asymmetric and
//     negative padding explicit, so cuDNN sees pre = post);
//   - that alpha and beta as CUDNN_TYPE_FLOAT are accepted with float32 compute, beta = 0
//     overwrites (backward-filter and backward-data included), and the tensors' BYTE_ALIGNMENT
//     (the power of two up to 16 their addresses share, part of the plan's key) is honoured;
//   - that an engine's reported workspace suffices and execution is ordered on the stream set
//     with cudnnSetStream (no extra synchronisation), and that cudnnDestroy after the stream's
//     last work is clean.
// A shape no engine takes fails the call naming the direction, the shapes and the window.
#include <cudnn_graph.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "launcher/runtime/cuda/device/device_exec.cuh"

namespace tensoropt::cuda_kernels {
namespace {

constexpr int64_t kWorkspaceCap = int64_t{256} << 20;
constexpr int64_t kX = 1, kW = 2, kY = 3;  // tensor unique ids

// Makes descriptors and sets their attributes, keeping the first failure and every descriptor
// it made (`made`, in order), so a plan owns what it was built from.
struct Builder {
  std::vector<cudnnBackendDescriptor_t> made;
  std::string failure;

  bool check(cudnnStatus_t s, const char* what) {
    if (s == CUDNN_STATUS_SUCCESS || !failure.empty()) return s == CUDNN_STATUS_SUCCESS;
    char detail[512] = "";
    cudnnGetLastErrorString(detail, sizeof detail);
    failure = std::string(what) + ": " + cudnnGetErrorString(s) + (detail[0] ? std::string(" (") + detail + ")" : "");
    return false;
  }
  cudnnBackendDescriptor_t make(cudnnBackendDescriptorType_t type, const char* what) {
    cudnnBackendDescriptor_t d = nullptr;
    if (!failure.empty() || !check(cudnnBackendCreateDescriptor(type, &d), what)) return nullptr;
    made.push_back(d);
    return d;
  }
  void set(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count,
           const void* values, const char* what) {
    if (failure.empty()) check(cudnnBackendSetAttribute(d, name, type, count, values), what);
  }
  void finalize(cudnnBackendDescriptor_t d, const char* what) {
    if (failure.empty()) check(cudnnBackendFinalize(d), what);
  }
  void release() {
    for (auto it = made.rbegin(); it != made.rend(); ++it) cudnnBackendDestroyDescriptor(*it);
    made.clear();
  }
};

// A dense float32 tensor of `dims`, row-major, at an address `alignment` divides.
cudnnBackendDescriptor_t tensor(Builder& b, int64_t uid, const std::vector<int64_t>& dims, int64_t alignment) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t i = dims.size() - 1; i-- > 0;) strides[i] = strides[i + 1] * dims[i + 1];
  const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
  const auto n = static_cast<int64_t>(dims.size());
  cudnnBackendDescriptor_t t = b.make(CUDNN_BACKEND_TENSOR_DESCRIPTOR, "a tensor descriptor");
  b.set(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f32, "the tensor's data type");
  b.set(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, n, dims.data(), "the tensor's dimensions");
  b.set(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, n, strides.data(), "the tensor's strides");
  b.set(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid, "the tensor's id");
  b.set(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment, "the tensor's alignment");
  b.finalize(t, "a tensor descriptor");
  return t;
}

// [a, b, the last `spatial` of v].
std::vector<int64_t> dims_of(int64_t a, int64_t b, const int64_t* v, int spatial) {
  std::vector<int64_t> d = {a, b};
  for (int i = 3 - spatial; i < 3; ++i) d.push_back(v[i]);
  return d;
}

// The largest power of two up to 16 that divides the addresses of `a`'s tensors (views of an
// array may start anywhere a float does).
int64_t alignment_of(const ConvArgs& a) {
  uintptr_t bits = 16;
  for (const void* p : {static_cast<const void*>(a.x), static_cast<const void*>(a.w), static_cast<const void*>(a.y),
                        static_cast<const void*>(a.result)})
    bits |= reinterpret_cast<uintptr_t>(p);
  return static_cast<int64_t>(bits & (~bits + 1));
}

// The operation graph of `a`'s convolution; its descriptors stay in `b`.
cudnnBackendDescriptor_t operation_graph(Builder& b, const ConvArgs& a) {
  const int sp = a.spatial;
  const int64_t align = alignment_of(a);
  cudnnBackendDescriptor_t x = tensor(b, kX, dims_of(a.n, a.c, a.in, sp), align);
  cudnnBackendDescriptor_t w = tensor(b, kW, dims_of(a.m, a.c / a.groups, a.kernel, sp), align);
  cudnnBackendDescriptor_t y = tensor(b, kY, dims_of(a.n, a.m, a.out, sp), align);

  const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  const int64_t spatial = sp;
  cudnnBackendDescriptor_t conv = b.make(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, "the convolution descriptor");
  b.set(conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f32, "the compute type");
  b.set(conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode, "the convolution mode");
  b.set(conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &spatial, "the spatial dimensions");
  b.set(conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, spatial, a.dilation + 3 - sp, "the dilations");
  b.set(conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, spatial, a.stride + 3 - sp, "the strides");
  b.set(conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, spatial, a.pad + 3 - sp, "the pre-paddings");
  b.set(conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, spatial, a.pad + 3 - sp, "the post-paddings");
  b.finalize(conv, "the convolution descriptor");

  const float one = 1.0f, zero = 0.0f;
  const auto desc = CUDNN_TYPE_BACKEND_DESCRIPTOR;
  cudnnBackendDescriptor_t op = nullptr;
  if (a.direction == TO_CONV_FORWARD) {
    op = b.make(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, "the forward operation");
    b.set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &one, "alpha");
    b.set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &zero, "beta");
    b.set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, desc, 1, &conv, "the convolution");
    b.set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, desc, 1, &w, "W");
    b.set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, desc, 1, &x, "X");
    b.set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, desc, 1, &y, "Y");
  } else if (a.direction == TO_CONV_BACKWARD_DATA) {
    op = b.make(CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR, "the backward-data operation");
    b.set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA, CUDNN_TYPE_FLOAT, 1, &one, "alpha");
    b.set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA, CUDNN_TYPE_FLOAT, 1, &zero, "beta");
    b.set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC, desc, 1, &conv, "the convolution");
    b.set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, desc, 1, &w, "W");
    b.set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, desc, 1, &x, "dX");
    b.set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, desc, 1, &y, "dY");
  } else {
    op = b.make(CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR, "the backward-filter operation");
    b.set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA, CUDNN_TYPE_FLOAT, 1, &one, "alpha");
    b.set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA, CUDNN_TYPE_FLOAT, 1, &zero, "beta");
    b.set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC, desc, 1, &conv, "the convolution");
    b.set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW, desc, 1, &w, "dW");
    b.set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X, desc, 1, &x, "X");
    b.set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY, desc, 1, &y, "dY");
  }
  b.finalize(op, "the convolution operation");

  cudnnBackendDescriptor_t graph = b.make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, "the operation graph");
  b.set(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, desc, 1, &op, "the graph's operation");
  b.finalize(graph, "the operation graph");
  return graph;
}

// Whether the engine of configuration `cfg` computes float32 as float32 (no TF32, no reduced
// precision, no transform-based algorithm): the header's numerics.
bool precise(cudnnBackendDescriptor_t cfg) {
  cudnnBackendDescriptor_t engine = nullptr;
  if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &engine) != CUDNN_STATUS_SUCCESS) return false;
  int64_t count = 0;
  cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
  bool ok = cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &count, &engine) ==
                CUDNN_STATUS_SUCCESS &&
            cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                                     CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &count, notes) == CUDNN_STATUS_SUCCESS;
  for (int64_t i = 0; ok && i < count && i < CUDNN_NUMERICAL_NOTE_TYPE_COUNT; ++i) {
    switch (notes[i]) {
      case CUDNN_NUMERICAL_NOTE_TENSOR_CORE:
      case CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS:
      case CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION:
      case CUDNN_NUMERICAL_NOTE_FFT:
      case CUDNN_NUMERICAL_NOTE_WINOGRAD:
      case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_4x4:
      case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_6x6:
      case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_13x13: ok = false; break;
      default: break;
    }
  }
  cudnnBackendDestroyDescriptor(engine);
  return ok;
}

// The engine configurations heuristics `mode` offers for `graph`, in its order of preference;
// the caller destroys them.
std::vector<cudnnBackendDescriptor_t> engine_configs(cudnnBackendDescriptor_t graph, cudnnBackendHeurMode_t mode) {
  std::vector<cudnnBackendDescriptor_t> cfgs;
  Builder b;
  cudnnBackendDescriptor_t heur = b.make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, "the heuristics");
  b.set(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph, "the heuristics' graph");
  b.set(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode, "the heuristics' mode");
  b.finalize(heur, "the heuristics");
  int64_t count = 0;
  if (b.failure.empty() &&
      cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr) ==
          CUDNN_STATUS_SUCCESS) {
    for (int64_t i = 0; i < count; ++i) {
      cudnnBackendDescriptor_t cfg = nullptr;
      if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &cfg) != CUDNN_STATUS_SUCCESS) break;
      cfgs.push_back(cfg);
    }
    int64_t got = 0;
    if (cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                 static_cast<int64_t>(cfgs.size()), &got, cfgs.data()) != CUDNN_STATUS_SUCCESS)
      got = 0;
    while (static_cast<int64_t>(cfgs.size()) > got) {
      cudnnBackendDestroyDescriptor(cfgs.back());
      cfgs.pop_back();
    }
  }
  b.release();
  return cfgs;
}

std::string shape_text(const int64_t* v, int64_t a, int64_t b, int spatial) {
  std::string s = "[" + std::to_string(a) + "," + std::to_string(b);
  for (int i = 3 - spatial; i < 3; ++i) s += "," + std::to_string(v[i]);
  return s + "]";
}

std::string conv_text(const ConvArgs& a) {
  const char* what[] = {"forward", "backward-data", "backward-filter"};
  std::string s = std::string("a float32 ") + what[a.direction] + " convolution of X " + shape_text(a.in, a.n, a.c, a.spatial) +
                  ", W " + shape_text(a.kernel, a.m, a.c / a.groups, a.spatial) + ", Y " + shape_text(a.out, a.n, a.m, a.spatial) +
                  " (stride, dilation, pad:";
  for (int i = 3 - a.spatial; i < 3; ++i)
    s += " " + std::to_string(a.stride[i]) + "/" + std::to_string(a.dilation[i]) + "/" + std::to_string(a.pad[i]);
  return s + ")";
}

}  // namespace

// The handle and the plans of one device.
struct DeviceExec::CudnnConv {
  struct Plan {
    Builder owned;  // the graph's descriptors, the engine configuration and the plan
    cudnnBackendDescriptor_t plan = nullptr;
    int64_t workspace = 0;
  };
  cudnnHandle_t handle = nullptr;
  std::map<std::vector<int64_t>, Plan> plans;

  ~CudnnConv() {
    for (auto& [key, p] : plans) p.owned.release();
    if (handle) cudnnDestroy(handle);
  }
};

void DeviceExec::CudnnConvDeleter::operator()(CudnnConv* c) const { delete c; }

int DeviceExec::conv_plan(const ConvArgs& a, int64_t* workspace, void** plan) {
  if (a.direction < TO_CONV_FORWARD || a.direction > TO_CONV_BACKWARD_FILTER || a.spatial < 2 || a.spatial > 3)
    return fail("conv: a direction or spatial rank out of range");
  if (!cudnn_) {
    if (cudnnGetVersion() < 90800)
      return fail("cuDNN " + std::to_string(cudnnGetVersion()) + " is loaded; convolutions need cuDNN 9.8 or later");
    std::unique_ptr<CudnnConv, CudnnConvDeleter> made(new CudnnConv);
    if (cudnnCreate(&made->handle) != CUDNN_STATUS_SUCCESS) return fail("cudnnCreate failed");
    if (cudnnSetStream(made->handle, stream_) != CUDNN_STATUS_SUCCESS) return fail("cudnnSetStream failed");
    cudnn_ = std::move(made);
  }
  std::vector<int64_t> key = {a.direction, a.spatial, a.n, a.c, a.m, a.groups, alignment_of(a)};
  for (const int64_t* v : {a.in, a.out, a.kernel, a.stride, a.dilation, a.pad}) key.insert(key.end(), v, v + 3);
  if (auto it = cudnn_->plans.find(key); it != cudnn_->plans.end()) {
    *workspace = it->second.workspace;
    *plan = it->second.plan;
    return TO_CUDA_OK;
  }
  CudnnConv::Plan p;
  cudnnBackendDescriptor_t graph = operation_graph(p.owned, a);
  if (!p.owned.failure.empty()) {
    const std::string why = p.owned.failure;
    p.owned.release();
    return fail("cuDNN refused " + conv_text(a) + ": " + why);
  }
  for (cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    std::vector<cudnnBackendDescriptor_t> cfgs = engine_configs(graph, mode);
    for (cudnnBackendDescriptor_t& cfg : cfgs) {
      if (p.plan || !precise(cfg)) continue;
      cudnnBackendDescriptor_t candidate = nullptr;
      int64_t bytes = 0;
      const bool built = cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &candidate) == CUDNN_STATUS_SUCCESS &&
                         cudnnBackendSetAttribute(candidate, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                                  &cfg) == CUDNN_STATUS_SUCCESS &&
                         cudnnBackendFinalize(candidate) == CUDNN_STATUS_SUCCESS &&
                         cudnnBackendGetAttribute(candidate, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, nullptr,
                                                  &bytes) == CUDNN_STATUS_SUCCESS;
      if (!built || bytes < 0 || bytes > kWorkspaceCap) {
        if (candidate) cudnnBackendDestroyDescriptor(candidate);
        continue;
      }
      p.owned.made.push_back(cfg);  // the plan's: kept with it
      p.owned.made.push_back(candidate);
      cfg = nullptr;
      p.plan = candidate;
      p.workspace = bytes;
    }
    for (cudnnBackendDescriptor_t cfg : cfgs) {
      if (cfg) cudnnBackendDestroyDescriptor(cfg);
    }
    if (p.plan) break;
  }
  if (!p.plan) {
    p.owned.release();
    return fail("cuDNN has no float32 engine (without TF32, FFT or Winograd, workspace at most " + std::to_string(kWorkspaceCap >> 20) +
                " MiB) for " + conv_text(a));
  }
  *workspace = p.workspace;
  *plan = p.plan;
  cudnn_->plans.emplace(std::move(key), std::move(p));
  return TO_CUDA_OK;
}

int DeviceExec::conv_workspace(const ConvArgs& a) {
  void* plan = nullptr;
  return conv_plan(a, a.workspace_needed, &plan);
}

int DeviceExec::conv(const ConvArgs& a) {
  int64_t needed = 0;
  void* plan = nullptr;
  if (int s = conv_plan(a, &needed, &plan)) return s;
  if (a.workspace_bytes < needed)
    return fail("conv: " + std::to_string(a.workspace_bytes) + " bytes of workspace given, the plan needs " + std::to_string(needed));
  void* data[3] = {const_cast<float*>(a.x), const_cast<float*>(a.w), const_cast<float*>(a.y)};
  data[a.direction == TO_CONV_FORWARD ? 2 : a.direction == TO_CONV_BACKWARD_DATA ? 0 : 1] = a.result;
  for (void* d : data) {
    if (!d) return fail("conv: a tensor of " + conv_text(a) + " is null");
  }
  const int64_t uids[3] = {kX, kW, kY};
  void* workspace = a.workspace;
  Builder b;
  cudnnBackendDescriptor_t pack = b.make(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, "the variant pack");
  b.set(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, data, "the tensors");
  b.set(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids, "the tensor ids");
  b.set(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace, "the workspace");
  b.finalize(pack, "the variant pack");
  if (b.failure.empty()) b.check(cudnnBackendExecute(cudnn_->handle, static_cast<cudnnBackendDescriptor_t>(plan), pack), "cudnnBackendExecute");
  b.release();
  return b.failure.empty() ? TO_CUDA_OK : fail("cuDNN " + conv_text(a) + ": " + b.failure);
}

}  // namespace tensoropt::cuda_kernels
