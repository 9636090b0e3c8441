// Inputs the fuzzer (fuzz/import_fuzzer.cc) once crashed the importer with: each must now import
// or be refused with an InputError, never anything else, at the export's batch and re-batched. Under the sanitizer build this also
// proves the undefined behaviour is gone.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "graph/error.h"
#include "graph/import.h"
#include "graph/summary.h"

namespace tensoropt {

TEST_CASE("fuzz regressions import or are refused cleanly") {
  auto dir = std::filesystem::path(TENSOROPT_SOURCE_DIR) / "fuzz" / "regressions";
  int seen = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".onnx") continue;
    ++seen;
    CAPTURE(entry.path().filename().string());
    std::ifstream f(entry.path(), std::ios::binary);
    std::ostringstream ss;
    ss << f.rdbuf();
    const std::optional<int64_t> batches[] = {std::nullopt, 1, 2, 64};
    for (std::optional<int64_t> batch : batches) {
      CAPTURE(batch.value_or(0));
      for (bool cross_check : {false, true}) {
        try {
          Graph g = import_onnx_bytes(ss.str(), entry.path().string(), {.batch = batch, .onnx_cross_check = cross_check});
          summarize(g);
        } catch (const InputError&) {
          // refused with a message: fine
        } catch (const std::exception& e) {
          FAIL("unexpected exception: " << e.what());
        }
      }
    }
  }
  CHECK(seen >= 8);
}

}  // namespace tensoropt
