// The ONNX importer: reads a model file and returns a Graph in which every tensor has a static
// shape, nodes are in topological order, and shape-only subgraphs are folded into constants.
//
// Steps: parse the protobuf; classify graph inputs and initializers into data inputs, trainable
// parameters, buffers and constants; specialise the batch axis of the data inputs; walk the nodes
// in order, inferring each output's type with the op catalogue and folding nodes whose inputs are
// all known; drop folded and dead nodes; propagate batch axes. ONNX's own shape inference runs on
// the specialised model and every shape it finds must agree with ours (a disagreement is an
// internal fault naming the node).
//
// Errors: a file that is missing, unreadable, not ONNX or truncated, an unsupported op, a dynamic
// axis other than the batch, or a shape that cannot be made static throws InputError with one line
// naming the file and the node or tensor. Thread-safe: no shared state.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graph/ir.h"

namespace tensoropt {

struct ImportOptions {
  std::optional<int64_t> batch = {};  // re-specialise the batch axis (axis 0 of every data input)
  // The batch for a model whose batch axis is dynamic when `batch` is not given (inspect's default:
  // 8, one device's share of plan's 8 per GPU); nullopt: such a model needs `batch`.
  std::optional<int64_t> dynamic_batch = {};
  bool onnx_cross_check = true;       // also run ONNX shape inference and compare
  // Glob patterns (fnmatch: *, ?, [...]) over tensor names: matching parameters are frozen, kept
  // as buffers and never trained. A pattern that matches no parameter is an InputError.
  std::vector<std::string> frozen = {};
};

Graph import_onnx_file(const std::string& path, const ImportOptions& options = {});
// The bytes of an ONNX file, read once: InputError for a missing file, a directory, an unreadable
// file or one of 2 GiB or more (protobuf's limit).
std::string read_model_file(const std::string& path);
// Any file's bytes, read once; InputError naming it when it is missing, a directory or unreadable.
std::string read_file(const std::string& path);
// `label` names the source in error messages.
Graph import_onnx_bytes(const std::string& bytes, const std::string& label, const ImportOptions& options = {});

}  // namespace tensoropt
