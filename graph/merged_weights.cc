#include "graph/merged_weights.h"

#include "graph/units.h"

namespace tensoropt {

MergedWeights merged_weights(const Graph& g) {
  MergedWeights m;
  for (const Node& n : g.nodes) {
    if (n.op_type != "Identity" || n.inputs.empty() || n.outputs.empty() || n.inputs[0] < 0) continue;
    const Tensor& in = g.tensors[static_cast<size_t>(n.inputs[0])];
    if (in.kind != TensorKind::Parameter) continue;
    const Tensor& out = g.tensors[static_cast<size_t>(n.outputs[0])];
    // The example names a parameter the user knows, where the export kept one's name.
    const bool named = out.name.rfind("onnx::", 0) != 0;
    if (m.copies == 0 || (named && !m.example_named)) {
      m.example = "'" + out.name + "' reads '" + in.name + "'";
      m.example_named = named;
    }
    ++m.copies;
    m.elements += out.elements();
  }
  return m;
}

std::string merged_weights_note(const MergedWeights& m, int64_t parameters) {
  if (m.copies == 0) return "";
  std::string s = "the export merged ";
  s += std::to_string(m.copies);
  s += m.copies == 1 ? " parameter" : " parameters";
  s += " into others of equal value (";
  s += m.example;
  s += "), so layers share weights that PyTorch trains apart (it counts ";
  s += with_commas(parameters + m.elements);
  s += " parameters, not ";
  s += with_commas(parameters);
  s += "): torch.onnx.export does this for an untrained model in eval mode. Export with "
       "training=torch.onnx.TrainingMode.TRAINING or after training; if the sharing is meant (as in ALBERT), "
       "tensoropt plans and trains the model as exported";
  return s;
}

}  // namespace tensoropt
