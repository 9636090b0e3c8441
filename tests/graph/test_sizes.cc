// Tensor sizes up to the int64 limit: a tensor is accepted while its bytes fit in 64 bits with a
// factor 2 to spare (graph/ops/helpers.h, kMaxElements), refused past it naming the tensor or node,
// and the sums over several tensors (a node's bytes moved, a model's totals) are checked.
#include <doctest/doctest.h>

#include <cmath>

#include "graph/error.h"
#include "graph/import.h"
#include "graph/summary.h"
#include "tests/onnx_builder.h"

namespace tensoropt {
namespace {

using test::ModelBuilder;

constexpr int kFloat = 1, kBool = 9, kDouble = 11;  // onnx::TensorProto element types
constexpr int64_t kMax = (int64_t{1} << 59) - 1;     // the most elements a tensor may have

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// The InputError importing (and summarising) `bytes` throws.
std::string error_of(const std::string& bytes) {
  try {
    summarize(import_onnx_bytes(bytes, "big.onnx", {.batch = std::nullopt, .onnx_cross_check = false}));
  } catch (const InputError& e) {
    std::string what = e.what();
    CHECK(what.find('\n') == std::string::npos);
    CHECK(what.rfind("big.onnx", 0) == 0);
    return what;
  }
  FAIL("expected an InputError");
  return "";
}

}  // namespace

TEST_CASE("sizes: a tensor of 2^45 elements imports with exact counts, and one of 2^59 - 1 float64 elements") {
  // GPT-2's logits at 32,768 sequences, [32768,1024,50257], are 2^40.6 elements.
  std::string m = ModelBuilder().input("x", {32768, 1024, 1048576}, kFloat).node("Relu", {"x"}, {"y"}).output("y").bytes();
  Graph g = import_onnx_bytes(m, "big.onnx", {.batch = std::nullopt, .onnx_cross_check = false});
  CHECK(g.tensors[static_cast<size_t>(g.outputs[0])].elements() == int64_t{1} << 45);
  ModelSummary s = summarize(g);
  CHECK(s.fwd_bytes == int64_t{1} << 48);  // reads and writes 2^45 float32 elements
  CHECK(s.fwd_flops == doctest::Approx(std::ldexp(1.0, 45)));

  std::string widest = ModelBuilder().input("x", {kMax}, kDouble).node("Relu", {"x"}, {"y"}).output("y").bytes();
  Graph w = import_onnx_bytes(widest, "big.onnx", {.batch = std::nullopt, .onnx_cross_check = false});
  CHECK(w.tensors[static_cast<size_t>(w.outputs[0])].bytes() == kMax * 8);
  CHECK(summarize(w).fwd_bytes == 2 * kMax * 8);  // 2^63 - 16: the sum of two such tensors still fits
}

TEST_CASE("sizes: a tensor whose bytes could overflow int64 is refused naming it") {
  std::string e = error_of(ModelBuilder().input("huge", {int64_t{1} << 31, int64_t{1} << 31}, kFloat)
                               .node("Relu", {"huge"}, {"y"})
                               .output("y")
                               .bytes());
  CHECK(has(e, "tensor 'huge'"));
  CHECK(has(e, "[2147483648,2147483648]"));
  CHECK(has(e, "64 bits"));
  // Just past the limit, and a node's output past it (named by its node).
  CHECK(has(error_of(ModelBuilder().input("x", {kMax + 1}, kBool).node("Not", {"x"}, {"y"}).output("y").bytes()),
            "tensor 'x'"));
  std::string out = error_of(ModelBuilder()
                                 .input("col", {int64_t{1} << 30, 1}, kFloat)
                                 .input("row", {1, int64_t{1} << 30}, kFloat)
                                 .node("Add", {"col", "row"}, {"outer"}, "outer_sum")
                                 .output("outer")
                                 .bytes());
  CHECK(has(out, "'outer_sum' (Add)"));
  CHECK(has(out, "[1073741824,1073741824]"));
}

TEST_CASE("sizes: sums over several tensors are checked, naming the node or the model") {
  // Each of three tensors fits; the bytes the Where reads (2 x 2^62 + 2^59) do not.
  std::string where = ModelBuilder()
                          .input("c", {kMax}, kBool)
                          .input("a", {kMax}, kDouble)
                          .input("b", {kMax}, kDouble)
                          .node("Where", {"c", "a", "b"}, {"y"}, "pick")
                          .output("y")
                          .bytes();
  std::string e = error_of(where);
  CHECK(has(e, "node 'pick' (Where)"));
  CHECK(has(e, "2^63 bytes"));
  // Each node's bytes fit; the model's total of two does not.
  std::string chain =
      ModelBuilder().input("x", {kMax}, kDouble).node("Relu", {"x"}, {"h"}).node("Relu", {"h"}, {"y"}).output("y").bytes();
  CHECK(has(error_of(chain), "forward bytes moved"));
}

}  // namespace tensoropt
