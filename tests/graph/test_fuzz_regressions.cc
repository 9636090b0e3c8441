// Inputs the fuzzer (fuzz/import_fuzzer.cc) once crashed the importer with: each must now import
// or be refused with an InputError, never anything else, at the export's batch and re-batched. Under the sanitizer build this also
// proves the undefined behaviour is gone. Each file's outcome, at its own batch and re-batched, is
// pinned in kExpected below: a file without an entry, an entry without a file, another outcome or
// another refusal fails.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>

#include "graph/error.h"
#include "graph/import.h"
#include "graph/summary.h"

namespace tensoropt {
namespace {

// What importing a regression file does (with or without the ONNX cross-check): imports, or is
// refused with an InputError whose message contains `refusal`.
struct Outcome {
  bool imports;
  std::string refusal;  // when refused: a substring of the one-line message
};

Outcome imports() { return {true, ""}; }
Outcome refused(std::string message) { return {false, std::move(message)}; }

// A file's outcome at the export's own batch and re-batched (to 1, 2 and 64).
struct Expected {
  Outcome own_batch;
  Outcome rebatched;
};

Expected always(Outcome o) { return {o, o}; }
// A model with a dynamic batch axis, which needs a batch to import at all.
Expected dynamic_batch(Outcome rebatched) { return {refused("has a dynamic batch axis; pass --batch B"), rebatched}; }

const std::map<std::string, Expected> kExpected = {
    {"averagepool_ceil_right_pad.onnx", dynamic_batch(imports())},
    {"batchnorm_training_mode_graph.onnx", always(refused("(BatchNormalization): attribute 'training_mode' has type GRAPH, but ONNX opset 17 declares INT"))},
    {"cast_to_graph_attribute.onnx", always(refused("(Cast): attribute 'to' has type UNDEFINED, but ONNX opset 17 declares INT"))},
    {"concat_scalar_inputs.onnx", always(refused("(Concat): axis 0 is out of range for rank 0"))},
    {"constantofshape_inf_fill.onnx", dynamic_batch(imports())},
    {"flatten_axis_without_value.onnx", always(refused("(Flatten): attribute 'axis' is of type INT but holds no value"))},
    {"layernorm_scale_rank.onnx", always(refused("(LayerNormalization): attribute 'axis' is of type INT but holds no value"))},
    {"pad_pads_overflow.onnx", dynamic_batch(refused("(Pad): dimension arithmetic overflows"))},
    {"range_infinite_count.onnx", dynamic_batch(refused("(Range): start, limit and delta differ in type"))},
    {"range_int64_overflow.onnx", dynamic_batch(refused("(Range): dimension arithmetic overflows"))},
    {"range_mixed_dtypes.onnx", dynamic_batch(refused("(Range): start, limit and delta differ in type"))},
    {"rebatch_zero_batch.onnx",
     {imports(), refused("exported with a batch of 0 (an empty example), which cannot be re-batched")}},
    {"reducemean_axes_input_opset1.onnx", always(refused("(ReduceMean): has 2 inputs, but ONNX opset 1 takes at most 1"))},
    {"reducemean_keepdims_float_type.onnx", always(refused("(ReduceMean): has 2 inputs, but ONNX opset 17 takes at most 1"))},
    {"shape15_after_unknown_op.onnx", always(imports())},
    {"slice_extreme_end.onnx", dynamic_batch(imports())},
    {"slice_scalar_input.onnx", always(refused("(Slice): axis 0 is out of range for rank 0"))},
    {"split_no_inputs.onnx", always(refused("(Split): attribute 'axis' has type UNDEFINED, but ONNX opset 17 declares INT"))},
    {"tensor_bytes_overflow.onnx", dynamic_batch(refused("144115188075855878,10] has more than 2^59 elements"))},
    {"tile_repeats_overflow.onnx", dynamic_batch(refused("(Tile): dimension arithmetic overflows"))},
};

// "imports", or "refused: <message>", or "threw an unexpected exception: <message>".
std::string outcome(const std::string& bytes, const std::string& path, std::optional<int64_t> batch, bool cross_check) {
  try {
    Graph g = import_onnx_bytes(bytes, path, {.batch = batch, .onnx_cross_check = cross_check});
    summarize(g);
    return "imports";
  } catch (const InputError& e) {
    return std::string("refused: ") + e.what();
  } catch (const std::exception& e) {
    return std::string("threw an unexpected exception: ") + e.what();
  }
}

}  // namespace

TEST_CASE("fuzz regressions import or are refused as their table entry says") {
  auto dir = std::filesystem::path(TENSOROPT_SOURCE_DIR) / "fuzz" / "regressions";
  std::set<std::string> seen;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".onnx") continue;
    const std::string name = entry.path().filename().string();
    seen.insert(name);
    CAPTURE(name);
    auto it = kExpected.find(name);
    std::ifstream f(entry.path(), std::ios::binary);
    std::ostringstream ss;
    ss << f.rdbuf();
    const std::optional<int64_t> batches[] = {std::nullopt, 1, 2, 64};
    for (std::optional<int64_t> batch : batches) {
      CAPTURE(batch.value_or(0));
      for (bool cross_check : {false, true}) {
        CAPTURE(cross_check);
        std::string got = outcome(ss.str(), entry.path().string(), batch, cross_check);
        if (it == kExpected.end()) {
          FAIL_CHECK("no expected outcome in kExpected; got: " << got);
          continue;
        }
        const Outcome& want = batch ? it->second.rebatched : it->second.own_batch;
        if (want.imports) {
          CHECK_MESSAGE(got == "imports", "got: " << got);
        } else {
          CHECK_MESSAGE(got.starts_with("refused: "), "got: " << got);
          CHECK_MESSAGE(got.find(want.refusal) != std::string::npos, "got: " << got);
        }
      }
    }
  }
  for (const auto& [name, expected] : kExpected) {
    CHECK_MESSAGE(seen.count(name), "kExpected names " << name << ", which is not in fuzz/regressions/");
  }
}

}  // namespace tensoropt
