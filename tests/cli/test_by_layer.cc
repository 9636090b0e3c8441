// `evaluate --by-layer` and `--by-node` as a user runs them: a row per layer (or node) whose total is
// the time and memory plain `evaluate` reports, JSON with the same totals, and the two flags
// refused together.
#include <doctest/doctest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "tests/cli/binary.h"

namespace tensoropt {

TEST_CASE("evaluate --by-layer: rows per layer whose total is evaluate's time and memory") {
  const std::string gpt = std::string(TENSOROPT_SOURCE_DIR) + "/tests/fixtures/runtime/gpt.onnx";
  const std::string plan = (std::filesystem::temp_directory_path() / "tensoropt_by_layer_plan.json").string();
  REQUIRE(test::run_cli("plan " + gpt + " --gpus 4 --batch 8 --json " + plan).code == 0);
  const test::CliResult whole = test::run_cli("evaluate " + gpt + " --strategy " + plan + " --point 3 --json");
  REQUIRE_MESSAGE(whole.code == 0, whole.err);
  const auto w = nlohmann::json::parse(whole.out);

  const test::CliResult text = test::run_cli("evaluate " + gpt + " --strategy " + plan + " --point 3 --by-layer");
  REQUIRE_MESSAGE(text.code == 0, text.err);
  CHECK(text.out.find("layer ") == 0);
  CHECK(text.out.find("\nworkspace (the step's peak)") != std::string::npos);
  CHECK(text.out.find("\ntotal ") != std::string::npos);

  for (const char* by : {" --by-layer", " --by-node"}) {
    CAPTURE(by);
    const test::CliResult r = test::run_cli("evaluate " + gpt + " --strategy " + plan + " --point 3 --json" + by);
    REQUIRE_MESSAGE(r.code == 0, r.err);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j["time_s"].get<double>() == doctest::Approx(w["time_s"].get<double>()).epsilon(1e-12));
    CHECK(j["memory_bytes"].get<double>() == doctest::Approx(w["memory_bytes"].get<double>()).epsilon(1e-12));
    size_t nodes = 0;
    double time = 0;
    for (const auto& row : j["rows"]) {
      nodes += row["nodes"].size();
      time += row["time_s"].get<double>();
    }
    CHECK(time == doctest::Approx(w["time_s"].get<double>()).epsilon(1e-12));
    CHECK(nodes > 20);
    if (std::string(by) == " --by-node") CHECK(j["rows"].size() == nodes);
    else CHECK(j["rows"].size() < nodes);
  }
  const test::CliResult both = test::run_cli("evaluate " + gpt + " --strategy " + plan + " --by-layer --by-node");
  CHECK(both.code == 2);
  CHECK(test::lines(both.err) == 1);
  CHECK(both.err.find("--by-node") != std::string::npos);
  std::filesystem::remove(plan);
}

}  // namespace tensoropt
