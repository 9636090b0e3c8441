// The skim of a model file (graph/model_skim.h): the file's model with the data of large
// initializers left out and every other field as written; files that are not whole models refused.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <onnx/onnx_pb.h>

#include "graph/error.h"
#include "graph/import.h"
#include "graph/model_skim.h"
#include "tests/onnx_builder.h"

namespace tensoropt {
namespace {

std::string write_file(const std::string& name, const std::string& bytes) {
  const std::string path = (std::filesystem::temp_directory_path() / name).string();
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

// A model with weights of every size class: "big" over 1 MiB in raw_data, "packed" over 1 MiB in
// packed float_data, "mid" of more elements than the importer folds but under 1 MiB (the skim
// keeps it; the importer clears it), and "small".
onnx::ModelProto sample_model() {
  test::ModelBuilder b;
  b.input("x", {4, 600});
  b.floats("big", {600, 600}, 0.25f).floats("packed", {600, 600}, 0.5f).floats("mid", {600, 120}, 0.75f);
  b.floats("small", {600}, 1.0f);
  b.node("MatMul", {"x", "big"}, {"h1"}).node("MatMul", {"h1", "packed"}, {"h2"});
  b.node("Add", {"h2", "small"}, {"h3"}).node("MatMul", {"h3", "mid"}, {"y"}).output("y");
  onnx::ModelProto m;
  REQUIRE(m.ParseFromString(b.bytes()));
  m.set_producer_name("skim test");
  m.mutable_graph()->set_doc_string("kept");
  for (onnx::TensorProto& t : *m.mutable_graph()->mutable_initializer()) {
    if (t.name() != "big") continue;
    t.set_raw_data(std::string(reinterpret_cast<const char*>(t.float_data().data()), sizeof(float) * static_cast<size_t>(t.float_data_size())));
    t.clear_float_data();
  }
  return m;
}

}  // namespace

TEST_CASE("model skim: the data of initializers over 1 MiB is left out, everything else is the file's") {
  const onnx::ModelProto m = sample_model();
  const std::string path = write_file("tensoropt_skim.onnx", m.SerializeAsString());
  const std::string skimmed = skim_model_file(path);
  CHECK(skimmed.size() < 600 * 120 * 4 + 16 * 1024);  // "mid" and the graph, not 2.9 MB of weights
  onnx::ModelProto got;
  REQUIRE(got.ParseFromString(skimmed));
  onnx::ModelProto want = m;
  for (onnx::TensorProto& t : *want.mutable_graph()->mutable_initializer()) {
    if (t.name() == "big") t.clear_raw_data();
    if (t.name() == "packed") t.clear_float_data();
  }
  CHECK(got.SerializeAsString() == want.SerializeAsString());
  const auto& inits = got.graph().initializer();
  for (const onnx::TensorProto& t : inits) {
    CAPTURE(t.name());
    CHECK(t.dims_size() == (t.name() == "small" ? 1 : 2));
    CHECK(t.float_data_size() == (t.name() == "mid" ? 600 * 120 : t.name() == "small" ? 600 : 0));
    CHECK(t.raw_data().empty());
  }
  // The importer gives the same graph from the file as from its bytes.
  const Graph from_file = import_onnx_file(path);
  const Graph from_bytes = import_onnx_bytes(m.SerializeAsString(), path);
  REQUIRE(from_file.tensors.size() == from_bytes.tensors.size());
  for (size_t i = 0; i < from_file.tensors.size(); ++i) {
    CHECK(from_file.tensors[i].name == from_bytes.tensors[i].name);
    CHECK(from_file.tensors[i].shape == from_bytes.tensors[i].shape);
    CHECK(from_file.tensors[i].value.has_value() == from_bytes.tensors[i].value.has_value());
  }
  std::filesystem::remove(path);
}

TEST_CASE("model skim: a truncated or malformed file is refused naming it") {
  const std::string good = sample_model().SerializeAsString();
  // Cut inside the skipped weight, inside a kept field, inside the graph's last bytes; a stray
  // group tag; a field numbered 0.
  for (const std::string& bytes : {good.substr(0, good.size() / 2), good.substr(0, good.size() - 3),
                                   good.substr(0, 40), good + std::string("\x0b", 1), good + std::string("\x00\x01", 2)}) {
    const std::string path = write_file("tensoropt_skim_bad.onnx", bytes);
    CAPTURE(bytes.size());
    CHECK_THROWS_WITH_AS(skim_model_file(path), doctest::Contains("tensoropt_skim_bad.onnx: not an ONNX model, or truncated"), InputError);
    std::filesystem::remove(path);
  }
  CHECK_THROWS_WITH_AS(skim_model_file("/nonexistent/tensoropt.onnx"), "/nonexistent/tensoropt.onnx: cannot be read", InputError);
}

}  // namespace tensoropt
