// Loading and initialising the model's state (weights.h).
#include "launcher/runtime/weights.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include <onnx/onnx_pb.h>

#include "graph/error.h"
#include "graph/import.h"
#include "graph/op_catalogue.h"

namespace tensoropt::runtime {
namespace {

onnx::ModelProto read_model(const std::string& path) {
  onnx::ModelProto m;
  if (!m.ParseFromString(read_model_file(path))) throw InputError(path + ": not an ONNX model, or truncated");
  return m;
}

// The raw little-endian bytes of `t` (an initializer, or a Constant node's value), from the file or
// its external data; empty when the bytes are not there (a weightless export's missing .data file).
// `what` names the tensor in errors ("initializer 'w'").
std::string stored_bytes(const onnx::TensorProto& t, const std::string& what, const std::string& model_path, int64_t want) {
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    std::string location;
    int64_t offset = 0, length = -1;
    for (const auto& kv : t.external_data()) {
      if (kv.key() == "location") location = kv.value();
      else if (kv.key() == "offset") offset = std::stoll(kv.value());
      else if (kv.key() == "length") length = std::stoll(kv.value());
    }
    auto file = std::filesystem::path(model_path).parent_path() / location;
    std::ifstream f(file, std::ios::binary);
    if (location.empty() || !f) return {};
    if (length < 0) length = want;
    if (length != want) {
      throw InputError(model_path + ": " + what + " has " + std::to_string(length) +
                       " bytes of external data, its shape needs " + std::to_string(want));
    }
    std::string bytes(static_cast<size_t>(length), '\0');
    f.seekg(offset);
    if (!f.read(bytes.data(), length)) {
      throw InputError(file.string() + ": too short for " + what + " (offset " + std::to_string(offset) +
                       ", " + std::to_string(length) + " bytes)");
    }
    return bytes;
  }
  if (t.has_raw_data()) {
    if (static_cast<int64_t>(t.raw_data().size()) != want) {
      throw InputError(model_path + ": " + what + " holds " + std::to_string(t.raw_data().size()) +
                       " bytes, its shape needs " + std::to_string(want));
    }
    return t.raw_data();
  }
  // Typed fields: re-encode as raw little-endian bytes of the declared type.
  std::string out;
  auto put = [&](const void* p, size_t n) { out.append(static_cast<const char*>(p), n); };
  switch (t.data_type()) {
    case onnx::TensorProto::FLOAT: for (float v : t.float_data()) put(&v, 4); break;
    case onnx::TensorProto::DOUBLE: for (double v : t.double_data()) put(&v, 8); break;
    case onnx::TensorProto::INT64: for (int64_t v : t.int64_data()) put(&v, 8); break;
    case onnx::TensorProto::INT32: for (int32_t v : t.int32_data()) put(&v, 4); break;
    case onnx::TensorProto::BOOL: case onnx::TensorProto::UINT8: case onnx::TensorProto::INT8:
      for (int32_t v : t.int32_data()) out.push_back(static_cast<char>(v));
      break;
    case onnx::TensorProto::FLOAT16: case onnx::TensorProto::BFLOAT16:
      for (int32_t v : t.int32_data()) {
        auto h = static_cast<uint16_t>(v);
        put(&h, 2);
      }
      break;
    default: break;
  }
  if (static_cast<int64_t>(out.size()) != want) {
    throw InputError(model_path + ": " + what + " holds " + std::to_string(out.size()) +
                     " bytes of typed data, its shape needs " + std::to_string(want));
  }
  return out;
}


// Fills `a` (runtime dtype) from raw bytes of the file's dtype `from`.
void fill_from_bytes(Array& a, const std::string& bytes, DType from, Backend& backend) {
  const int64_t n = a.numel();
  std::vector<char> host(static_cast<size_t>(a.bytes()));
  auto in = [&](int64_t i, auto tag) {
    decltype(tag) v;
    std::memcpy(&v, bytes.data() + i * static_cast<int64_t>(sizeof(v)), sizeof(v));
    return v;
  };
  for (int64_t i = 0; i < n; ++i) {
    auto k = static_cast<size_t>(i);
    switch (a.dtype()) {
      case DType::F32: {
        float v = from == DType::F32   ? in(i, float{})
                  : from == DType::F64 ? static_cast<float>(in(i, double{}))
                                       : static_cast<float>(half_to_double(in(i, uint16_t{}), from == DType::BF16));
        std::memcpy(host.data() + 4 * k, &v, 4);
        break;
      }
      case DType::I64: {
        int64_t v = from == DType::I64   ? in(i, int64_t{})
                    : from == DType::I32 ? in(i, int32_t{})
                    : from == DType::I16 ? in(i, int16_t{})
                    : from == DType::U8  ? static_cast<int64_t>(static_cast<uint8_t>(bytes[k]))
                                         : static_cast<int64_t>(static_cast<int8_t>(bytes[k]));
        std::memcpy(host.data() + 8 * k, &v, 8);
        break;
      }
      case DType::Bool: host[k] = static_cast<char>(bytes[k] != 0); break;
      default: TO_CHECK(false && "unexpected runtime dtype");
    }
  }
  backend.write(a, host.data(), a.bytes());
}

void fill_from_value(Array& a, const Value& v, Backend& backend) {
  std::vector<char> host(static_cast<size_t>(a.bytes()));
  for (int64_t i = 0; i < a.numel(); ++i) {
    auto k = static_cast<size_t>(i);
    if (a.dtype() == DType::F32) {
      auto f = static_cast<float>(v.real(i));
      std::memcpy(host.data() + 4 * k, &f, 4);
    } else if (a.dtype() == DType::I64) {
      int64_t x = v.integer(i);
      std::memcpy(host.data() + 8 * k, &x, 8);
    } else {
      host[k] = static_cast<char>(v.integer(i) != 0);
    }
  }
  backend.write(a, host.data(), a.bytes());
}

// How PyTorch initialises the layer that reads parameter `t` (torch.nn defaults):
//   Linear / Conv weight: kaiming_uniform(a = sqrt 5), i.e. U(-1/sqrt(fan_in), 1/sqrt(fan_in));
//   their bias: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with the weight's fan_in;
//   Embedding (a Gather table): N(0, 1);
//   normalisation scale: 1, bias: 0; BatchNorm running mean 0, running variance 1;
//   anything else (a class token, a position table): N(0, 0.02) as ViT and GPT-2 do.
struct InitRule {
  enum Kind { Uniform, Normal, Ones, Zeros } kind = Normal;
  double scale = 0.02;
};

InitRule rule_for(const Graph& g, const std::vector<std::vector<int>>& consumers, int t) {
  // Follow re-layouts (a Transpose of a Linear weight) to the op that uses the tensor.
  int cur = t;
  for (int hops = 0; hops < 4; ++hops) {
    const auto& readers = consumers[static_cast<size_t>(cur)];
    if (readers.size() != 1) break;
    const Node& n = g.nodes[static_cast<size_t>(readers[0])];
    if ((n.op_type == "Transpose" || n.op_type == "Reshape" || n.op_type == "Identity" || n.op_type == "Unsqueeze") &&
        n.inputs[0] == cur && n.outputs[0] >= 0) {
      cur = n.outputs[0];
      continue;
    }
    break;
  }
  for (int r : consumers[static_cast<size_t>(cur)]) {
    const Node& n = g.nodes[static_cast<size_t>(r)];
    size_t pos = 0;
    while (pos < n.inputs.size() && n.inputs[pos] != cur) ++pos;
    const Shape& w = g.tensors[static_cast<size_t>(cur)].shape;
    auto fan = [&](const Shape& weight, int64_t in_axis) {
      int64_t f = 1;
      if (weight.size() >= 2) {
        f = weight[static_cast<size_t>(in_axis)];
        for (size_t k = 2; k < weight.size(); ++k) f *= weight[k];
      }
      return InitRule{InitRule::Uniform, 1.0 / std::sqrt(static_cast<double>(std::max<int64_t>(f, 1)))};
    };
    if (n.op_type == "Gather" && pos == 0) return {InitRule::Normal, 1.0};
    if (n.op_type == "BatchNormalization" || n.op_type == "LayerNormalization" || n.op_type == "GroupNormalization" ||
        n.op_type == "InstanceNormalization") {
      if (pos == 1) return {InitRule::Ones, 0};
      if (pos == 4) return {InitRule::Ones, 0};  // running variance
      return {InitRule::Zeros, 0};
    }
    if ((n.op_type == "Conv" || n.op_type == "ConvTranspose") && pos == 1) return fan(w, 1);
    if ((n.op_type == "Conv" || n.op_type == "ConvTranspose") && pos == 2) {
      return fan(g.tensors[static_cast<size_t>(n.inputs[1])].shape, 1);
    }
    if (n.op_type == "Gemm" && pos == 1) return fan(w, n.attr_int("transB", 0) ? 1 : 0);
    if (n.op_type == "Gemm" && pos == 2) {
      const Shape& b = g.tensors[static_cast<size_t>(n.inputs[1])].shape;
      return fan(b, n.attr_int("transB", 0) ? 1 : 0);
    }
    if (n.op_type == "MatMul" && pos == 1 && w.size() == 2) return fan(w, 0);
    if (n.op_type == "Add" && w.size() == 1) {
      // A Linear's bias: the other operand comes from a MatMul whose weight gives fan_in.
      int other = n.inputs[pos == 0 ? 1 : 0];
      int p = other >= 0 ? g.tensors[static_cast<size_t>(other)].producer : -1;
      if (p >= 0 && g.nodes[static_cast<size_t>(p)].op_type == "MatMul") {
        const Shape& a = g.tensors[static_cast<size_t>(g.nodes[static_cast<size_t>(p)].inputs[0])].shape;
        if (!a.empty()) return {InitRule::Uniform, 1.0 / std::sqrt(static_cast<double>(std::max<int64_t>(a.back(), 1)))};
      }
    }
  }
  return {};
}

void initialise(const std::string& model_path, const Tensor& x, Array& a, const InitRule& r, std::mt19937_64& rng,
                Backend& backend) {
  if (a.dtype() != DType::F32) {
    throw InputError(model_path + ": " + std::string(dtype_name(x.dtype)) + " tensor '" + x.name +
                     "' has no values in the file, and only float weights can be initialised; re-export with "
                     "export_params=True (or keep the external data file beside the model)");
  }
  std::vector<float> host(static_cast<size_t>(a.numel()));
  std::uniform_real_distribution<double> u(-r.scale, r.scale);
  std::normal_distribution<double> nd(0.0, r.scale);
  for (float& v : host) {
    switch (r.kind) {
      case InitRule::Uniform: v = static_cast<float>(u(rng)); break;
      case InitRule::Normal: v = static_cast<float>(nd(rng)); break;
      case InitRule::Ones: v = 1.0f; break;
      case InitRule::Zeros: v = 0.0f; break;
    }
  }
  backend.write(a, host.data(), a.bytes());
}

MemoryKind kind_of(const Tensor& x) {
  if (x.kind == TensorKind::Parameter) return MemoryKind::Parameters;
  return MemoryKind::Buffers;
}

}  // namespace

LoadedState load_state(const Graph& g, const std::string& model_path, Backend& backend, uint64_t seed) {
  onnx::ModelProto model = read_model(model_path);
  // Where each stored value is, by tensor name: the initializers, and the value of every Constant
  // node whose value the importer did not hold (large, or external data).
  struct Stored {
    const onnx::TensorProto* proto;
    std::string what;
    bool constant_node = false;  // no layer initialises a constant: its value must be there
  };
  std::map<std::string, Stored> stored;
  for (const auto& t : model.graph().initializer()) stored[t.name()] = {&t, "initializer '" + t.name() + "'"};
  for (const auto& n : model.graph().node()) {
    if (n.op_type() != "Constant" || n.output_size() < 1) continue;
    for (const auto& a : n.attribute()) {
      if (a.name() == "value" && a.has_t()) stored[n.output(0)] = {&a.t(), "Constant '" + n.output(0) + "'", true};
    }
  }
  auto consumers = g.consumers();
  std::vector<bool> read(g.tensors.size(), false);
  for (const Node& n : g.nodes) {
    for (int t : n.inputs) {
      if (t >= 0) read[static_cast<size_t>(t)] = true;
    }
  }
  LoadedState s;
  std::mt19937_64 rng(seed);
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    const Tensor& x = g.tensors[t];
    bool state = x.kind == TensorKind::Parameter || x.kind == TensorKind::Buffer || x.kind == TensorKind::Constant;
    if (!state || !read[t] || x.producer >= 0) continue;
    if (x.dtype == DType::String || x.dtype == DType::Undefined) {
      throw InputError(model_path + ": tensor '" + x.name + "' has element type " + std::string(dtype_name(x.dtype)) +
                       ", which the runtime cannot hold");
    }
    Array a(runtime_dtype(x), x.shape, backend.allocator(), kind_of(x));
    if (x.value) {
      fill_from_value(a, *x.value, backend);
    } else if (auto it = stored.find(x.name); it != stored.end()) {
      std::string bytes = stored_bytes(*it->second.proto, it->second.what, model_path, x.elements() * dtype_size(x.dtype));
      if (!bytes.empty()) fill_from_bytes(a, bytes, x.dtype, backend);
      else if (it->second.constant_node) {
        throw InputError(model_path + ": " + it->second.what + " keeps its value as external data that is not beside the model");
      } else {
        initialise(model_path, x, a, rule_for(g, consumers, static_cast<int>(t)), rng, backend);
        s.initialised.push_back(x.name);
      }
    } else {
      initialise(model_path, x, a, rule_for(g, consumers, static_cast<int>(t)), rng, backend);
      s.initialised.push_back(x.name);
    }
    s.arrays.emplace(static_cast<int>(t), std::move(a));
  }
  return s;
}

}  // namespace tensoropt::runtime
