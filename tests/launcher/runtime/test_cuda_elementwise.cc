// The CUDA elementwise kernels (launcher/runtime/cuda/elementwise*.cc) on the dtypes the kernel
// cases cannot reach, since the runtime holds graph tensors as float32, int64 or bool: float64,
// int32 and the narrow storage types. Each op runs through the kernel interface on the CPU backend
// and on the CUDA backend over the host emulation, and the outputs must be equal byte for byte.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "graph/dtype.h"
#include "graph/error.h"
#include "launcher/runtime/cpu/backend.h"
#include "tests/launcher/runtime/cuda_emulation.h"

namespace tensoropt::test {
namespace {

using runtime::Array;
using runtime::Backend;
using runtime::MemoryKind;

const double kNan = std::numeric_limits<double>::quiet_NaN(), kInf = std::numeric_limits<double>::infinity();

// Sixteen values of each kind: floats across every conversion's edges, integers across every
// width's (wrapping when narrower), float16 bit patterns (normal, subnormal, largest, inf, NaN).
const std::vector<double> kFloats = {0, -0.0, 1.5, -2.5, 3.7, -1e10, 1e10, 300.25, -129.9, 65519, 65520, 1e-6, kNan, kInf, -kInf,
                                     2147483647.5};
const std::vector<int64_t> kInts = {0, 1, -1, 127, 128, -129, 255, 256, 65535, -65536, 2147483647, -2147483647 - 1,
                                    (int64_t{1} << 40) + 1, -(int64_t{1} << 40), std::numeric_limits<int64_t>::max(),
                                    std::numeric_limits<int64_t>::min()};
const std::vector<uint16_t> kHalves = {0x0000, 0x8000, 0x3c00, 0xc100, 0x7bff, 0x0001, 0x03ff, 0x7c00,
                                       0xfc00, 0x7e00, 0x3555, 0xd640, 0x5bff, 0x1234, 0x8401, 0x4900};

template <class T>
void put(std::vector<char>& bytes, size_t i, T v) {
  std::memcpy(&bytes[i * sizeof(T)], &v, sizeof(T));
}

// n host elements of dtype t from the values above (cycled, offset by `shift`).
std::vector<char> host_values(DType t, size_t n, size_t shift = 0) {
  std::vector<char> b(n * static_cast<size_t>(dtype_size(t)));
  for (size_t i = 0; i < n; ++i) {
    const double f = kFloats[(i + shift) % kFloats.size()];
    const int64_t k = kInts[(i + shift) % kInts.size()];
    switch (t) {
      case DType::F32: put(b, i, static_cast<float>(f)); break;
      case DType::F64: put(b, i, f); break;
      case DType::BF16: put(b, i, float_to_bf16(static_cast<float>(f))); break;
      case DType::F16: put(b, i, kHalves[(i + shift) % kHalves.size()]); break;
      case DType::I8: put(b, i, static_cast<int8_t>(k)); break;
      case DType::I16: put(b, i, static_cast<int16_t>(k)); break;
      case DType::I32: put(b, i, static_cast<int32_t>(k)); break;
      case DType::I64: put(b, i, k); break;
      case DType::U8: put(b, i, static_cast<uint8_t>(k)); break;
      case DType::Bool: put(b, i, static_cast<uint8_t>(k != 0)); break;
      case DType::U16: put(b, i, static_cast<uint16_t>(k)); break;
      case DType::U32: put(b, i, static_cast<uint32_t>(k)); break;
      case DType::U64: put(b, i, static_cast<uint64_t>(k)); break;
      default: FAIL("no values for " << dtype_name(t));
    }
  }
  return b;
}

// An input: host_values(dtype, its element count, shift).
struct Operand {
  Operand(DType d, Shape s, size_t k = 0) : dtype(d), shape(std::move(s)), shift(k) {}
  DType dtype;
  Shape shape;
  size_t shift;
};

// The forward of `node` on `backend` with these operands, writing one output of `out_dtype` and
// `out_shape`: its bytes.
std::vector<char> forward(Backend& backend, const Node& node, const std::vector<Operand>& operands, DType out_dtype,
                          const Shape& out_shape) {
  std::vector<Array> arrays;
  for (const Operand& o : operands) {
    Array a(o.dtype, o.shape, backend.allocator(), MemoryKind::Inputs);
    std::vector<char> b = host_values(o.dtype, static_cast<size_t>(a.numel()), o.shift);
    backend.write(a, b.data(), a.bytes());
    arrays.push_back(a);
  }
  Array out(out_dtype, out_shape, backend.allocator(), MemoryKind::Activations);
  std::vector<const Array*> in;
  for (const Array& a : arrays) in.push_back(&a);
  runtime::OpState state;
  runtime::StepContext ctx{&backend.allocator(), true, 7, 1, 1};
  backend.kernel(node.op_type)->forward(runtime::OpCall{node, 0, in, {&out}, state, ctx, nullptr});
  std::vector<char> bytes(static_cast<size_t>(out.bytes()));
  backend.read(out, bytes.data(), out.bytes());
  return bytes;
}

Node node_of(const std::string& op, const std::map<std::string, int64_t>& ints = {}) {
  Node n;
  n.name = op;
  n.op_type = op;
  for (const auto& [key, v] : ints) n.attrs[key].i = v;
  return n;
}

struct Backends {
  runtime::cpu::CpuBackend cpu{1};
  runtime::cuda::CudaBackend cuda{emulated_cuda_driver(), 0};
  // The CPU's and CUDA's outputs are equal byte for byte.
  void check(const Node& node, const std::vector<Operand>& operands, DType out_dtype, const Shape& out_shape) {
    const std::vector<char> want = forward(cpu, node, operands, out_dtype, out_shape);
    const std::vector<char> got = forward(cuda, node, operands, out_dtype, out_shape);
    CHECK_MESSAGE(got == want, node.op_type << " of " << dtype_name(operands[0].dtype) << " -> " << dtype_name(out_dtype));
  }
};

const DType kAll[] = {DType::F32, DType::F16, DType::BF16, DType::F64, DType::I8, DType::I16, DType::I32,
                      DType::I64, DType::U8,  DType::U16,  DType::U32,  DType::U64, DType::Bool};

}  // namespace

TEST_CASE("cuda emulated: Cast between every pair of dtypes equals the CPU's, byte for byte") {
  Backends b;
  for (DType from : kAll) {
    for (DType to : kAll) {
      b.check(node_of("Cast", {{"to", dtype_to_onnx(to)}}), {{from, {4, 4}}}, to, {4, 4});
    }
  }
  // A float32 result rounded to float16 and bfloat16 precision (Cast's `to` names them).
  for (DType to : {DType::F16, DType::BF16}) b.check(node_of("Cast", {{"to", dtype_to_onnx(to)}}), {{DType::F32, {16}}}, DType::F32, {16});
}

TEST_CASE("cuda emulated: arithmetic, comparisons, Clip and Where of float64 and int32 equal the CPU's") {
  Backends b;
  for (DType t : {DType::F64, DType::I32, DType::I64}) {
    CAPTURE(dtype_name(t));
    for (const char* op : {"Add", "Sub", "Mul", "Max", "Min", "Pow", "Sum"}) b.check(node_of(op), {{t, {4, 4}}, {t, {4}, 5}}, t, {4, 4});
    for (const char* op : {"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"})
      b.check(node_of(op), {{t, {4, 4}}, {t, {4, 1}, 3}}, DType::Bool, {4, 4});
    b.check(node_of("Max"), {{t, {2, 8}}, {t, {8}, 3}, {t, {2, 1}, 9}}, t, {2, 8});
    b.check(node_of("Clip"), {{t, {16}}, {t, {}, 5}, {t, {}, 3}}, t, {16});
    b.check(node_of("Clip"), {{t, {16}}}, t, {16});
    for (DType v : {DType::U8, DType::BF16, DType::F32, DType::F64}) {
      b.check(node_of("Where"), {{DType::Bool, {4, 1}}, {v, {4}}, {v, {4, 4}, 2}}, v, {4, 4});
    }
  }
  // Division and Mod without zero divisors (kInts from 1 on), with the divisor's and the
  // dividend's sign; Mean and float Mod (fmod) of float64.
  for (DType t : {DType::I32, DType::I64}) {
    for (const char* op : {"Div", "Mod"}) {
      b.check(node_of(op), {{t, {3, 5}}, {t, {5}, 1}}, t, {3, 5});
      b.check(node_of(op, {{"fmod", 1}}), {{t, {3, 5}}, {t, {5}, 1}}, t, {3, 5});
    }
    for (const char* op : {"Relu", "Neg", "Abs", "Sign", "Floor", "Ceil", "Round"}) b.check(node_of(op), {{t, {16}}}, t, {16});
  }
  b.check(node_of("Div"), {{DType::F64, {4, 4}}, {DType::F64, {4}, 2}}, DType::F64, {4, 4});
  b.check(node_of("Mod", {{"fmod", 1}}), {{DType::F64, {4, 4}}, {DType::F64, {4}, 2}}, DType::F64, {4, 4});
  b.check(node_of("Mean"), {{DType::F64, {4, 4}}, {DType::F64, {4}, 2}, {DType::F64, {1}, 4}}, DType::F64, {4, 4});
  b.check(node_of("IsNaN"), {{DType::F64, {16}}}, DType::Bool, {16});
  b.check(node_of("IsInf", {{"detect_negative", 0}}), {{DType::F64, {16}}}, DType::Bool, {16});
  b.check(node_of("Equal"), {{DType::U8, {16}}, {DType::U8, {16}, 6}}, DType::Bool, {16});
}

TEST_CASE("cuda emulated: an integer division by zero is the CPU's error") {
  Backends b;
  for (const char* op : {"Div", "Mod"}) {
    const Node n = node_of(op);
    const std::vector<Operand> operands = {{DType::I32, {4}}, {DType::I32, {4}}};  // kInts[0] is 0
    CHECK_THROWS_WITH_AS(forward(b.cpu, n, operands, DType::I32, {4}), doctest::Contains("integer division by zero"), InputError);
    CHECK_THROWS_WITH_AS(forward(b.cuda, n, operands, DType::I32, {4}), doctest::Contains("integer division by zero"), InputError);
  }
}

}  // namespace tensoropt::test
