// The steps of import_onnx_* (graph/import.h), exposed for tests. Each throws InputError naming
// `g.source_path` and the node or tensor at fault.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "graph/ir.h"
#include "graph/rebatch.h"

namespace onnx {
class ModelProto;
class TensorProto;
}  // namespace onnx

namespace tensoropt {

// Largest constant (elements) whose value the importer keeps and folds.
constexpr int64_t kMaxFoldElements = 1 << 16;

// Tensor type and, when present in the file and small enough, value. Dynamic dims are -1.
// Throws InputError when the stored data does not match the declared shape.
Value tensor_value(const onnx::TensorProto& t, const std::string& where, bool load_data);

// Builds the graph's tensors and nodes from the proto. Graph inputs and initializers become
// tensors with kind Input or Constant for now; shapes may hold -1 for dynamic dims. Node outputs
// have DType::Undefined and no shape. Nodes are sorted topologically.
Graph graph_from_proto(const onnx::ModelProto& model, const std::string& label);

// Decides, for every graph input and initializer, whether it is data, a trainable parameter,
// a buffer or a constant (see docs/import.md for the rules); parameters matching a `frozen`
// pattern become buffers. Throws InputError for a pattern that matches no parameter.
void classify_inputs(Graph& g, const std::vector<std::string>& frozen = {});

// Sets the batch axis of every data input (axis 0) to `batch`, or checks it is static. Throws
// InputError for a dynamic axis when no batch is given, and for dynamic non-batch axes.
void specialise_batch(Graph& g, std::optional<int64_t> batch);

// Infers every node output and folds constant nodes, in order. With `rewrites` (graph/rebatch.h),
// a node's shape operands are first rewritten for `batch`.
void infer_static(Graph& g, const ShapeRewrites* rewrites = nullptr, int64_t batch = 0);
// `reference` maps tensor names to shapes ONNX inferred; any disagreement with a node output of
// `g` (after infer_static) is an InternalError naming the node.
void cross_check(const Graph& g, const std::map<std::string, Shape>& reference);
// Removes folded and dead nodes, fuses activations (graph/fuse.h) and fills in batch axes.
void finish_static(Graph& g);

}  // namespace tensoropt
