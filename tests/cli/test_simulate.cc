// `tensoropt simulate` as a user runs it: Pollux's first workload (160 jobs, six applications) on 4
// CPU workers, every application standing in for by a runtime fixture, under every policy; the
// table and the JSON agree, every job finishes after it is submitted; bad input is one line and
// exit 2 before any planning.
#include <doctest/doctest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/children.h"
#include "tests/cli/binary.h"

namespace tensoropt::test {
namespace {

const std::string kFix = std::string(TENSOROPT_SOURCE_DIR) + "/tests/fixtures/";
const std::string kWorkload = kFix + "workloads/pollux-workload-1.csv";

std::string mapping(const TempDir& dir, int64_t ncf_batch = 8) {
  const std::string path = dir.path + "/map.json";
  std::ofstream(path) << R"({"applications": {
    "cifar10": {"model": ")" << kFix << R"(runtime/gpt.onnx", "batch": 8, "samples": 40000},
    "imagenet": {"model": ")" << kFix << R"(runtime/vit.onnx", "batch": 8, "samples": 400000},
    "bert": {"model": ")" << kFix << R"(runtime/gpt.onnx", "batch": 16, "samples": 100000},
    "deepspeech2": {"model": ")" << kFix << R"(runtime/gpt.onnx", "batch": 16, "samples": 200000},
    "yolov3": {"model": ")" << kFix << R"(runtime/vit.onnx", "batch": 16, "samples": 300000},
    "ncf": {"model": ")" << kFix << R"(runtime/mlp.onnx", "batch": )" << ncf_batch << R"(, "samples": 20000}}})";
  return path;
}

TEST_CASE("simulate: Pollux's first workload under every policy, a table and JSON that agree") {
  TempDir dir;
  const CliResult r = run_cli("simulate " + kWorkload + " --gpus 4 --cluster cpu --policy fifo,tiresias,doubling,edl,frontier --mapping " +
                              mapping(dir) + " --json " + dir.path + "/out.json --plot " + dir.path + "/jct.svg");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK(r.out.find("planning cifar10: ") != std::string::npos);
  CHECK(r.out.find("not from measured throughputs") != std::string::npos);
  const nlohmann::json j = nlohmann::json::parse(slurp(dir.path + "/out.json"));
  CHECK(j.at("gpus") == 4);
  REQUIRE(j.at("policies").size() == 5);
  for (const auto& [name, p] : j["policies"].items()) {
    CAPTURE(name);
    CHECK(r.out.find("\n" + name + " ") != std::string::npos);
    REQUIRE(p.at("jobs").size() == 160);
    double sum = 0;
    for (const auto& job : p["jobs"]) {
      CHECK(job.at("finish_s").get<double>() > job.at("submit_s").get<double>());
      CHECK(job.at("start_s").get<double>() >= job.at("submit_s").get<double>());
      sum += job.at("jct_s").get<double>();
    }
    CHECK(p.at("avg_jct_s").get<double>() == doctest::Approx(sum / 160));
    CHECK(p.at("p99_jct_s").get<double>() >= p.at("median_jct_s").get<double>());
    CHECK(p.at("utilisation").get<double>() > 0);
    CHECK(p.at("utilisation").get<double>() <= 1.0 + 1e-9);
  }
  // The plot: a curve and a legend entry per policy.
  const std::string svg = slurp(dir.path + "/jct.svg");
  size_t curves = 0;
  for (size_t at = svg.find("class=\"cdf\""); at != std::string::npos; at = svg.find("class=\"cdf\"", at + 1)) ++curves;
  CHECK(curves == 5);
  CHECK(svg.find("frontier (avg ") != std::string::npos);
  // The non-elastic policies never resize a running job.
  CHECK(j["policies"]["fifo"].at("resizes") == 0);
  // Each application's speeds: some count fits, and more GPUs never slow a job down here.
  for (const auto& [app, a] : j.at("applications").items()) {
    CAPTURE(app);
    CHECK(a.at("samples_per_s").at("1").get<double>() > 0);
    CHECK(a.at("resize_s").get<double>() < a.at("restart_s").get<double>());
  }
}

TEST_CASE("simulate: with --resizes restart the elastic policies pay a stop-resume for every change") {
  TempDir dir;
  const std::string base = "simulate " + kWorkload + " --gpus 4 --cluster cpu --policy frontier --mapping " + mapping(dir) + " --json ";
  const CliResult elastic = run_cli(base + dir.path + "/e.json"), restart = run_cli(base + dir.path + "/r.json --resizes restart");
  REQUIRE_MESSAGE(elastic.code == 0, elastic.err);
  REQUIRE_MESSAGE(restart.code == 0, restart.err);
  CHECK(restart.out.find("every resize a stop-resume") != std::string::npos);
  const nlohmann::json e = nlohmann::json::parse(slurp(dir.path + "/e.json")), r = nlohmann::json::parse(slurp(dir.path + "/r.json"));
  CHECK(e.at("resizes") == "elastic");
  CHECK(r.at("resizes") == "restart");
  const nlohmann::json &fe = e["policies"]["frontier"], &fr = r["policies"]["frontier"];
  REQUIRE(fe.at("resizes").get<int>() > 0);
  REQUIRE(fr.at("resizes").get<int>() > 0);
  // Each change costs at least the shortest stop-resume there, more than any in-place resize.
  double least_restart = 1e30, most_resize = 0;
  for (const auto& [app, a] : e.at("applications").items()) {
    least_restart = std::min(least_restart, a.at("restart_s").get<double>());
    most_resize = std::max(most_resize, a.at("resize_s").get<double>());
  }
  CHECK(fr.at("resize_paused_s").get<double>() >= fr.at("resizes").get<int>() * least_restart * (1 - 1e-9));
  CHECK(fe.at("resize_paused_s").get<double>() <= fe.at("resizes").get<int>() * most_resize * (1 + 1e-9));
  const CliResult bad = run_cli(base + dir.path + "/b.json --resizes never");
  CHECK(bad.code == 2);
  CHECK(bad.err.find("--resizes never: expected elastic or restart") != std::string::npos);
}

TEST_CASE("simulate: a bad workload, application, policy or a job that fits nowhere is one line and exit 2") {
  TempDir dir;
  const std::string map = mapping(dir);
  const auto refused = [](const CliResult& r, const std::string& part) {
    CHECK(r.code == 2);
    CHECK_MESSAGE(r.err.find(part) != std::string::npos, r.err);
    CHECK(r.out.find("planning") == std::string::npos);
  };
  std::ofstream(dir.path + "/bad.csv") << "name,time,application,num_replicas,batch_size\na,0,cifar10,1,8\nb,x,cifar10,1,8\n";
  refused(run_cli("simulate " + dir.path + "/bad.csv --gpus 4 --cluster cpu --policy fifo --mapping " + map), "bad.csv line 3: time 'x'");
  std::ofstream(dir.path + "/app.csv") << "name,time,application,num_replicas,batch_size\na,0,resnet,1,8\n";
  refused(run_cli("simulate " + dir.path + "/app.csv --gpus 4 --cluster cpu --policy fifo --mapping " + map), "app.csv line 2: application 'resnet' is not in the mapping");
  refused(run_cli("simulate " + kWorkload + " --gpus 4 --cluster cpu --policy sjf --mapping " + map), "--policy sjf: unknown");
  // ncf's stand-in at a batch no CPU worker's memory holds at any count.
  const CliResult none = run_cli("simulate " + kWorkload + " --gpus 2 --cluster cpu --policy fifo --mapping " + mapping(dir, 400000000));
  CHECK(none.code == 2);
  CHECK_MESSAGE(none.err.find("(ncf) fits no count of 1..2 GPUs of cpu") != std::string::npos, none.err);
}

}  // namespace
}  // namespace tensoropt::test
