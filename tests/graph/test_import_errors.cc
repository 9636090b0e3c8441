// Bad models are refused with one line naming the file and the node or tensor at fault.
#include <doctest/doctest.h>

#include <onnx/onnx_pb.h>

#include "graph/error.h"
#include "graph/import.h"
#include "tests/onnx_builder.h"

namespace tensoropt {
namespace {

using test::ModelBuilder;

std::string error_of(const std::string& bytes, std::optional<int64_t> batch = 2) {
  try {
    import_onnx_bytes(bytes, "bad.onnx", {.batch = batch});
  } catch (const InputError& e) {
    std::string what = e.what();
    CHECK(what.find('\n') == std::string::npos);
    CHECK(what.rfind("bad.onnx", 0) == 0);
    return what;
  }
  FAIL("expected an InputError");
  return "";
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("bytes that are not a model") {
  CHECK(has(error_of(""), "not an ONNX model"));
  CHECK(has(error_of("hello, this is text"), "not an ONNX model"));
  std::string good = ModelBuilder().input("x", {-1, 4}).node("Relu", {"x"}, {"y"}).output("y").bytes();
  CHECK(has(error_of(good.substr(0, good.size() / 2)), "not an ONNX model"));
}

TEST_CASE("an unsupported op names the node, its type and the supported list") {
  std::string e = error_of(ModelBuilder().input("x", {-1, 4}).node("FancyOp", {"x"}, {"y"}, "my_node").output("y").bytes());
  CHECK(has(e, "'my_node' (FancyOp)"));
  CHECK(has(e, "'FancyOp' is not supported"));
  CHECK(has(e, "Concat, Constant, ConstantOfShape, Conv, ConvTranspose"));
}

TEST_CASE("a dynamic batch needs --batch, other dynamic axes are refused") {
  std::string m = ModelBuilder().input("image", {-1, 3}).node("Relu", {"image"}, {"y"}).output("y").bytes();
  std::string e = error_of(m, std::nullopt);
  CHECK(has(e, "'image'"));
  CHECK(has(e, "--batch"));
  std::string e2 = error_of(ModelBuilder().input("x", {4, -1}).node("Relu", {"x"}, {"y"}).output("y").bytes());
  CHECK(has(e2, "axis 1"));
}

TEST_CASE("inconsistent shapes name the node") {
  std::string e = error_of(ModelBuilder()
                               .input("a", {-1, 4})
                               .input("w", {5, 6})
                               .node("MatMul", {"a", "w"}, {"y"}, "proj")
                               .output("y")
                               .bytes());
  CHECK(has(e, "'proj' (MatMul)"));
  CHECK(has(e, "inner dimensions"));
}

TEST_CASE("undefined tensors, cycles and missing outputs") {
  CHECK(has(error_of(ModelBuilder().input("x", {-1, 4}).node("Add", {"x", "ghost"}, {"y"}).output("y").bytes()), "'ghost'"));
  CHECK(has(error_of(ModelBuilder()
                         .input("x", {-1, 4})
                         .node("Add", {"x", "b"}, {"a"})
                         .node("Relu", {"a"}, {"b"})
                         .output("b")
                         .bytes()),
            "cycle"));
  CHECK(has(error_of(ModelBuilder().input("x", {-1, 4}).node("Relu", {"x"}, {"y"}).output("z").bytes()), "'z'"));
}

TEST_CASE("a bad --batch value") {
  std::string m = ModelBuilder().input("x", {-1, 4}).node("Relu", {"x"}, {"y"}).output("y").bytes();
  try {
    import_onnx_bytes(m, "m.onnx", {.batch = 0});
    FAIL("expected an InputError");
  } catch (const InputError& e) {
    CHECK(has(e.what(), "--batch"));
  }
}

}  // namespace tensoropt

namespace tensoropt {

TEST_CASE("an attribute of a single-valued type that holds no value is refused, naming the node and the attribute") {
  // The fuzzer's find: Flatten's axis of type INT with no value. Read as 0 it gave [1,64]; ONNX's
  // inference took the default and said [2,32].
  ModelBuilder b;
  b.input("x", {-1, 4, 8}).node("Flatten", {"x"}, {"y"}, "flat").attr("axis", int64_t{1}).output("y");
  onnx::ModelProto m;
  REQUIRE(m.ParseFromString(b.bytes()));
  m.mutable_graph()->mutable_node(0)->mutable_attribute(0)->clear_i();
  const std::string e = error_of(m.SerializeAsString());
  CHECK(has(e, "attribute 'axis' is of type INT but holds no value"));
  CHECK(has(e, "flat"));
}

}  // namespace tensoropt
