// Inputs the fuzzer (fuzz/import_fuzzer.cc) once crashed the importer with, replayed at the
// export's batch and re-batched to 1, 2 and 64, each with and without ONNX's cross-check. Every
// file's outcome is recorded in fuzz/regressions/expected.json, and each replay must give exactly
// that outcome: the import succeeds with the recorded output shapes, or it is refused with an
// InputError whose one-line message contains the recorded text. The test fails on a file the
// manifest lacks (printing the file's outcomes, to be recorded), on an entry with no file, and on
// any other exception. Under the sanitizer build it also proves the undefined behaviour is gone.
//
// The manifest maps each file name to an outcome, or to one outcome at the export's batch and
// one re-batched:
//   {"refused": "text in the message"}
//   {"imports": {"output name": "[B,3,8,39]", ...}}   every graph output and its shape
//   {"export batch": <outcome>, "--batch B": <outcome>}
// In a re-batched outcome a B that stands as a dimension of a shape is the batch asked for.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "graph/error.h"
#include "graph/import.h"
#include "graph/summary.h"

namespace tensoropt {
namespace {

// `text` with every B that stands as a dimension of a shape ("[B,", ",B,", ",B]", "[B]") replaced
// by `batch`; unchanged without one.
std::string with_batch(std::string text, std::optional<int64_t> batch) {
  if (!batch) return text;
  for (size_t p = 1; p + 1 < text.size(); ++p) {
    bool dim = text[p] == 'B' && (text[p - 1] == '[' || text[p - 1] == ',') && (text[p + 1] == ',' || text[p + 1] == ']');
    if (dim) text.replace(p, 1, std::to_string(*batch));
  }
  return text;
}

// One import of a regression file, rendered as a line: "refused: <message>" or
// "imports: <output> <shape>, ...", the outputs sorted by name.
std::string replay(const std::string& bytes, const std::string& label, std::optional<int64_t> batch, bool cross_check) {
  try {
    Graph g = import_onnx_bytes(bytes, label, {.batch = batch, .onnx_cross_check = cross_check});
    summarize(g);
    std::map<std::string, std::string> outputs;
    for (int t : g.outputs) {
      const Tensor& x = g.tensors[static_cast<size_t>(t)];
      outputs[x.name] = shape_str(x.shape);
    }
    std::string line = "imports:";
    for (const auto& [name, shape] : outputs) line += (line.ends_with(':') ? " " : ", ") + name + " " + shape;
    return line;
  } catch (const InputError& e) {
    return std::string("refused: ") + e.what();
  }
}

// The outcome `want` (one of the manifest's first two forms) for a replay at `batch`, checked
// against what the replay gave.
void check_outcome(const nlohmann::json& want, std::optional<int64_t> batch, const std::string& got) {
  if (want.contains("refused")) {
    std::string text = with_batch(want.at("refused").get<std::string>(), batch);
    CHECK_MESSAGE(got.starts_with("refused: "), "expected a refusal containing \"" << text << "\", got " << got);
    CHECK_MESSAGE(got.find(text) != std::string::npos, "expected \"" << text << "\" in " << got);
    CHECK_MESSAGE(got.find('\n') == std::string::npos, "a refusal of more than one line: " << got);
    return;
  }
  REQUIRE_MESSAGE(want.contains("imports"), "an outcome is {\"refused\": ...} or {\"imports\": ...}: " << want.dump());
  std::string line = "imports:";
  for (const auto& [name, shape] : want.at("imports").items()) {
    line += (line.ends_with(':') ? " " : ", ") + name + " " + with_batch(shape.get<std::string>(), batch);
  }
  CHECK(got == line);
}

}  // namespace

TEST_CASE("fuzz regressions import or are refused exactly as fuzz/regressions/expected.json says") {
  auto dir = std::filesystem::path(TENSOROPT_SOURCE_DIR) / "fuzz" / "regressions";
  std::ifstream manifest_file(dir / "expected.json");
  REQUIRE(manifest_file);
  const nlohmann::json manifest = nlohmann::json::parse(manifest_file);
  std::set<std::string> seen;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".onnx") continue;
    const std::string name = entry.path().filename().string();
    seen.insert(name);
    CAPTURE(name);
    std::ifstream f(entry.path(), std::ios::binary);
    std::ostringstream ss;
    ss << f.rdbuf();
    const std::optional<int64_t> batches[] = {std::nullopt, 1, 2, 64};
    if (!manifest.contains(name)) {
      std::string outcomes;
      for (std::optional<int64_t> batch : batches) {
        outcomes += "\n  batch " + (batch ? std::to_string(*batch) : std::string("of the export")) + ": " +
                    replay(ss.str(), entry.path().string(), batch, true);
      }
      FAIL_CHECK(name << " has no entry in fuzz/regressions/expected.json; its outcomes:" << outcomes);
      continue;
    }
    const nlohmann::json& expected = manifest.at(name);
    for (std::optional<int64_t> batch : batches) {
      CAPTURE(batch.value_or(0));
      const nlohmann::json& want =
          expected.contains("export batch") ? expected.at(batch ? "--batch B" : "export batch") : expected;
      for (bool cross_check : {false, true}) {
        CAPTURE(cross_check);
        try {
          check_outcome(want, batch, replay(ss.str(), entry.path().string(), batch, cross_check));
        } catch (const std::exception& e) {
          FAIL_CHECK("unexpected exception: " << e.what());
        }
      }
    }
  }
  for (const auto& [name, outcome] : manifest.items()) {
    CHECK_MESSAGE(seen.count(name) == 1, "fuzz/regressions/expected.json names " << name << ", which is not in fuzz/regressions/");
  }
  CHECK(seen.size() >= 8);
}

}  // namespace tensoropt
