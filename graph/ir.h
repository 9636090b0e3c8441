// The graph IR: tensors with static shapes and dtypes, nodes, attributes.
//
// A Graph owns its tensors and nodes; nodes refer to tensors by index into Graph::tensors (-1 for
// an omitted optional input). After import (graph/import.h) every tensor has a static shape,
// nodes are in topological order, and nodes that only computed shapes are gone: what remains are
// compute ops whose inputs are graph inputs, parameters, buffers, constants or other node outputs.
// Not thread-safe for mutation; const access from several threads is fine.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "graph/dtype.h"

namespace tensoropt {

using Shape = std::vector<int64_t>;

// Number of elements; 1 for a scalar. REQUIRES: every dim >= 0 and the product fits in int64
// (the importer checks both before a shape enters the graph).
int64_t numel(const Shape& s);
// "[1,3,224,224]"
std::string shape_str(const Shape& s);

// A double as int64: truncated toward zero, saturated at the int64 range, NaN as 0.
int64_t saturate_to_int64(double r);

// The value of a constant tensor. Integer and bool types hold `ints`; float types hold `reals`.
struct Value {
  DType dtype = DType::Undefined;
  Shape shape;
  std::vector<int64_t> ints;
  std::vector<double> reals;

  int64_t size() const { return static_cast<int64_t>(dtype_is_integral(dtype) ? ints.size() : reals.size()); }
  // Element i as a double / as an int64 (floats truncate toward zero, saturate at the int64
  // range, and NaN reads as 0).
  double real(int64_t i) const;
  int64_t integer(int64_t i) const;
};

enum class TensorKind : uint8_t {
  Input,       // data fed by the user each step (images, token ids)
  Parameter,   // trainable weight
  Buffer,      // non-trainable state that lives with the model (BatchNorm running statistics)
  Constant,    // value known at import time
  Activation,  // produced by a node
};
std::string_view tensor_kind_name(TensorKind k);

struct Tensor {
  std::string name;
  DType dtype = DType::Undefined;
  Shape shape;
  TensorKind kind = TensorKind::Activation;
  std::optional<Value> value;  // set for constants whose value the importer knows
  int producer = -1;           // node index for activations
  int batch_axis = -1;         // axis carrying the batch dimension, -1 if none
  bool frozen = false;         // a Buffer only because ImportOptions::frozen named it

  int64_t elements() const { return numel(shape); }
  int64_t bytes() const { return numel(shape) * dtype_size(dtype); }
};

struct Attribute {
  enum class Kind : uint8_t { Int, Float, String, Ints, Floats, Strings, Tensor, Graph };
  Kind kind = Kind::Int;
  int64_t i = 0;
  double f = 0;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<double> floats;
  std::optional<Value> tensor;  // for Kind::Tensor (e.g. Constant's value)
};

struct Node {
  std::string name;
  std::string op_type;
  std::string domain;            // "" for the default ONNX domain
  std::vector<int> inputs;       // tensor indices; -1 = omitted optional input
  std::vector<int> outputs;      // tensor indices; -1 = omitted optional output
  std::map<std::string, Attribute> attrs;

  const Attribute* attr(const std::string& key) const;
  // The attribute's value, or `fallback` when absent. Throws OpError when it is present with
  // another type (the caller names the node).
  int64_t attr_int(const std::string& key, int64_t fallback) const;
  double attr_float(const std::string& key, double fallback) const;
  std::string attr_string(const std::string& key, const std::string& fallback) const;
  std::optional<std::vector<int64_t>> attr_ints(const std::string& key) const;
  // "'name' (Type)" for error messages; uses the output name when the node has no name.
  std::string label() const;
  // Inputs actually present (index >= 0).
  int num_present_inputs() const;
};

struct Graph {
  std::string name;
  std::string source_path;
  int64_t opset = 0;             // default-domain opset the model imports
  int64_t batch = 0;             // batch size the shapes were made static at
  std::vector<Tensor> tensors;
  std::vector<Node> nodes;       // topological order
  std::vector<int> inputs;       // data inputs (TensorKind::Input)
  std::vector<int> outputs;      // graph outputs
  std::map<std::string, int> by_name;

  int find(const std::string& tensor_name) const;  // -1 when absent
  int add_tensor(Tensor t);                        // REQUIRES: name unique
  // consumers[t] = indices of nodes that read tensor t (a node reading t twice appears once).
  std::vector<std::vector<int>> consumers() const;
};

}  // namespace tensoropt
