// `tensoropt inspect`: what is in a model, and what one training step of it costs on one device.
#include <iomanip>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>

#include "cli/commands.h"
#include "cli/format.h"
#include "graph/import.h"
#include "graph/merged_weights.h"
#include "graph/summary.h"

namespace tensoropt::cli {
namespace {

using nlohmann::ordered_json;

// Version of the JSON that `inspect --json` prints; documented in docs/cli.md.
constexpr int kInspectFormat = 1;

ordered_json tensor_json(const Tensor& t) {
  return {{"name", t.name}, {"dtype", dtype_name(t.dtype)}, {"shape", t.shape}};
}

std::string tensor_line(const Tensor& t) {
  return t.name + " " + std::string(dtype_name(t.dtype)) + " " + shape_str(t.shape);
}

std::string shapes_of(const Graph& g, const std::vector<int>& ids) {
  std::string s;
  for (int t : ids) {
    if (t < 0) continue;
    if (!s.empty()) s += " ";
    s += shape_str(g.tensors[static_cast<size_t>(t)].shape);
  }
  return s;
}

void print_json(const Graph& g, const ModelSummary& s, bool verbose, std::ostream& out) {
  ordered_json j;
  j["format_version"] = kInspectFormat;
  j["model"] = {{"path", g.source_path}, {"graph_name", g.name}, {"opset", g.opset}, {"batch", g.batch}};
  j["inputs"] = ordered_json::array();
  for (int t : g.inputs) j["inputs"].push_back(tensor_json(g.tensors[static_cast<size_t>(t)]));
  j["outputs"] = ordered_json::array();
  for (int t : g.outputs) j["outputs"].push_back(tensor_json(g.tensors[static_cast<size_t>(t)]));
  j["nodes"] = s.nodes;
  j["ops"] = s.op_counts;
  j["trainable_parameters"] = s.trainable_parameters;
  j["parameter_tensors"] = s.parameter_tensors;
  j["parameter_bytes"] = s.parameter_bytes;
  const MergedWeights merged = merged_weights(g);
  j["merged_parameters"] = {{"copies", merged.copies}, {"elements", merged.elements}};
  j["warnings"] = ordered_json::array();
  if (merged.copies > 0) j["warnings"].push_back(merged_weights_note(merged, s.trainable_parameters));
  j["buffers"] = {{"elements", s.buffer_elements}, {"bytes", s.buffer_bytes}, {"frozen_parameters", s.frozen_parameters}};
  j["flops"] = {{"forward", s.fwd_flops}, {"backward", s.bwd_flops}, {"forward_by_op", s.fwd_flops_by_op}};
  j["activation_bytes"] = s.activation_bytes;
  j["memory_traffic_bytes"] = {{"forward", s.fwd_bytes}, {"backward", s.bwd_bytes}};
  if (verbose) {
    std::vector<NodeCost> costs = node_costs(g);
    ordered_json list = ordered_json::array();
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const Node& n = g.nodes[i];
      ordered_json in = ordered_json::array(), outs = ordered_json::array();
      for (int t : n.inputs) {
        if (t >= 0) in.push_back(tensor_json(g.tensors[static_cast<size_t>(t)]));
      }
      for (int t : n.outputs) {
        if (t >= 0) outs.push_back(tensor_json(g.tensors[static_cast<size_t>(t)]));
      }
      list.push_back({{"name", n.name}, {"op", n.op_type}, {"inputs", in}, {"outputs", outs},
                      {"flops", {{"forward", costs[i].fwd_flops}, {"backward", costs[i].bwd_flops}}},
                      {"saved_bytes", costs[i].saved_bytes}});
    }
    j["node_list"] = list;
  }
  out << j.dump(2) << "\n";
}

void print_text(const Graph& g, const ModelSummary& s, bool verbose, std::ostream& out) {
  out << "model        " << g.source_path << " (opset " << g.opset << "), batch " << g.batch << "\n";
  for (int t : g.inputs) out << "input        " << tensor_line(g.tensors[static_cast<size_t>(t)]) << "\n";
  for (int t : g.outputs) out << "output       " << tensor_line(g.tensors[static_cast<size_t>(t)]) << "\n";
  out << "parameters   " << with_commas(s.trainable_parameters) << " trainable in " << s.parameter_tensors
      << " tensors (" << bytes_human(static_cast<double>(s.parameter_bytes)) << ")\n";
  out << "buffers      " << with_commas(s.buffer_elements) << " (" << bytes_human(static_cast<double>(s.buffer_bytes)) << ")";
  if (s.frozen_parameters > 0) out << ", of which " << with_commas(s.frozen_parameters) << " frozen parameters (--frozen)";
  out << "\n";
  out << "flops        forward " << flops_human(s.fwd_flops) << ", backward " << flops_human(s.bwd_flops)
      << " per step\n";
  out << "activations  " << bytes_human(static_cast<double>(s.activation_bytes)) << " saved for backward\n";
  const std::string merged = merged_weights_note(merged_weights(g), s.trainable_parameters);
  if (!merged.empty()) out << "warning      " << merged << "\n";
  out << "\n" << std::left << std::setw(22) << "op" << std::right << std::setw(7) << "count" << std::setw(16)
      << "forward FLOP" << "\n";
  for (const auto& [op, count] : s.op_counts) {
    out << std::left << std::setw(22) << op << std::right << std::setw(7) << count << std::setw(16)
        << flops_human(s.fwd_flops_by_op.at(op)) << "\n";
  }
  out << std::left << std::setw(22) << "total" << std::right << std::setw(7) << s.nodes << std::setw(16)
      << flops_human(s.fwd_flops) << "\n";
  if (!verbose) return;
  std::vector<NodeCost> costs = node_costs(g);
  out << "\n#  node  op  inputs -> outputs  forward FLOP  saved\n";
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    out << i << "  " << n.name << "  " << n.op_type << "  " << shapes_of(g, n.inputs) << " -> "
        << shapes_of(g, n.outputs) << "  " << flops_human(costs[i].fwd_flops) << "  "
        << bytes_human(static_cast<double>(costs[i].saved_bytes)) << "\n";
  }
}

}  // namespace

int run_inspect(const InspectArgs& args, std::ostream& out) {
  ImportOptions opt;
  opt.batch = args.batch;
  opt.dynamic_batch = kDefaultBatchPerDevice;  // a dynamic batch axis takes plan's default for one device
  opt.frozen = args.frozen;
  Graph g = import_onnx_file(args.model, opt);
  ModelSummary s = summarize(g);
  if (args.json) print_json(g, s, args.verbose, out);
  else print_text(g, s, args.verbose, out);
  return 0;
}

}  // namespace tensoropt::cli
