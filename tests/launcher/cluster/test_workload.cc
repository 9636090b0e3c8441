// Workloads as Pollux publishes them, and the application mapping (launcher/cluster/workload.h):
// Pollux's first workload read whole; every malformed file, row and field one InputError naming
// the file and line.
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

}  // namespace
}  // namespace tensoropt::cluster
