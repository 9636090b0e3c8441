// libFuzzer target for the ONNX importer and the model summary.
//
// Input: arbitrary bytes, read as a serialized onnx::ModelProto. The importer runs with batch 2 and
// without ONNX's own shape inference (third-party code we do not fuzz), then summarize() costs the
// graph. InputError is the expected outcome for bad bytes and is swallowed; any other exception
// (InternalError from TO_CHECK, std::out_of_range, ...) escapes and aborts, so libFuzzer records it
// as a crash with the throw site on the stack. Sanitizer reports and timeouts are crashes too.
//
// Run: build-fuzz/fuzz/import_fuzzer -rss_limit_mb=4096 -timeout=10 CORPUS_DIR
// (scripts/test builds a seed corpus from the shipped models; fuzz/regressions/ holds past finds.)
#include <cstddef>
#include <cstdint>
#include <string>

#include "graph/error.h"
#include "graph/import.h"
#include "graph/summary.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  tensoropt::ImportOptions options;
  options.batch = 2;
  options.onnx_cross_check = false;
  try {
    tensoropt::Graph g = tensoropt::import_onnx_bytes(bytes, "fuzz-input", options);
    tensoropt::ModelSummary s = tensoropt::summarize(g);
    (void)s;
  } catch (const tensoropt::InputError&) {
    // Expected: the bytes are not a valid model for us.
  }
  return 0;
}
