// Measured peak memory against the plan's prediction (docs/runtime.md "How close the prediction
// is"): `tensoropt run` on every reference model, on one device with 1 and 2 threads, and on 2
// workers at the plan's fastest point, its middle one and its smallest; each peak within 10% of
// what the planner predicts for that strategy (the issues' bound). The prediction is the step's
// peak as the runtime meets it (planner/space/space.h, step_peak): activations not yet freed, the
// transient of one op's backward or redistribution, the gradients in flight and im2col buffers.
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/children.h"

namespace tensoropt {
namespace {

const std::string kBin = TENSOROPT_BINARY;
const std::string kFix = std::string(TENSOROPT_SOURCE_DIR) + "/tests/fixtures/runtime/";
const char* const kModels[] = {"mlp", "cnn_bn", "resblock", "gpt", "vit", "branches"};

nlohmann::json report_of(const std::string& command, const std::string& report) {
  const int status = std::system((command + " --report " + report + " >/dev/null 2>" + report + ".err </dev/null").c_str());
  std::ifstream err(report + ".err");
  std::stringstream ss;
  ss << err.rdbuf();
  const std::string why = command + ": " + ss.str();
  REQUIRE_MESSAGE((WIFEXITED(status) && WEXITSTATUS(status) == 0), why);
  return nlohmann::json::parse(std::ifstream(report));
}

}  // namespace

TEST_CASE("run: one device's peak memory is the planner's prediction within 10%, on 1 and 2 threads") {
  test::TempDir dir;
  for (const char* m : kModels) {
    for (int threads : {1, 2}) {
      CAPTURE(std::string(m));
      CAPTURE(threads);
      const nlohmann::json r = report_of(kBin + " run " + kFix + m + ".onnx --steps 2 --batch 4 --threads " + std::to_string(threads),
                                         dir.path + "/one.json");
      const double predicted = r.at("predicted").at("memory_bytes").get<double>();
      CHECK(r.at("measured").at("peak_memory_bytes").get<double>() == doctest::Approx(predicted).epsilon(0.10));
    }
  }
}

TEST_CASE("run --gpus 2: each worker's peak memory is the prediction within 10% at the fastest, middle and smallest points") {
  test::TempDir dir;
  for (const char* m : kModels) {
    const std::string model = kFix + m + ".onnx", plan = dir.path + "/" + m + ".json";
    REQUIRE(std::system((kBin + " plan " + model + " --gpus 2 --batch 8 --cluster cpu --param-persistence 0 --json " + plan + " >/dev/null 2>&1").c_str()) == 0);
    const size_t n = nlohmann::json::parse(std::ifstream(plan))["frontiers"][0]["points"].size();
    for (size_t point : {size_t{0}, n / 2, n - 1}) {
      CAPTURE(std::string(m));
      CAPTURE(point);
      const nlohmann::json r = report_of(kBin + " run " + model + " --gpus 2 --steps 2 --threads 1 --plan " + plan + " --point " +
                                             std::to_string(point),
                                         dir.path + "/r.json");
      const double predicted = r.at("predicted").at("memory_bytes").get<double>();
      for (const auto& rank : r.at("measured").at("ranks")) {
        CAPTURE(rank.dump());
        CHECK(rank.at("peak_memory_bytes").get<double>() == doctest::Approx(predicted).epsilon(0.10));
      }
    }
  }
}

TEST_CASE("run --gpus 4: the smallest points, whose recomputed ops' outputs are moved again in backward, are predicted within 10%") {
  // These were 1.26 (cnn_bn), 1.09 (gpt) and 1.07 (vit) of the prediction while the planner charged
  // the second move's time but not the copy it makes beside the reader's backward.
  test::TempDir dir;
  for (const char* m : {"cnn_bn", "gpt", "vit"}) {
    const std::string model = kFix + m + ".onnx", plan = dir.path + "/" + m + ".json";
    REQUIRE(std::system((kBin + " plan " + model + " --gpus 4 --batch 8 --cluster cpu --param-persistence 0 --json " + plan + " >/dev/null 2>&1").c_str()) == 0);
    const size_t n = nlohmann::json::parse(std::ifstream(plan))["frontiers"][0]["points"].size();
    CAPTURE(std::string(m));
    const nlohmann::json r = report_of(kBin + " run " + model + " --gpus 4 --steps 2 --threads 1 --plan " + plan + " --point " +
                                           std::to_string(n - 1),
                                       dir.path + "/r.json");
    const double predicted = r.at("predicted").at("memory_bytes").get<double>();
    for (const auto& rank : r.at("measured").at("ranks")) {
      CAPTURE(rank.dump());
      CHECK(rank.at("peak_memory_bytes").get<double>() == doctest::Approx(predicted).epsilon(0.10));
    }
  }
}

}  // namespace tensoropt
