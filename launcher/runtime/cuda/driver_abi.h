// The CUDA driver table: every device operation the CUDA backend (backend.h) performs, as plain C
// functions over an opaque device handle, exported by the CUDA module (module_abi.h's `driver`).
// The backend's host logic (shapes, attributes, broadcasting, which kernel for which node) lives in
// the tensoropt binary and includes no CUDA header; the module does only what needs the GPU:
// memory, copies, kernel launches and the cuBLASLt calls. The same table is built a second time on
// the host (device/host_exec.h) from the same kernel sources, which is how the CPU suite checks the
// GPU's maths on every CI run (tests/launcher/runtime/test_cuda_emulated.cc).
//
// Conventions.
//   - Every pointer argument that names tensor data is a DEVICE pointer of this device, except
//     `host` arguments of the copies. Element counts are int64_t.
//   - dtypes are tensoropt's DType values (graph/dtype.h), as int: TO_DTYPE_* below.
//   - Every function but `open`, `close` and `error` returns TO_CUDA_OK, or TO_CUDA_OUT_OF_MEMORY
//     (alloc only), or TO_CUDA_FAILED; after a failure `error` gives the reason (the CUDA runtime's
//     or cuBLAS's text and the call that failed). Kernels run in order on the device's compute
//     stream and return at once; a launch failure is reported by the launch, a fault inside a
//     kernel by the next call that waits (download, synchronize, a loss).
//   - One thread at a time per device handle.
// The table is versioned by TENSOROPT_CUDA_ABI_HASH (a hash of this header, module_abi.h and the
// kernel sources of device/, whose argument structs cross the table too, that the build computes), which the loader compares with its own: a module from another build is
// refused, never called.
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { TO_CUDA_OK = 0, TO_CUDA_OUT_OF_MEMORY = 1, TO_CUDA_FAILED = 2 };

// tensoropt's DType values (graph/dtype.h; backend.cc static_asserts they agree).
enum { TO_DTYPE_F32 = 1, TO_DTYPE_BF16 = 3, TO_DTYPE_F64 = 4, TO_DTYPE_I32 = 7, TO_DTYPE_I64 = 8, TO_DTYPE_U8 = 9, TO_DTYPE_BOOL = 13 };

// Unary float maths (computed in float32), one code per ONNX op (device/unary.h says what each
// computes and which of x or y its backward reads). alpha and beta carry the attributes:
// LeakyRelu, Elu, Celu and ThresholdedRelu alpha; Selu alpha, gamma; HardSigmoid alpha, beta;
// Shrink bias, lambd.
enum {
  TO_UNARY_RELU, TO_UNARY_LEAKY_RELU, TO_UNARY_SIGMOID, TO_UNARY_TANH, TO_UNARY_ERF, TO_UNARY_EXP, TO_UNARY_LOG,
  TO_UNARY_SQRT, TO_UNARY_RECIPROCAL, TO_UNARY_NEG, TO_UNARY_ABS, TO_UNARY_FLOOR, TO_UNARY_CEIL, TO_UNARY_ROUND,
  TO_UNARY_SIGN, TO_UNARY_SOFTPLUS, TO_UNARY_ELU, TO_UNARY_SELU, TO_UNARY_HARD_SIGMOID, TO_UNARY_HARD_SWISH,
  TO_UNARY_SIN, TO_UNARY_COS, TO_UNARY_SOFTSIGN, TO_UNARY_CELU, TO_UNARY_THRESHOLDED_RELU, TO_UNARY_MISH,
  TO_UNARY_SHRINK, TO_UNARY_TAN, TO_UNARY_ATAN, TO_UNARY_ASIN, TO_UNARY_ACOS, TO_UNARY_SINH, TO_UNARY_COSH,
  TO_UNARY_GELU, TO_UNARY_GELU_TANH, TO_UNARY_SILU, TO_UNARY_COUNT
};
// Binary float arithmetic with numpy broadcasting (computed in float32).
enum { TO_BINARY_ADD, TO_BINARY_SUB, TO_BINARY_MUL, TO_BINARY_DIV, TO_BINARY_POW, TO_BINARY_MIN, TO_BINARY_MAX, TO_BINARY_COUNT };

#define TO_MAX_RANK 8

// An operand of a broadcast: its element strides per output axis (0 along broadcast axes).
struct TensoroptBroadcast {
  int rank;                          // of the output, <= TO_MAX_RANK
  int64_t shape[TO_MAX_RANK];        // the output's
  int64_t a_stride[TO_MAX_RANK];
  int64_t b_stride[TO_MAX_RANK];
};

// out[i] = op(a[..], b[..]) over the broadcast output; and its backward: da_full[i] and
// db_full[i], the per-output-element gradient terms (each may be null), which the caller sums to
// the operands' shapes with `sum_to`. a, b, out and dout are float32 or bfloat16 each (their
// TO_DTYPE_*: bfloat16 as stored under mixed precision), computed in float32; the terms float32.
struct TensoroptBinary {
  int op;
  const void* a;
  const void* b;
  void* out;
  const void* dout;    // backward only
  float* da_full;      // backward only, output-shaped
  float* db_full;      // backward only, output-shaped
  int a_dtype, b_dtype, out_dtype, dout_dtype;
  struct TensoroptBroadcast shape;
};

// dst[j] = sum of src over the axes where dst_stride is 0: src is `rank`-d of `shape` (row-major),
// dst element of src coordinate c is at sum(c[k] * dst_stride[k]). src float32 or bfloat16
// (src_dtype), summed in float32.
struct TensoroptSumTo {
  const void* src;
  int src_dtype;
  float* dst;
  int64_t dst_count;
  struct TensoroptBroadcast shape;  // shape = src's; a_stride = dst's strides; b_stride unused
};

// Row-major C[batch][m][n] = alpha * op(A)[batch][m][k] * op(B)[batch][k][n] + beta * C with
// float32 accumulation (no TF32). A is [m][k] (or [k][m] when trans_a), B [k][n] (or [n][k] when
// trans_b). A batch stride (in elements) of 0 repeats that operand. Element types: A and B both
// float32 or both bfloat16 (TO_DTYPE_*), C float32 or bfloat16.
struct TensoroptGemm {
  int64_t batch, m, n, k;
  int trans_a, trans_b;
  const void* a;
  const void* b;
  void* c;
  int64_t stride_a, stride_b, stride_c;
  float alpha, beta;
  int dtype_ab, dtype_c;
};

struct TensoroptAdam {
  float* weight;
  const float* grad;
  float* m;
  float* v;
  int64_t n;
  float beta1, beta2, eps, weight_decay, step_size, bias_correction2_sqrt, decay;
  int decoupled;
};

struct TensoroptSgd {
  float* weight;
  const float* grad;
  float* momentum;  // null when momentum == 0
  int64_t n;
  float lr, momentum_factor, weight_decay;
  int first_step;
};

typedef struct TensoroptCudaDevice TensoroptCudaDevice;

struct TensoroptCudaDriver {
  // The device `ordinal` (among those visible), its compute stream and library handles; null with
  // the reason in `why` when it cannot be had.
  TensoroptCudaDevice* (*open)(int ordinal, char* why, size_t size);
  void (*close)(TensoroptCudaDevice* dev);
  // The last failure's reason (module_abi.h's string convention).
  size_t (*error)(TensoroptCudaDevice* dev, char* text, size_t size);
  // "key: value" lines: name, compute capability, memory, SMs.
  size_t (*describe)(TensoroptCudaDevice* dev, char* text, size_t size);
  // The compute stream (a cudaStream_t), for a communicator to order its work after.
  void* (*stream)(TensoroptCudaDevice* dev);

  // Memory, ordered on the compute stream.
  int (*alloc)(TensoroptCudaDevice* dev, int64_t bytes, void** out);
  int (*release)(TensoroptCudaDevice* dev, void* p);
  int (*memory)(TensoroptCudaDevice* dev, int64_t* free_bytes, int64_t* total_bytes);
  int (*upload)(TensoroptCudaDevice* dev, void* dst, const void* host, int64_t bytes);    // returns when copied
  int (*download)(TensoroptCudaDevice* dev, void* host, const void* src, int64_t bytes);  // waits for the stream
  // `rows` rows of `width` bytes from src (rows `src_pitch` bytes apart) to dst (`dst_pitch`).
  int (*copy_rows)(TensoroptCudaDevice* dev, void* dst, int64_t dst_pitch, const void* src, int64_t src_pitch, int64_t width,
                   int64_t rows);
  int (*synchronize)(TensoroptCudaDevice* dev);
  // Timing (run --kernel-times): an event recorded on the compute stream, numbered from 0 since the
  // last events_reset; the milliseconds between two of them (waits for the later).
  int (*event_record)(TensoroptCudaDevice* dev, int64_t* id);
  int (*event_elapsed)(TensoroptCudaDevice* dev, int64_t from, int64_t to, float* ms);
  int (*events_reset)(TensoroptCudaDevice* dev);

  // The backend's primitives (backend.h says what each computes).
  int (*fill)(TensoroptCudaDevice* dev, void* p, int dtype, int64_t n, double value);
  int (*convert)(TensoroptCudaDevice* dev, const void* src, int src_dtype, void* dst, int dst_dtype, int64_t n);
  int (*accumulate)(TensoroptCudaDevice* dev, void* dst, int dst_dtype, const void* src, int src_dtype, int64_t n);
  int (*scale)(TensoroptCudaDevice* dev, float* a, int64_t n, float factor);
  // Mean over the rows whose label is >= 0 (labels int64 or int32); dlogits (may be null) gets
  // the gradient of that mean. *loss is written when the call returns.
  int (*cross_entropy)(TensoroptCudaDevice* dev, const float* logits, const void* labels, int label_dtype, int64_t rows,
                       int64_t classes, float* dlogits, double* loss);
  int (*mse)(TensoroptCudaDevice* dev, const float* output, const float* target, int64_t n, float* doutput, double* loss);
  int (*sgd)(TensoroptCudaDevice* dev, const struct TensoroptSgd* args);
  int (*adam)(TensoroptCudaDevice* dev, const struct TensoroptAdam* args);

  // Kernels.
  // y = f(x); x and y float32 or bfloat16 (x_dtype, y_dtype), computed in float32.
  int (*unary)(TensoroptCudaDevice* dev, int op, const void* x, int x_dtype, void* y, int y_dtype, int64_t n, float alpha,
               float beta);
  // dx = dy * f'(s), s the input x (or the output y for ops differentiated from it: device/unary.h);
  // s and dy float32 or bfloat16, dx float32.
  int (*unary_backward)(TensoroptCudaDevice* dev, int op, const void* s, int s_dtype, const void* dy, int dy_dtype, float* dx,
                        int64_t n, float alpha, float beta);
  int (*binary)(TensoroptCudaDevice* dev, const struct TensoroptBinary* args);
  int (*binary_backward)(TensoroptCudaDevice* dev, const struct TensoroptBinary* args);
  int (*sum_to)(TensoroptCudaDevice* dev, const struct TensoroptSumTo* args);
  int (*gemm)(TensoroptCudaDevice* dev, const struct TensoroptGemm* args);

  // Every other kernel, by name: the kernel families of device/ (device/registry.h) each define
  // their kernels' argument structs and register `name` with sizeof(args), which must equal
  // `size` (a mismatch fails, never runs).
  int (*launch)(TensoroptCudaDevice* dev, const char* kernel, const void* args, size_t size);
};

#ifdef __cplusplus
}
#endif
