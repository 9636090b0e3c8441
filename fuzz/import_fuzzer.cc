// libFuzzer target for the ONNX importer and the model summary.
//
// Input: arbitrary bytes, read as a serialized onnx::ModelProto. The importer runs with ONNX's own
// shape inference on (it sees a model only after our inference found it consistent) and with a
// batch chosen by the input's size: none (the export's own), 1, 2, 3 or 64, so a fixed-batch
// model is also re-batched (graph/rebatch.h); then summarize() costs the graph. InputError is the
// expected outcome for bad bytes and is swallowed; any other exception (InternalError from
// TO_CHECK, std::out_of_range, ...) escapes and aborts, so libFuzzer records it as a crash with
// the throw site on the stack. Sanitizer reports and timeouts are crashes too.
//
// Run: build-fuzz/fuzz/import_fuzzer -rss_limit_mb=4096 -timeout=10 CORPUS_DIR
// (scripts/test builds a seed corpus from the shipped models; fuzz/regressions/ holds past finds.)
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "graph/error.h"
#include "graph/import.h"
#include "graph/summary.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  static const std::optional<int64_t> batches[] = {std::nullopt, 1, 2, 3, 64};
  tensoropt::ImportOptions options;
  options.batch = batches[size % 5];
  try {
    tensoropt::Graph g = tensoropt::import_onnx_bytes(bytes, "fuzz-input", options);
    tensoropt::ModelSummary s = tensoropt::summarize(g);
    (void)s;
  } catch (const tensoropt::InputError&) {
    // Expected: the bytes are not a valid model for us.
  }
  return 0;
}
