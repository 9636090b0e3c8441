// A Constant node's value reaches the runtime whatever its size and wherever the model keeps it:
// inline and small (the importer folds it), inline and large, or as external data beside the
// model (the importer keeps its type and shape, and load_state reads the file). A Constant whose
// external data is missing (by load_state), or whose value is of strings (by the importer), is
// refused with an InputError naming it; none of them is an internal fault (the fuzzer's find of
// 2026-11-30: such Constants failed a check in the importer's folding).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "graph/error.h"
#include "graph/import.h"
#include "launcher/runtime/cpu/backend.h"
#include "launcher/runtime/weights.h"
#include "tests/onnx_builder.h"

namespace tensoropt {
namespace {

using namespace runtime;

// y = x + c, with c a Constant node of `n` floats; the model's Constant value as `edit` leaves it.
template <typename Edit>
std::string write_model(const std::filesystem::path& dir, int64_t n, Edit edit) {
  test::ModelBuilder b;
  b.input("x", {n}).node("Constant", {}, {"c"}).attr_t("value", {n}, 0.0f).node("Add", {"x", "c"}, {"y"}).output("y");
  onnx::ModelProto m;
  REQUIRE(m.ParseFromString(b.bytes()));
  onnx::TensorProto& t = *m.mutable_graph()->mutable_node(0)->mutable_attribute(0)->mutable_t();
  t.clear_float_data();
  t.clear_raw_data();
  edit(t);
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "model.onnx").string();
  std::ofstream(path, std::ios::binary) << m.SerializeAsString();
  return path;
}

// The raw little-endian bytes of floats k * 0.25 for k < n.
std::string ramp_bytes(int64_t n) {
  std::string bytes;
  for (int64_t k = 0; k < n; ++k) {
    float v = static_cast<float>(k) * 0.25f;
    bytes.append(reinterpret_cast<const char*>(&v), 4);
  }
  return bytes;
}

// The loaded value of tensor `name`, which the importer must have left without a value.
std::vector<float> loaded(const std::string& path, const std::string& name) {
  Graph g = import_onnx_file(path, {});
  const int t = g.find(name);
  REQUIRE(t >= 0);
  const Tensor& x = g.tensors[static_cast<size_t>(t)];
  CHECK(x.kind == TensorKind::Constant);
  CHECK(x.producer < 0);
  CHECK_FALSE(x.value.has_value());
  cpu::CpuBackend backend(1);
  LoadedState s = load_state(g, path, backend, 0);
  REQUIRE(s.arrays.count(t) == 1);
  CHECK(s.initialised.empty());
  const Array& a = s.arrays.at(t);
  return std::vector<float>(a.data<float>(), a.data<float>() + a.numel());
}

void check_ramp(const std::vector<float>& v, int64_t n) {
  REQUIRE(static_cast<int64_t>(v.size()) == n);
  for (int64_t k = 0; k < n; k += 997) CHECK(v[static_cast<size_t>(k)] == static_cast<float>(k) * 0.25f);
  CHECK(v.back() == static_cast<float>(n - 1) * 0.25f);
}

}  // namespace

TEST_CASE("constants: a large inline Constant node is a constant tensor, loaded from the file") {
  const auto dir = std::filesystem::temp_directory_path() / "tensoropt_constant_large";
  const int64_t n = 70'000;  // over the importer's fold limit
  const std::string path = write_model(dir, n, [&](onnx::TensorProto& t) { t.set_raw_data(ramp_bytes(n)); });
  check_ramp(loaded(path, "c"), n);
  std::filesystem::remove_all(dir);
}

TEST_CASE("constants: a Constant node kept as external data is read from beside the model, or refused when missing") {
  const auto dir = std::filesystem::temp_directory_path() / "tensoropt_constant_external";
  const int64_t n = 6;  // small: the importer would fold it if the value were inline
  auto external = [](onnx::TensorProto& t) {
    t.set_data_location(onnx::TensorProto::EXTERNAL);
    auto* kv = t.add_external_data();
    kv->set_key("location");
    kv->set_value("c.bin");
  };
  const std::string path = write_model(dir, n, external);
  std::ofstream((dir / "c.bin").string(), std::ios::binary) << ramp_bytes(n);
  check_ramp(loaded(path, "c"), n);

  std::filesystem::remove(dir / "c.bin");
  Graph g = import_onnx_file(path, {});  // the importer needs only the type and shape
  cpu::CpuBackend backend(1);
  CHECK_THROWS_WITH_AS(load_state(g, path, backend, 0), doctest::Contains("Constant 'c' keeps its value as external data that is not beside the model"),
                       InputError);
  std::filesystem::remove_all(dir);
}

TEST_CASE("constants: a Constant node of strings is refused, naming it") {
  const auto dir = std::filesystem::temp_directory_path() / "tensoropt_constant_strings";
  const std::string path = write_model(dir, 2, [](onnx::TensorProto& t) {
    t.set_data_type(onnx::TensorProto::STRING);
    for (char c : {'a', 'b'}) t.add_string_data(std::string(1, c));
  });
  CHECK_THROWS_WITH_AS(import_onnx_file(path, {}), doctest::Contains("(Constant): its value is of strings"), InputError);
  std::filesystem::remove_all(dir);
}

}  // namespace tensoropt
