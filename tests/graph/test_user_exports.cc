// Models exported the way PyTorch users export them (models/user_exports.py: weights inline, in
// external data or as graph inputs; training and eval mode; fixed and dynamic batch; opsets 11 to
// 17): parameter counts against PyTorch's, every tensor static at the export's batch and at
// others, fixed-batch exports re-batched exactly as their dynamic twins, and `plan` succeeding at
// the default batch with no other flag.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sys/wait.h>

#include "graph/import.h"
#include "graph/merged_weights.h"
#include "graph/summary.h"

namespace tensoropt {
namespace {

const std::string kDir = std::string(TENSOROPT_SOURCE_DIR) + "/tests/fixtures/user_exports/";

nlohmann::json manifest() {
  std::ifstream f(kDir + "manifest.json");
  REQUIRE(f.good());
  return nlohmann::json::parse(f);
}

Graph load(const nlohmann::json& e, std::optional<int64_t> batch) {
  return import_onnx_file(kDir + e["file"].get<std::string>(), {.batch = batch});
}

// What the graph holds as trainable: PyTorch's count for a training-mode export; for an eval-mode
// export, whose exporter folds BatchNorm into Conv, merges equal weights and may store a tied
// weight twice, the float weights the file holds (initializers less buffers, or weight inputs).
int64_t expected_trainable(const nlohmann::json& e) {
  if (e["mode"] == "train") return e["pytorch_trainable_parameters"].get<int64_t>();
  return e["graph_initializer_float_numel"].get<int64_t>() - e["graph_initializer_float_numel_by_origin"]["buffer"].get<int64_t>() +
         e["graph_input_weight_float_numel"].get<int64_t>();
}

}  // namespace

TEST_CASE("user exports: parameter counts equal PyTorch's, and every tensor is static at 1, the export's batch and 8") {
  auto m = manifest();
  REQUIRE(m.size() >= 30);
  for (auto& [name, e] : m.items()) {
    CAPTURE(name);
    const auto b0 = e["batch"].get<int64_t>();
    Graph g = load(e, b0);
    CHECK(summarize(g).trainable_parameters == expected_trainable(e));
    for (int64_t batch : {int64_t{1}, int64_t{8}}) {
      CAPTURE(batch);
      Graph gb = load(e, batch);
      CHECK(gb.batch == batch);
      CHECK(summarize(gb).trainable_parameters == expected_trainable(e));
      for (const Tensor& x : gb.tensors) {
        for (int64_t d : x.shape) CHECK_MESSAGE(d >= 0, x.name);
      }
    }
  }
}

TEST_CASE("user exports: a fixed-batch export re-batched costs exactly what its dynamic-batch twin costs") {
  auto m = manifest();
  const std::pair<const char*, const char*> twins[] = {
      {"gpt_train_inline_b4", "gpt_train_external_dyn"},
      {"gpt_train_graph_inputs_b4", "gpt_train_graph_inputs_dyn"},
      {"transformer_encoder_train_inline_b4", "transformer_encoder_train_external_dyn"},
  };
  for (auto [fixed, dynamic] : twins) {
    CAPTURE(std::string(fixed));
    for (int64_t batch : {int64_t{1}, int64_t{6}, int64_t{64}}) {
      CAPTURE(batch);
      ModelSummary a = summarize(load(m[fixed], batch)), b = summarize(load(m[dynamic], batch));
      CHECK(a.activation_bytes == b.activation_bytes);
      CHECK(a.fwd_flops_by_op.at("MatMul") == b.fwd_flops_by_op.at("MatMul"));
      // With the same weight storage the graphs are the same; an external-data twin cannot fold
      // what reads a constant whose bytes are not in the file (the causal mask's Equal).
      if (m[fixed]["weights"] == m[dynamic]["weights"]) {
        CHECK(a.fwd_flops == b.fwd_flops);
        CHECK(a.bwd_flops == b.bwd_flops);
        CHECK(a.op_counts == b.op_counts);
      }
    }
  }
}

TEST_CASE("user exports: plan with no flag but --gpus 8 succeeds on every one") {
  auto m = manifest();
  for (auto& [name, e] : m.items()) {
    CAPTURE(name);
    std::string cmd = std::string(TENSOROPT_BINARY) + " plan " + kDir + e["file"].get<std::string>() +
                      " --gpus 8 --rows 1 >/dev/null 2>&1 </dev/null";
    int status = std::system(cmd.c_str());
    CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  }
}

TEST_CASE("user exports: weights the exporter merged are found where it merged them, and nowhere else") {
  auto m = manifest();
  int fresh = 0;
  for (auto& [name, e] : m.items()) {
    CAPTURE(name);
    const Graph g = load(e, 2);
    const MergedWeights merged = merged_weights(g);
    if (e.value("fresh_init", false)) {
      ++fresh;
      // A fresh model's equal weights come back: the graph's parameters plus the merged copies are
      // PyTorch's count.
      CHECK(merged.copies > 0);
      CHECK(summarize(g).trainable_parameters + merged.elements == e["pytorch_trainable_parameters"].get<int64_t>());
      const std::string note = merged_weights_note(merged, summarize(g).trainable_parameters);
      CHECK(note.find("TrainingMode.TRAINING") != std::string::npos);
      CHECK(note.find("'encoder.layers.") != std::string::npos);  // a name the user wrote, not onnx::
    } else {
      // Trained (perturbed) weights, tied weights (the GPT's embedding and head), training mode.
      CHECK(merged.copies == 0);
      CHECK(merged_weights_note(merged, 1).empty());
    }
  }
  CHECK(fresh == 1);
}

TEST_CASE("user exports: a fresh model's merged weights are named by inspect and plan, and every mesh is planned") {
  const std::string file = kDir + "transformer_encoder_eval_fresh_inline_b4.onnx";
  const std::string out = (std::filesystem::temp_directory_path() / "tensoropt_fresh_plan.txt").string();
  for (const std::string cmd : {" inspect ", " plan "}) {
    CAPTURE(cmd);
    const std::string line = std::string(TENSOROPT_BINARY) + cmd + file + (cmd == " plan " ? " --gpus 8" : "") + " >" + out + " 2>&1 </dev/null";
    const int status = std::system(line.c_str());
    CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    std::ifstream f(out);
    const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    CHECK(text.find("the export merged 15 parameters") != std::string::npos);
    CHECK(text.find("it counts 67,594 parameters, not 33,930") != std::string::npos);
    if (cmd == " plan ") {
      // The weights every layer reads join the layers; the planner conditions on a few of them
      // (planner/ft/condition.h) and plans every mesh exactly, rather than skip or restrict one.
      CHECK(text.find("skipped mesh") == std::string::npos);
      CHECK(text.find("approximate") == std::string::npos);
      CHECK(text.find("points on the exact frontier") != std::string::npos);
    }
  }
  std::filesystem::remove(out);
}

}  // namespace tensoropt
