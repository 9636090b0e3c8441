// run --kernel-times: where a step's time goes, node by node, on one device and on the lead of a
// group, an elastic one's too (launcher/train/report.h print_kernel_times; the CUDA backend times
// with events, checked by scripts/gpu-check's runs).
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/cli/binary.h"

namespace tensoropt::test {

TEST_CASE("run --kernel-times: a table of the step's kernels, largest first, that the report repeats and the step time bounds") {
  const std::filesystem::path report = std::filesystem::temp_directory_path() / ("tensoropt-kernel-times-" + std::to_string(getpid()) + ".json");
  const std::string control = (std::filesystem::temp_directory_path() / ("tensoropt-kernel-times-job-" + std::to_string(getpid()))).string();
  for (const std::string& gpus : {std::string("1"), std::string("2"), "2 --elastic --control " + control}) {
    CAPTURE(gpus);
    const CliResult r = run_cli("run " + std::string(TENSOROPT_SOURCE_DIR) + "/tests/fixtures/runtime/gpt.onnx --steps 4 --threads 1 --gpus " +
                                gpus + " --kernel-times --report " + report.string());
    REQUIRE_MESSAGE(r.code == 0, r.err);
    CHECK(r.out.find("kernels  per step, over 3 steps: ") != std::string::npos);
    CHECK(r.out.find("MatMul forward") != std::string::npos);
    const nlohmann::json j = nlohmann::json::parse(slurp(report));
    const auto& rows = j.at("kernel_times");
    REQUIRE(rows.size() > 10);
    double share = 0, last = 1e9;
    bool matmul_backward = false;
    for (const auto& row : rows) {
      CHECK(row.at("ms_per_step").get<double>() <= last);  // largest first
      last = row.at("ms_per_step").get<double>();
      share += row.at("share_of_step").get<double>();
      matmul_backward = matmul_backward || (row.at("kernels") == "MatMul backward" && row.at("calls_per_step") == 13.0);
    }
    CHECK(matmul_backward);  // the fixture's 13 MatMul nodes, each once per step
    CHECK(share > 0.005);  // two workers spend most of a step in collectives
    CHECK(share <= 1.0);  // the kernels run inside the step
  }
  std::filesystem::remove(report);
  std::filesystem::remove_all(control);
}

}  // namespace tensoropt::test
