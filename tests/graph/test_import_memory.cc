// What importing a model with inline weights costs in memory: the importer skims the file, seeking
// over the element data of large initializers (graph/model_skim.h), so `inspect` on a model of
// 96 MiB of inline weights peaks at a small part of that, not at one copy of it or three.
#include <doctest/doctest.h>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <onnx/onnx_pb.h>

#include "graph/import.h"
#include "tests/onnx_builder.h"

namespace tensoropt {
namespace {

// The peak resident memory, in KiB, of running the CLI with these arguments (exit status 0).
long child_peak_kib(const std::string& a, const std::string& b) {
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    std::freopen("/dev/null", "w", stdout);
    execl(TENSOROPT_BINARY, TENSOROPT_BINARY, a.c_str(), b.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  rusage usage{};
  REQUIRE(wait4(pid, &status, 0, &usage) == pid);
  CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  return usage.ru_maxrss;
}

}  // namespace

TEST_CASE("import: a model's inline weights are not held in memory") {
#if defined(__SANITIZE_ADDRESS__)
  // AddressSanitizer keeps freed memory in quarantine, so the peak is not the importer's.
  MESSAGE("skipped under AddressSanitizer: its quarantine holds freed memory");
  return;
#endif
  // A child's peak counts what this process holds when it forks: the model is built and written
  // by a child of its own, and imported here only after the measurements.
  const std::string path = (std::filesystem::temp_directory_path() / "tensoropt_inline_weights.onnx").string();
  const pid_t writer = fork();
  REQUIRE(writer >= 0);
  if (writer == 0) {
    // Three weights of 8 Mi floats (32 MiB each), 96 MiB of raw_data in the file, as exporters
    // write weights.
    test::ModelBuilder b;
    b.input("x", {4, 2048});
    for (const char* w : {"w1", "w2", "w3"}) b.floats(w, {2048, 4096}, 0.25f);
    b.node("MatMul", {"x", "w1"}, {"h1"}).node("Relu", {"h1"}, {"r1"});
    b.node("MatMul", {"x", "w2"}, {"h2"}).node("Add", {"h2", "r1"}, {"s"});
    b.node("MatMul", {"x", "w3"}, {"h3"}).node("Add", {"h3", "s"}, {"y"}).output("y");
    onnx::ModelProto m;
    if (!m.ParseFromString(b.bytes())) _exit(1);
    for (onnx::TensorProto& t : *m.mutable_graph()->mutable_initializer()) {
      t.set_raw_data(std::string(reinterpret_cast<const char*>(t.float_data().data()), sizeof(float) * static_cast<size_t>(t.float_data_size())));
      t.clear_float_data();
    }
    std::ofstream f(path, std::ios::binary);
    f << m.SerializeAsString();
    _exit(f ? 0 : 1);
  }
  int written = 0;
  REQUIRE(waitpid(writer, &written, 0) == writer);
  REQUIRE((WIFEXITED(written) && WEXITSTATUS(written) == 0));
  const auto file_kib = static_cast<long>(std::filesystem::file_size(path) / 1024);
  CAPTURE(file_kib);
  REQUIRE(file_kib >= 96 * 1024);
  // The baseline (a tiny model) plus a quarter of the file: holding the weights once (a parse of
  // the whole file) would pass it.
  const long base = child_peak_kib("inspect", std::string(TENSOROPT_SOURCE_DIR) + "/tests/fixtures/models/llama_tiny.onnx");
  const long peak = child_peak_kib("inspect", path);
  CAPTURE(base);
  CAPTURE(peak);
  CHECK(peak < base + file_kib / 4);
  // The graph is imported whole: shapes of the large weights, without their values.
  const Graph g = import_onnx_file(path);
  const int w1 = g.find("w1");
  REQUIRE(w1 >= 0);
  CHECK(g.tensors[static_cast<size_t>(w1)].shape == Shape{2048, 4096});
  CHECK_FALSE(g.tensors[static_cast<size_t>(w1)].value.has_value());
  std::filesystem::remove(path);
}

}  // namespace tensoropt
