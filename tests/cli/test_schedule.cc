// `tensoropt schedule` as a user runs it: three short jobs of two runtime fixtures on 2 CPU
// workers, live under fifo and frontier (which resizes a running job). Every job trains all its steps in its own elastic run,
// fifo never resizes, the JSON holds the prediction and the live run side by side, and no process
// is left behind. Bad input is one line and exit 2 before anything runs. (How close the live run
// comes to the prediction is measured by scripts/bench/schedule, not here: it is a timing.)
#include <doctest/doctest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/children.h"
#include "tests/cli/binary.h"

namespace tensoropt::test {
namespace {

const std::string kFix = std::string(TENSOROPT_SOURCE_DIR) + "/tests/fixtures/";

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Two applications: the residual block fixture at batch 512 (12 steps; 2 workers train it faster
// than 1 here), the MLP fixture at batch 8 (400 steps; 2 workers are slower than 1).
std::string mapping(const TempDir& dir) {
  const std::string path = dir.path + "/map.json";
  std::ofstream(path) << R"({"applications": {
    "res": {"model": ")" << kFix << R"(runtime/resblock.onnx", "batch": 512, "samples": 6144},
    "mlp": {"model": ")" << kFix << R"(runtime/mlp.onnx", "batch": 8, "samples": 3200}}})";
  return path;
}

std::string workload(const TempDir& dir) {
  const std::string path = dir.path + "/live.csv";
  std::ofstream(path) << "name,time,application,num_replicas,batch_size\nres-0,0,res,2,512\nmlp-0,0.3,mlp,1,8\nres-1,0.6,res,1,512\n";
  return path;
}

TEST_CASE("schedule: three jobs live on 2 workers under fifo and frontier, beside the prediction") {
  TempDir dir;
  const std::string work = dir.path + "/work";
  const CliResult r = run_cli("schedule " + workload(dir) + " --gpus 2 --policy fifo,frontier --mapping " + mapping(dir) + " --json " +
                              dir.path + "/out.json --dir " + work + " --calibration-steps 5 --calibration-seconds 0.2 --calibration-repeats 1");
  REQUIRE_MESSAGE(r.code == 0, (r.err + r.out));
  CHECK(has(r.out, "planning res: "));
  CHECK(has(r.out, "measured res on 1 worker: "));
  CHECK(has(r.out, "measured mlp on 2 workers: "));
  CHECK(has(r.out, "start    res-0 on 2 GPUs"));
  const nlohmann::json j = nlohmann::json::parse(slurp(dir.path + "/out.json"));
  CHECK(j.at("gpus") == 2);
  CHECK(j.at("applications").at("res").at("planned_samples_per_s").at("1").get<double>() > 0);
  // Each policy's calibration, made right before its jobs: one worker of two is measured alone
  // too; two workers fill the machine, so alone is busy.
  for (const char* policy : {"fifo", "frontier"}) {
    CAPTURE(policy);
    const nlohmann::json& res = j.at("policies").at(policy).at("calibration").at("res");
    CHECK(res.at("samples_per_s").at("1").get<double>() > 0);
    CHECK(res.at("samples_per_s_alone").at("1").get<double>() > 0);
    CHECK(res.at("samples_per_s_alone").at("2") == res.at("samples_per_s").at("2"));
    CHECK(res.at("launch_s").get<double>() >= 0);
  }
  CHECK(has(r.out, "\nfifo: calibrating\n"));
  CHECK(has(r.out, " alone (planned "));
  REQUIRE(j.at("policies").size() == 2);
  for (const char* policy : {"fifo", "frontier"}) {
    CAPTURE(policy);
    const nlohmann::json& p = j.at("policies").at(policy);
    const nlohmann::json &live = p.at("live"), &predicted = p.at("predicted");
    REQUIRE(live.at("jobs").size() == 3);
    REQUIRE(predicted.at("jobs").size() == 3);
    CHECK(p.at("predicted_from_plans").at("jobs").size() == 3);
    for (size_t i = 0; i < 3; ++i) {
      CAPTURE(i);
      const nlohmann::json& job = live["jobs"][i];
      CHECK(job.at("name") == predicted["jobs"][i].at("name"));
      CHECK(job.at("start_s").get<double>() >= job.at("submit_s").get<double>());
      CHECK(job.at("finish_s").get<double>() > job.at("start_s").get<double>());
      CHECK(job.at("gpu_s").get<double>() > 0);
      // The job's own run trained every step of its work.
      const nlohmann::json st = nlohmann::json::parse(slurp(work + "/" + policy + "/job-" + std::to_string(i) + "/status.json"));
      CHECK(st.at("finished") == true);
      CHECK(st.at("step") == st.at("steps"));
      CHECK(st.at("steps") == (job.at("name").get<std::string>().rfind("res", 0) == 0 ? 12 : 400));
      CHECK(job.at("resizes") == st.at("resizes").size());
    }
    CHECK(live.at("avg_jct_s").get<double>() > 0);
    CHECK(p.at("avg_jct_error").get<double>() == doctest::Approx(live.at("avg_jct_s").get<double>() / predicted.at("avg_jct_s").get<double>() - 1));
  }
  // frontier: res-0 starts on both workers (it is faster on 2) and shrinks to 1 when mlp-0 comes,
  // a resize the job itself reports.
  const nlohmann::json& res = j["policies"]["frontier"]["calibration"]["res"];
  if (res.at("samples_per_s").at("2").get<double>() > res.at("samples_per_s").at("1").get<double>()) {
    CHECK(has(r.out, "resize   res-0 2 -> 1 GPUs"));
    CHECK(j["policies"]["frontier"]["live"]["jobs"][0].at("resizes").get<int>() >= 1);
  }
  // fifo: res-0 on its 2 workers, mlp-0 waits for them, never a resize.
  CHECK(j["policies"]["fifo"]["live"].at("resizes") == 0);
  CHECK(j["policies"]["fifo"]["predicted"].at("resizes") == 0);
  CHECK(j["policies"]["fifo"]["live"]["jobs"][1].at("start_s").get<double>() >= j["policies"]["fifo"]["live"]["jobs"][0].at("finish_s").get<double>());
  CHECK(has(r.out, "\nfifo "));
  CHECK(has(r.out, "\n  live "));
  CHECK(runs_with(work).empty());
}

TEST_CASE("schedule: a bad workload, policy, count or --json path is one line and exit 2 before anything runs") {
  TempDir dir;
  const std::string map = mapping(dir), w = workload(dir);
  const auto refused = [](const CliResult& r, const std::string& part) {
    CHECK(r.code == 2);
    CHECK_MESSAGE(has(r.err, part), r.err);
    CHECK(lines(r.err) == 1);
    CHECK(!has(r.out, "planning"));
  };
  refused(run_cli("schedule " + w + " --gpus 2 --policy sjf --mapping " + map), "--policy sjf: unknown");
  refused(run_cli("schedule " + w + " --gpus 0 --policy fifo --mapping " + map), "--gpus");
  refused(run_cli("schedule " + w + " --gpus 2 --policy fifo --mapping " + map + " --json /no/dir/out.json"), "--json: cannot write '/no/dir/out.json'");
  std::ofstream(dir.path + "/app.csv") << "name,time,application,num_replicas,batch_size\na,0,resnet,1,8\n";
  refused(run_cli("schedule " + dir.path + "/app.csv --gpus 2 --policy fifo --mapping " + map), "app.csv line 2: application 'resnet' is not in the mapping");
}

}  // namespace
}  // namespace tensoropt::test
