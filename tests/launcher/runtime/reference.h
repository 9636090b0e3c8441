// The PyTorch reference fixtures of tests/fixtures/runtime/ (made by make_reference.py): a model's
// NAME.ref.json (losses per run, and a table of tensors) with the float32 tensors of NAME.ref.bin,
// and the optimizer settings each run used. Shared by the one-device and the sharded tests.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "graph/ir.h"
#include "launcher/runtime/optimizer.h"

namespace tensoropt::test {

// Where the runtime's fixtures are (under TENSOROPT_SOURCE_DIR when that variable is set).
const std::string& runtime_fixtures();

struct Reference {
  nlohmann::json head;
  std::string blob;
  // The tensor stored as `name` ("grad/<param>", "<run>/<tensor>"), its shape in `shape`; empty
  // when there is none.
  std::vector<float> tensor(const std::string& name, Shape& shape) const;
};

// NAME's reference (a failed test when its files are missing).
Reference reference(const std::string& name);

// The settings of make_reference.py's optimizer `opt` ("sgd", "adam", "adamw").
runtime::OptimizerSettings reference_settings(const std::string& opt);

}  // namespace tensoropt::test
