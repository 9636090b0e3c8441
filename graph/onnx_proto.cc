// Conversion from ONNX protobuf messages to the IR (graph/import_steps.h).
#include <cmath>
#include <cstring>
#include <deque>
#include <set>

#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>

#include "graph/error.h"
#include "graph/import_steps.h"
#include "graph/ops/helpers.h"

namespace tensoropt {
namespace {

template <typename T>
T read_le(const std::string& raw, size_t offset) {
  T v;
  std::memcpy(&v, raw.data() + offset, sizeof(T));
  return v;
}

// Fills v (shape and dtype set, storage sized) from t's raw_data: little-endian elements, as
// many bytes as the shape needs.
void read_raw_data(const std::string& raw, const std::string& where, Value& v) {
  auto size = static_cast<size_t>(v.size());
  int64_t esize = dtype_size(v.dtype);
  if (raw.size() != size * static_cast<size_t>(esize)) {
    throw InputError(where + ": raw data holds " + std::to_string(raw.size()) + " bytes, shape " +
                     shape_str(v.shape) + " needs " + std::to_string(size * static_cast<size_t>(esize)));
  }
  for (size_t i = 0; i < size; ++i) {
    size_t o = i * static_cast<size_t>(esize);
    switch (v.dtype) {
      case DType::F32: v.reals[i] = read_le<float>(raw, o); break;
      case DType::F64: v.reals[i] = read_le<double>(raw, o); break;
      case DType::F16: v.reals[i] = half_to_double(read_le<uint16_t>(raw, o), false); break;
      case DType::BF16: v.reals[i] = half_to_double(read_le<uint16_t>(raw, o), true); break;
      case DType::I64: v.ints[i] = read_le<int64_t>(raw, o); break;
      case DType::I32: v.ints[i] = read_le<int32_t>(raw, o); break;
      case DType::I16: v.ints[i] = read_le<int16_t>(raw, o); break;
      case DType::I8: v.ints[i] = read_le<int8_t>(raw, o); break;
      case DType::U8: v.ints[i] = read_le<uint8_t>(raw, o); break;
      case DType::U16: v.ints[i] = read_le<uint16_t>(raw, o); break;
      case DType::U32: v.ints[i] = read_le<uint32_t>(raw, o); break;
      case DType::U64: v.ints[i] = static_cast<int64_t>(read_le<uint64_t>(raw, o)); break;
      case DType::Bool: v.ints[i] = read_le<uint8_t>(raw, o) != 0; break;
      default: break;
    }
  }
}

// Fills v (shape and dtype set, storage sized) from t's typed field for its dtype (float_data,
// int64_data, ...), which must hold exactly as many values as the shape needs.
void read_typed_data(const onnx::TensorProto& t, const std::string& where, Value& v) {
  auto size = static_cast<size_t>(v.size());
  auto mismatch = [&](size_t have) {
    if (have != size) {
      throw InputError(where + ": holds " + std::to_string(have) + " values, shape " + shape_str(v.shape) +
                       " needs " + std::to_string(size));
    }
  };
  switch (v.dtype) {
    case DType::F32:
      mismatch(static_cast<size_t>(t.float_data_size()));
      for (size_t i = 0; i < size; ++i) v.reals[i] = t.float_data(static_cast<int>(i));
      break;
    case DType::F64:
      mismatch(static_cast<size_t>(t.double_data_size()));
      for (size_t i = 0; i < size; ++i) v.reals[i] = t.double_data(static_cast<int>(i));
      break;
    case DType::I64:
      mismatch(static_cast<size_t>(t.int64_data_size()));
      for (size_t i = 0; i < size; ++i) v.ints[i] = t.int64_data(static_cast<int>(i));
      break;
    case DType::U32: case DType::U64:
      mismatch(static_cast<size_t>(t.uint64_data_size()));
      for (size_t i = 0; i < size; ++i) v.ints[i] = static_cast<int64_t>(t.uint64_data(static_cast<int>(i)));
      break;
    case DType::F16: case DType::BF16:
      mismatch(static_cast<size_t>(t.int32_data_size()));
      for (size_t i = 0; i < size; ++i) {
        v.reals[i] = half_to_double(static_cast<uint16_t>(t.int32_data(static_cast<int>(i))), v.dtype == DType::BF16);
      }
      break;
    default:  // I32, I16, I8, U8, U16, Bool
      mismatch(static_cast<size_t>(t.int32_data_size()));
      for (size_t i = 0; i < size; ++i) v.ints[i] = t.int32_data(static_cast<int>(i));
      if (v.dtype == DType::Bool) for (auto& x : v.ints) x = x != 0;
      break;
  }
}

}  // namespace

Value tensor_value(const onnx::TensorProto& t, const std::string& where, bool load_data) {
  Value v;
  auto dt = dtype_from_onnx(t.data_type());
  if (!dt) throw InputError(where + ": unsupported element type " + std::to_string(t.data_type()));
  v.dtype = *dt;
  for (int64_t d : t.dims()) {
    if (d < 0) throw InputError(where + ": negative dimension " + std::to_string(d));
    v.shape.push_back(d);
  }
  int64_t n;
  try {
    n = ops::checked_numel(v.shape);
  } catch (const OpError& e) {
    throw InputError(where + ": " + e.what());
  }
  bool external = t.data_location() == onnx::TensorProto::EXTERNAL;
  if (!load_data || external || n > kMaxFoldElements || v.dtype == DType::String) return v;
  auto size = static_cast<size_t>(n);
  if (dtype_is_integral(v.dtype)) v.ints.resize(size);
  else v.reals.resize(size);
  if (t.has_raw_data()) read_raw_data(t.raw_data(), where, v);
  else read_typed_data(t, where, v);
  return v;
}

namespace {

Attribute convert_attribute(const onnx::AttributeProto& a, const std::string& where) {
  Attribute r;
  using A = onnx::AttributeProto;
  // A single-valued attribute must hold its value (the ONNX checker's rule): reading the field's
  // default instead would plan a model other than the one ONNX's own inference sees.
  const bool holds = a.type() == A::INT ? a.has_i() : a.type() == A::FLOAT ? a.has_f() : a.type() == A::STRING ? a.has_s()
                     : a.type() == A::TENSOR ? a.has_t() : true;
  if (!holds) {
    throw InputError(where + ": attribute '" + a.name() + "' is of type " + A::AttributeType_Name(a.type()) +
                     " but holds no value (remove it to take the op's default, or give it one)");
  }
  switch (a.type()) {
    case A::INT: r.kind = Attribute::Kind::Int; r.i = a.i(); break;
    case A::FLOAT: r.kind = Attribute::Kind::Float; r.f = a.f(); break;
    case A::STRING: r.kind = Attribute::Kind::String; r.s = a.s(); break;
    case A::INTS: r.kind = Attribute::Kind::Ints; r.ints.assign(a.ints().begin(), a.ints().end()); break;
    case A::FLOATS: r.kind = Attribute::Kind::Floats; r.floats.assign(a.floats().begin(), a.floats().end()); break;
    case A::STRINGS: r.kind = Attribute::Kind::Strings; break;
    case A::TENSOR: r.kind = Attribute::Kind::Tensor; r.tensor = tensor_value(a.t(), where + " attribute '" + a.name() + "'", true); break;
    default: r.kind = Attribute::Kind::Graph; break;  // graphs, sparse tensors: no op we support uses them
  }
  return r;
}

// Refuses an attribute whose type disagrees with the op's ONNX schema at the model's opset (a
// BatchNormalization 'training_mode' given as a GRAPH, say), and more inputs than the schema takes
// (an opset-1 ReduceMean with an opset-18 axes input), so no later reader meets them.
void check_attribute_types(const onnx::NodeProto& np, int64_t opset, const std::string& where) {
  if (!np.domain().empty() && np.domain() != "ai.onnx") return;  // other domains: the catalogue decides
  const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Schema(np.op_type(), static_cast<int>(opset), "");
  if (!schema) return;  // an op ONNX does not know: the catalogue refuses it by name
  // libonnx knows opsets up to its own release; a newer model's schema here is an older one's,
  // whose input count may be out of date (ReduceMean took its axes input only from opset 18).
  const int known = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map().at(onnx::ONNX_DOMAIN).second;
  if (opset <= known && np.input_size() > schema->max_input()) {
    throw InputError(where + ": has " + std::to_string(np.input_size()) + " inputs, but ONNX opset " + std::to_string(opset) +
                     " takes at most " + std::to_string(schema->max_input()));
  }
  // Flags ONNX declares as INT but reads as 0 or 1, inconsistently beyond that (its shape inference
  // keeps a reduced axis only for keepdims == 1, runtimes for any nonzero value): refused otherwise.
  static const std::set<std::string> kFlags = {"keepdims", "noop_with_empty_axes", "ceil_mode", "count_include_pad",
                                               "transA", "transB", "training_mode", "select_last_index", "largest",
                                               "sorted", "exclusive", "reverse", "storage_order"};
  for (const auto& a : np.attribute()) {
    auto it = schema->attributes().find(a.name());
    if (it != schema->attributes().end() && a.type() == onnx::AttributeProto::INT && kFlags.count(a.name()) &&
        a.i() != 0 && a.i() != 1) {
      throw InputError(where + ": attribute '" + a.name() + "' is " + std::to_string(a.i()) + "; it is a flag, 0 or 1");
    }
    if (it == schema->attributes().end() || it->second.type == a.type()) continue;
    throw InputError(where + ": attribute '" + a.name() + "' has type " +
                     onnx::AttributeProto::AttributeType_Name(a.type()) + ", but ONNX opset " + std::to_string(opset) +
                     " declares " + onnx::AttributeProto::AttributeType_Name(it->second.type));
  }
}

Tensor tensor_from_value_info(const onnx::ValueInfoProto& vi, const std::string& where) {
  Tensor t;
  t.name = vi.name();
  if (!vi.type().has_tensor_type()) throw InputError(where + ": input '" + vi.name() + "' is not a tensor");
  const auto& tt = vi.type().tensor_type();
  auto dt = dtype_from_onnx(tt.elem_type());
  if (!dt || *dt == DType::Undefined) throw InputError(where + ": input '" + vi.name() + "' has unsupported element type " + std::to_string(tt.elem_type()));
  t.dtype = *dt;
  if (!tt.has_shape()) throw InputError(where + ": input '" + vi.name() + "' has no shape (unknown rank)");
  for (const auto& d : tt.shape().dim()) {
    if (d.has_dim_value() && d.dim_value() < 0) throw InputError(where + ": input '" + vi.name() + "' has a negative dimension");
    t.shape.push_back(d.has_dim_value() ? d.dim_value() : -1);
  }
  return t;
}

// The graph's inputs (those no initializer defines) and then its initializers, as tensors of g.
void add_inputs_and_initializers(Graph& g, const onnx::GraphProto& gp, const std::string& label) {
  std::set<std::string> initializers;
  for (const auto& init : gp.initializer()) {
    if (init.name().empty()) throw InputError(label + ": an initializer has no name");
    if (!initializers.insert(init.name()).second) throw InputError(label + ": initializer '" + init.name() + "' is defined twice");
  }
  for (const auto& vi : gp.input()) {
    if (initializers.count(vi.name())) continue;  // an overridable default: the initializer defines it
    if (g.find(vi.name()) >= 0) throw InputError(label + ": graph input '" + vi.name() + "' is listed twice");
    Tensor t = tensor_from_value_info(vi, label);
    t.kind = TensorKind::Input;
    g.inputs.push_back(g.add_tensor(std::move(t)));
  }
  for (const auto& init : gp.initializer()) {
    Tensor t;
    t.name = init.name();
    Value v = tensor_value(init, label + ": initializer '" + init.name() + "'", true);
    t.dtype = v.dtype;
    t.shape = v.shape;
    t.kind = TensorKind::Constant;
    if (v.size() == numel(v.shape)) t.value = std::move(v);  // else: external, large or string
    g.add_tensor(std::move(t));
  }
}

// Appends node np (the graph's i-th) to g, with a tensor for each of its outputs; its inputs must
// be in g already.
void add_node(Graph& g, const onnx::NodeProto& np, int i, const std::string& label) {
  Node node;
  node.op_type = np.op_type();
  node.domain = np.domain() == "ai.onnx" ? "" : np.domain();
  node.name = np.name().empty() ? np.op_type() + ":" + (np.output_size() ? np.output(0) : std::to_string(i)) : np.name();
  const std::string where = label + ": node '" + node.name + "' (" + node.op_type + ")";
  check_attribute_types(np, g.opset, where);
  for (const auto& a : np.attribute()) node.attrs[a.name()] = convert_attribute(a, where);
  for (const auto& in : np.input()) node.inputs.push_back(in.empty() ? -1 : g.find(in));
  for (const auto& o : np.output()) {
    if (o.empty()) {
      node.outputs.push_back(-1);
      continue;
    }
    Tensor t;
    t.name = o;
    t.producer = static_cast<int>(g.nodes.size());
    node.outputs.push_back(g.add_tensor(std::move(t)));
  }
  g.nodes.push_back(std::move(node));
}

// Nodes, in topological order (Kahn's algorithm over tensor names).
void add_nodes(Graph& g, const onnx::GraphProto& gp, const std::string& label) {
  const int n = gp.node_size();
  std::map<std::string, int> producer;
  for (int i = 0; i < n; ++i) {
    for (const auto& o : gp.node(i).output()) {
      if (o.empty()) continue;
      if (g.find(o) >= 0 || !producer.emplace(o, i).second) {
        throw InputError(label + ": tensor '" + o + "' is produced twice (node '" + gp.node(i).name() + "')");
      }
    }
  }
  std::vector<int> pending(static_cast<size_t>(n), 0);
  std::vector<std::vector<int>> readers(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    const auto& np = gp.node(i);
    for (const auto& in : np.input()) {
      if (in.empty() || g.find(in) >= 0) continue;
      auto it = producer.find(in);
      if (it == producer.end()) {
        throw InputError(label + ": node '" + np.name() + "' (" + np.op_type() + ") reads tensor '" + in +
                         "' that no node, input or initializer defines");
      }
      ++pending[static_cast<size_t>(i)];
      readers[static_cast<size_t>(it->second)].push_back(i);
    }
  }
  std::deque<int> ready;
  for (int i = 0; i < n; ++i) {
    if (pending[static_cast<size_t>(i)] == 0) ready.push_back(i);
  }
  while (!ready.empty()) {
    int i = ready.front();
    ready.pop_front();
    add_node(g, gp.node(i), i, label);
    for (int r : readers[static_cast<size_t>(i)]) {
      if (--pending[static_cast<size_t>(r)] == 0) ready.push_back(r);
    }
  }
  if (static_cast<int>(g.nodes.size()) != n) {
    for (int i = 0; i < n; ++i) {
      if (pending[static_cast<size_t>(i)] > 0) {
        throw InputError(label + ": the graph has a cycle through node '" + gp.node(i).name() + "' (" + gp.node(i).op_type() + ")");
      }
    }
  }
}

}  // namespace

Graph graph_from_proto(const onnx::ModelProto& model, const std::string& label) {
  Graph g;
  g.source_path = label;
  if (!model.has_graph()) throw InputError(label + ": not an ONNX model (no graph)");
  const auto& gp = model.graph();
  g.name = gp.name();
  for (const auto& op : model.opset_import()) {
    if (op.domain().empty() || op.domain() == "ai.onnx") g.opset = op.version();
  }
  if (g.opset == 0) throw InputError(label + ": not an ONNX model (no default-domain opset import)");
  if (gp.output_size() == 0) throw InputError(label + ": not an ONNX model (the graph has no outputs)");
  add_inputs_and_initializers(g, gp, label);
  add_nodes(g, gp, label);
  for (const auto& o : gp.output()) {
    int t = g.find(o.name());
    if (t < 0) throw InputError(label + ": graph output '" + o.name() + "' is not produced by any node");
    g.outputs.push_back(t);
  }
  return g;
}

}  // namespace tensoropt
