#include "graph/import.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>

#include <google/protobuf/io/coded_stream.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include "graph/dtype.h"
#include "graph/error.h"
#include "graph/import_steps.h"
#include "graph/model_skim.h"
#include "graph/op_catalogue.h"

namespace tensoropt {
namespace {

onnx::ModelProto parse(const std::string& bytes, const std::string& label) {
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                                            static_cast<int>(bytes.size()));
  in.SetTotalBytesLimit(std::numeric_limits<int>::max());
  onnx::ModelProto model;
  if (bytes.empty() || !model.ParseFromCodedStream(&in) || !in.ConsumedEntireMessage()) {
    throw InputError(label + ": not an ONNX model, or truncated (protobuf parse failed)");
  }
  if (!model.has_graph() || model.ir_version() <= 0) {
    throw InputError(label + ": not an ONNX model (no graph or IR version)");
  }
  return model;
}

// The size of a model file, after the checks every reader of one makes: it exists, is not a
// directory, and is under protobuf's 2 GiB.
uintmax_t model_file_size(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw InputError(path + ": is a directory, not an ONNX file");
  if (!std::filesystem::exists(path, ec)) throw InputError(path + ": no such file");
  const uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) throw InputError(path + ": cannot be read");
  if (size >= static_cast<uintmax_t>(std::numeric_limits<int>::max())) {
    throw InputError(path + ": larger than 2 GiB; store the weights as ONNX external data");
  }
  return size;
}

// The element data of initializers over kMaxFoldElements elements, dropped: the importer reads only
// their type and dims (tensor_value loads no value that large), ONNX's inference only the values
// of shape-like inputs, which are small, and the runtime reads the weights from the file itself
// (launcher/runtime/weights.h). A model whose weights are inline then takes memory for its graph,
// not for its weights twice over (the parsed copy, and onnx_reference's). A file's skim
// (graph/model_skim.h) never read most of them; this clears the rest, and a model given as bytes.
void drop_large_data(onnx::ModelProto& model) {
  for (onnx::TensorProto& t : *model.mutable_graph()->mutable_initializer()) {
    if (t.data_location() == onnx::TensorProto::EXTERNAL) continue;
    int64_t n = 1;
    for (int64_t d : t.dims()) n = d < 0 || (d > 0 && n > kMaxFoldElements) ? kMaxFoldElements + 1 : n * d;
    if (n <= kMaxFoldElements) continue;
    t.clear_raw_data();
    t.clear_float_data();
    t.clear_double_data();
    t.clear_int32_data();
    t.clear_int64_data();
    t.clear_uint64_data();
  }
}

// Shapes ONNX's own inference finds for the model with its inputs specialised as in `g`.
// Best effort: ONNX may stop early on ops it cannot follow; we keep what it found.
std::map<std::string, Shape> onnx_reference(onnx::ModelProto model, const Graph& g) {
  auto* gp = model.mutable_graph();
  for (auto& vi : *gp->mutable_input()) {
    int t = g.find(vi.name());
    if (t < 0 || !vi.type().has_tensor_type()) continue;
    const Tensor& x = g.tensors[static_cast<size_t>(t)];
    auto* shape = vi.mutable_type()->mutable_tensor_type()->mutable_shape();
    shape->clear_dim();
    for (int64_t d : x.shape) shape->add_dim()->set_dim_value(d);
  }
  gp->clear_value_info();
  // We read every initializer as a constant whatever the IR version; before IR 4 ONNX ignores the
  // values of initializers (they were defaults of graph inputs) and then mis-sizes ops that read
  // them: a Slice whose axes it cannot see slices axis 0. From IR 4 it reads them as we do.
  if (model.ir_version() < 4) model.set_ir_version(4);
  // Every tensor our inference typed gets its element type (no shape) up front. ONNX leaves the
  // outputs of a node it cannot infer (an op missing from the model's opset) untyped, and some of
  // its inference functions then dereference the missing type: Shape-15's data propagation
  // segfaults on it. With a type but no shape they return without a finding.
  std::set<std::string> declared;
  for (const auto& vi : gp->input()) declared.insert(vi.name());
  for (const auto& vi : gp->output()) declared.insert(vi.name());
  for (const auto& init : gp->initializer()) declared.insert(init.name());
  for (const auto& x : g.tensors) {
    const int elem = dtype_to_onnx(x.dtype);
    if (x.producer < 0 || elem == 0 || declared.count(x.name)) continue;
    auto* vi = gp->add_value_info();
    vi->set_name(x.name);
    vi->mutable_type()->mutable_tensor_type()->set_elem_type(elem);
  }
  for (auto& o : *gp->mutable_output()) o.mutable_type()->mutable_tensor_type()->clear_shape();
  std::map<std::string, Shape> out;
  try {
    onnx::ShapeInferenceOptions opts(/*check_type_val=*/false, /*strict_mode_val=*/0, /*data_prop_val=*/true);
    onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), opts);
  } catch (const std::exception&) {
    return out;  // our own inference decides; it reports real errors with the node named
  }
  auto collect = [&](const onnx::ValueInfoProto& vi) {
    if (!vi.type().has_tensor_type() || !vi.type().tensor_type().has_shape()) return;
    Shape s;
    for (const auto& d : vi.type().tensor_type().shape().dim()) {
      if (!d.has_dim_value()) return;
      s.push_back(d.dim_value());
    }
    out[vi.name()] = s;
  };
  for (const auto& vi : gp->value_info()) collect(vi);
  for (const auto& vi : gp->output()) collect(vi);
  return out;
}

// The batch every data input was exported with, when all are static and agree on axis 0.
std::optional<int64_t> fixed_batch(const Graph& g) {
  std::optional<int64_t> b;
  for (int t : g.inputs) {
    const Shape& s = g.tensors[static_cast<size_t>(t)].shape;
    for (int64_t d : s) {
      if (d < 0) return std::nullopt;
    }
    if (s.empty()) continue;
    if (b && *b != s[0]) return std::nullopt;
    b = s[0];
  }
  return b;
}

// A fixed-batch export planned at another batch (graph/rebatch.h).
Graph rebatched(Graph g, const onnx::ModelProto& model, int64_t b0, int64_t batch, const ImportOptions& options) {
  Graph base = g;
  specialise_batch(base, std::nullopt);
  infer_static(base);
  if (options.onnx_cross_check) cross_check(base, onnx_reference(model, base));
  auto axes = batch_axes(base, b0);
  ShapeRewrites rewrites = shape_rewrites(base, axes, b0);
  specialise_batch(g, batch);
  try {
    infer_static(g, &rewrites, batch);
  } catch (const InputError& e) {
    throw InputError(std::string(e.what()) + " (exported at a fixed batch of " + std::to_string(b0) + " and re-batched to " +
                     std::to_string(batch) + "; " + rebatch_advice(g, b0) + ")");
  }
  check_rebatched(base, g, axes, b0, batch);
  finish_static(g);
  return g;
}

Graph import_steps(onnx::ModelProto model, const std::string& label, const ImportOptions& options) {
  drop_large_data(model);
  Graph g = graph_from_proto(model, label);
  classify_inputs(g, options.frozen);
  std::optional<int64_t> b0 = fixed_batch(g);
  if (b0 && options.batch && *options.batch != *b0) {
    if (*b0 <= 0) {
      throw InputError(label + ": the inputs were exported with a batch of 0 (an empty example), which cannot be re-batched to " +
                       std::to_string(*options.batch) + ": re-export with a non-empty example, or with dynamic_axes={...: {0: \"batch\"}}");
    }
    return rebatched(std::move(g), model, *b0, *options.batch, options);
  }
  const bool dynamic = std::any_of(g.inputs.begin(), g.inputs.end(), [&](int t) {
    const Shape& shape = g.tensors[static_cast<size_t>(t)].shape;
    return !shape.empty() && shape[0] < 0;
  });
  specialise_batch(g, options.batch ? options.batch : dynamic ? options.dynamic_batch : std::nullopt);
  // ONNX's inference sees only a model our own inference found consistent: libonnx crashes on
  // some inconsistent ones (a Reshape whose constant target disagrees with its input).
  infer_static(g);
  if (options.onnx_cross_check) cross_check(g, onnx_reference(model, g));
  finish_static(g);
  return g;
}

Graph import_model(onnx::ModelProto model, const std::string& label, const ImportOptions& options) {
  try {
    return import_steps(std::move(model), label, options);
  } catch (const OpError& e) {
    // A catalogue check reached outside a node's inference (an attribute of the wrong type read
    // while classifying): still the model's fault.
    throw InputError(label + ": " + e.what());
  }
}

}  // namespace

Graph import_onnx_bytes(const std::string& bytes, const std::string& label, const ImportOptions& options) {
  return import_model(parse(bytes, label), label, options);
}

std::string read_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw InputError(path + ": no such file");
  if (std::filesystem::is_directory(path, ec)) throw InputError(path + ": is a directory");
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  const std::streamoff size = f ? static_cast<std::streamoff>(f.tellg()) : -1;
  if (size < 0) throw InputError(path + ": cannot be read");
  std::string bytes(static_cast<size_t>(size), '\0');  // one copy of the file, not two
  f.seekg(0);
  if (!f.read(bytes.data(), size)) throw InputError(path + ": read failed");
  return bytes;
}

std::string read_model_file(const std::string& path) {
  model_file_size(path);
  return read_file(path);
}

Graph import_onnx_file(const std::string& path, const ImportOptions& options) {
  // Skimmed from the file (graph/model_skim.h): a model of inline weights is held for its graph,
  // never for its weights.
  model_file_size(path);
  return import_model(parse(skim_model_file(path), path), path, options);
}

}  // namespace tensoropt
