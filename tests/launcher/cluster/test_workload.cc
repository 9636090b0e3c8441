// Workloads as Pollux publishes them, the Philly trace they come from, and the application mapping
// (launcher/cluster/workload.h): Pollux's first workload read whole, Philly rows derived as Pollux
// derives them; every malformed file, row and field one InputError naming the file and line.
#include <doctest/doctest.h>

#include <fstream>
#include <map>

#include "graph/error.h"
#include "launcher/cluster/workload.h"
#include "tests/children.h"

namespace tensoropt::cluster {
namespace {

const std::string kPollux = std::string(TENSOROPT_SOURCE_DIR) + "/tests/fixtures/workloads/pollux-workload-1.csv";

std::string written(const test::TempDir& dir, const std::string& name, const std::string& text) {
  const std::string path = dir.path + "/" + name;
  std::ofstream(path) << text;
  return path;
}

void refused(const std::function<void()>& f, const std::string& part) {
  try {
    f();
    FAIL("no InputError; expected one naming " << part);
  } catch (const InputError& e) {
    CHECK_MESSAGE(std::string(e.what()).find(part) != std::string::npos, e.what());
  }
}

TEST_CASE("cluster workload: Pollux's first workload, 160 jobs of six applications") {
  const std::vector<WorkloadJob> jobs = read_workload(kPollux);
  REQUIRE(jobs.size() == 160);
  CHECK(jobs[0].name == "cifar10-0");
  CHECK(jobs[0].submit_s == 107);
  CHECK(jobs[0].application == "cifar10");
  CHECK(jobs[0].replicas == 6);
  CHECK(jobs[0].batch == 2048);
  CHECK(jobs[0].row == 2);
  std::map<std::string, int> apps;
  for (const WorkloadJob& j : jobs) ++apps[j.application];
  CHECK(apps == std::map<std::string, int>{{"bert", 7}, {"cifar10", 66}, {"deepspeech2", 12}, {"imagenet", 4}, {"ncf", 68}, {"yolov3", 3}});
}

TEST_CASE("cluster workload: a bad file, row or field is one line naming the file and line") {
  test::TempDir dir;
  const std::string head = "name,time,application,num_replicas,batch_size\n";
  refused([&] { read_workload(dir.path + "/none.csv"); }, "none.csv: cannot open the workload");
  refused([&] { read_workload(written(dir, "h.csv", "a,b\n")); }, "h.csv line 1: expected the header");
  refused([&] { read_workload(written(dir, "e.csv", head)); }, "e.csv: no jobs");
  refused([&] { read_workload(written(dir, "f.csv", head + "a,1,cifar10,2\n")); }, "f.csv line 2: 4 fields, expected 5");
  refused([&] { read_workload(written(dir, "t.csv", head + "a,1,cifar10,2,64\nb,soon,cifar10,2,64\n")); }, "t.csv line 3: time 'soon'");
  refused([&] { read_workload(written(dir, "r.csv", head + "a,1,cifar10,0,64\n")); }, "r.csv line 2: num_replicas '0'");
  refused([&] { read_workload(written(dir, "b.csv", head + "a,1,cifar10,2,6.5\n")); }, "b.csv line 2: batch_size '6.5'");
  const std::string mapping = written(dir, "m.json", R"({"applications": {"cifar10": {"model": "r18.onnx", "batch": 128, "samples": 5e6}}})");
  const Mapping m = read_mapping(mapping);
  CHECK(m.at("cifar10").model == dir.path + "/r18.onnx");
  CHECK(m.at("cifar10").batch == 128);
  refused([&] { check_applications(read_workload(kPollux), m, kPollux); }, "pollux-workload-1.csv line 3: application 'deepspeech2' is not in the mapping (cifar10)");
  refused([&] { read_mapping(written(dir, "n.json", "[]")); }, "n.json: not a mapping");
  refused([&] { read_mapping(written(dir, "s.json", R"({"applications": {"x": {"model": "a.onnx", "batch": 8}}})")); }, "s.json application x: needs \"samples\"");
}

TEST_CASE("cluster workload: a Philly trace, each row a job as Pollux's generator derives it") {
  test::TempDir dir;
  const std::string head = "timestamp,duration,num_gpus,gpu_time,cluster\n";
  // Rows 2-8: a minute's job (cifar10: even row), one of 30 s (left out), a 2-GPU job of 3 GPU-hours
  // (deepspeech2: even row), one of 5 GPU-hours (bert), 50 (yolov3), 200 (imagenet), 2,000 (left out).
  const std::vector<WorkloadJob> jobs = read_workload(written(dir, "p.csv", head +
      "2017-10-09 07:00:00,66.0,1,66.0,11cb48\n"
      "2017-10-09 07:00:05,30.0,1,30.0,11cb48\n"
      "2017-10-09 06:59:00,5400.0,2,10800.0,6214e9\n"
      "2017-10-09 08:00:00,18000.0,1,18000.0,6214e9\n"
      "2017-10-10 07:00:00,22500.0,8,180000.0,ee9e8c\n"
      "2017-09-30 23:59:59,90000.0,8,720000.0,ee9e8c\n"
      "2017-10-01 00:00:00,900000.0,8,7200000.0,ee9e8c\n"));
  REQUIRE(jobs.size() == 5);
  CHECK(jobs[0].application == "cifar10");
  CHECK(jobs[0].name == "cifar10-2");
  CHECK(jobs[1].application == "deepspeech2");
  CHECK(jobs[1].replicas == 2);
  CHECK(jobs[2].application == "bert");
  CHECK(jobs[3].application == "yolov3");
  CHECK(jobs[4].application == "imagenet");
  CHECK(jobs[4].row == 7);
  // Submit times from the earliest kept (2017-09-30 23:59:59), across a month's end.
  CHECK(jobs[4].submit_s == 0);
  CHECK(jobs[0].submit_s == 1 + 8 * 86400 + 7 * 3600);
  CHECK(jobs[3].submit_s == 1 + 9 * 86400 + 7 * 3600);
  refused([&] { read_workload(written(dir, "pt.csv", head + "2017-10-09 7h,66.0,1,66.0,x\n")); }, "pt.csv line 2: timestamp '2017-10-09 7h'");
  refused([&] { read_workload(written(dir, "pg.csv", head + "2017-10-09 07:00:00,66.0,0,66.0,x\n")); }, "pg.csv line 2: num_gpus '0'");
  refused([&] { read_workload(written(dir, "pe.csv", head + "2017-10-09 07:00:00,6.0,1,6.0,x\n")); }, "pe.csv: no jobs (none of a minute or more");
}

}  // namespace
}  // namespace tensoropt::cluster
