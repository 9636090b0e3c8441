// The model's state on a device: every parameter, buffer and constant the graph's nodes read, as
// Arrays keyed by tensor index (the map Executor reads and the optimizer updates).
//
// Values come, in order, from: the importer's folded value (small constants); the bytes in the
// ONNX file of the initializer, or of the Constant node, of that name (inline, or external data
// beside the model, as onnx.save_model writes it); otherwise, for a weightless export (weights as
// typed graph inputs) or an initializer's missing external data, PyTorch's initialisation of the
// layer that reads the tensor (init_like_pytorch), seeded.
// Float tensors live as float32 whatever the file stores (float16, bfloat16 and float64 are
// converted); integer tensors as int64, bools as bool.
//
// Errors (InputError, naming the file and tensor): an external data file that exists but is too
// short, data that does not match the declared shape, an element type the runtime cannot hold, a
// Constant node whose external data is missing.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "graph/ir.h"
#include "launcher/runtime/backend.h"

namespace tensoropt::runtime {

struct LoadedState {
  std::map<int, Array> arrays;          // tensor index -> value on the device
  std::vector<std::string> initialised;  // tensors whose values were not in the file
};

// Loads (or initialises) the state of `g`, imported from the ONNX file `model_path`.
LoadedState load_state(const Graph& g, const std::string& model_path, Backend& backend, uint64_t seed);

}  // namespace tensoropt::runtime
