#include "graph/unmerge_batch.h"

#include <map>
#include <set>

#include "graph/error.h"
#include "graph/rebatch.h"

namespace tensoropt {
namespace {

// The one node reading t, when no other node reads it and it is not a graph output; else -1.
int sole_reader(const Graph& g, const std::vector<std::vector<int>>& readers, int t) {
  if (t < 0 || readers[static_cast<size_t>(t)].size() != 1) return -1;
  for (int o : g.outputs)
    if (o == t) return -1;
  return readers[static_cast<size_t>(t)][0];
}

int constant_shape(Graph& g, const std::string& name, const Shape& shape) {
  Tensor t;
  t.name = name;
  t.dtype = DType::I64;
  t.shape = {static_cast<int64_t>(shape.size())};
  t.kind = TensorKind::Constant;
  Value v;
  v.dtype = DType::I64;
  v.shape = t.shape;
  v.ints = shape;
  t.value = std::move(v);
  return g.add_tensor(std::move(t));
}

int activation(Graph& g, const std::string& name, const Shape& shape, DType dtype, int producer) {
  Tensor t;
  t.name = name;
  t.dtype = dtype;
  t.shape = shape;
  t.producer = producer;
  return g.add_tensor(std::move(t));
}

}  // namespace

int unmerge_batch_products(Graph& g) {
  if (g.batch <= 1) return 0;
  std::map<int, std::vector<BatchAxis>> axes;
  try {
    axes = batch_axes(g, g.batch);
  } catch (const InputError&) {
    return 0;  // an axis holding the batch twice: nothing here is sure enough to rewrite
  }
  const std::vector<std::vector<int>> readers = g.consumers();
  int done = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& gemm = g.nodes[i];
    if (gemm.op_type != "Gemm" || gemm.inputs.size() < 2 || gemm.attr_int("transA", 0) != 0 ||
        gemm.attr_float("alpha", 1.0) != 1.0 || gemm.attr_float("beta", 1.0) != 1.0)
      continue;
    const int a = gemm.inputs[0], w = gemm.inputs[1], bias = gemm.inputs.size() > 2 ? gemm.inputs[2] : -1;
    const int first = g.tensors[static_cast<size_t>(a)].producer;
    if (first < 0 || g.nodes[static_cast<size_t>(first)].op_type != "Reshape" || sole_reader(g, readers, a) != static_cast<int>(i)) continue;
    const auto found = axes.find(a);
    if (found == axes.end() || found->second.size() != 1 || found->second[0].axis != 0 || found->second[0].outer <= 1) continue;
    const BatchAxis rows = found->second[0];
    const int64_t k = g.tensors[static_cast<size_t>(a)].shape[1];
    const int y = gemm.outputs[0];
    const int64_t n = g.tensors[static_cast<size_t>(y)].shape[1];
    const int last = sole_reader(g, readers, y);
    const Shape unmerged_out{rows.outer, g.batch * rows.inner, n};
    if (last < 0 || g.nodes[static_cast<size_t>(last)].op_type != "Reshape" ||
        g.tensors[static_cast<size_t>(g.nodes[static_cast<size_t>(last)].outputs[0])].shape != unmerged_out)
      continue;
    if (bias >= 0 && g.tensors[static_cast<size_t>(bias)].shape != Shape{n}) continue;

    // The first Reshape now keeps the batch on an axis of its own.
    Node& reshape = g.nodes[static_cast<size_t>(first)];
    Tensor& at = g.tensors[static_cast<size_t>(a)];
    at.shape = {rows.outer, g.batch * rows.inner, k};
    reshape.inputs[1] = constant_shape(g, at.name + "#unmerged", at.shape);
    Attribute eq;
    eq.kind = Attribute::Kind::String;
    eq.s = gemm.attr_int("transB", 0) != 0 ? "obk,nk->obn" : "obk,kn->obn";
    Node& tail = g.nodes[static_cast<size_t>(last)];
    if (bias < 0) {
      // The final Reshape's node computes the product; the Gemm is left unread.
      tail.op_type = "Einsum";
      tail.name = gemm.name;
      tail.inputs = {a, w};
      tail.attrs = {{"equation", eq}};
      gemm.name += "/merged";
    } else {
      const DType dtype = g.tensors[static_cast<size_t>(y)].dtype;
      const int product = activation(g, g.tensors[static_cast<size_t>(y)].name + "#unmerged", unmerged_out, dtype, static_cast<int>(i));
      Node& e = g.nodes[i];
      e.op_type = "Einsum";
      e.inputs = {a, w};
      e.outputs = {product};
      e.attrs = {{"equation", eq}};
      Node& add = g.nodes[static_cast<size_t>(last)];
      add.op_type = "Add";
      add.name = e.name + "/bias";
      add.inputs = {product, bias};
      add.attrs.clear();
      g.tensors[static_cast<size_t>(y)].producer = -1;
    }
    ++done;
  }
  return done;
}

}  // namespace tensoropt
