// Checkpoints: the trained model as one ONNX file, optimizer state beside it.
//
// save_checkpoint writes FILE.onnx: the original model with every parameter and buffer the
// runtime holds written as a float32 (or int64) initializer, replacing the file's bytes, or
// added for a weight that was a typed graph input; PyTorch (onnx.load + numpy_helper), onnxruntime
// and `run --resume` read it. When the weights pass 1.5 GiB they go to FILE.onnx.data as ONNX
// external data (protobuf's 2 GiB limit). Then FILE.onnx.optim (format in docs/runtime.md):
// "TOPTOPT1", a little-endian uint64 header length, a JSON header (optimizer, settings, step,
// and per state array its tensor name, slot, shape and byte offset), the raw float32 arrays. Every
// file is written to FILE.part, and the files are renamed only once all are complete, so an
// interrupted save leaves no half file and the previous checkpoint's set as it was. An external
// data location must be a file beside the checkpoint (no absolute path, no "..") of the tensor's
// length.
//
// load_checkpoint reads FILE.onnx's initializers into `weights` by tensor name (every parameter
// and buffer must be there with its shape: otherwise an InputError says the checkpoint is of
// another model) and, when FILE.onnx.optim exists, the optimizer's state and step count (its
// optimizer must match). Values are copied bit for bit, so a resumed run continues as the
// uninterrupted one would.
#pragma once

#include <map>
#include <string>

#include "graph/ir.h"
#include "launcher/runtime/optimizer.h"

namespace tensoropt::runtime {

// Weights above this many bytes in all go to FILE.onnx.data (1.5 GiB: protobuf refuses a message of
// 2 GiB, and the rest of the model needs room).
constexpr int64_t kExternalDataAbove = int64_t{3} << 29;

void save_checkpoint(const std::string& path, const std::string& model_path, const Graph& g, Backend& backend,
                     const std::map<int, Array>& weights, Optimizer& optimizer,
                     int64_t external_above = kExternalDataAbove);

// Returns whether optimizer state was found (FILE.onnx.optim).
bool load_checkpoint(const std::string& path, const Graph& g, Backend& backend, std::map<int, Array>& weights,
                     Optimizer& optimizer);

}  // namespace tensoropt::runtime
