// `tensoropt run --elastic`, resized while it runs through `tensoropt resize` and watched through
// `tensoropt status`, as a user (or a cluster scheduler) drives it: the GPT fixture resized
// 2 -> 3 -> 1 workers at the plan's chosen points (data parallel) and 1 -> 4 -> 2 at each count's
// smallest point (ZeRO-2, with some tensor parallelism) gives the losses, the samples and the final
// weights of an unresized run; a lost worker is survived from the replicas the workers left hold
// (data parallelism; rank 0 lost after a resize) or else from the job's checkpoint (ZeRO-2); a
// joining worker lost during the handover leaves the old group going on from the shards each
// holds, and one lost before the go-ahead leaves the job at its size; a killed launcher leaves no
// worker; a worker another machine offers (`tensoropt join`, a process the launcher did not start)
// grows the job with the same losses, its loss is survived, and a killed launcher leaves it no
// worker; bad requests are one line and exit 2.
#include <doctest/doctest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>
#include <onnx/onnx_pb.h>

#include "tests/children.h"
#include "tests/cli/binary.h"
#include "tests/redis_server.h"

namespace tensoropt {
namespace {

using test::run_cli;
using test::slurp;

const std::string kFix = std::string(TENSOROPT_SOURCE_DIR) + "/tests/fixtures/runtime/";
const std::string kGpt = kFix + "gpt.onnx";
// Synthetic data (a new batch every step, drawn from the seed and the step, so a shorter run takes
// a longer one's first steps), a batch of 48 so that a step takes long enough for the resizes to
// fall well within the run, and a small rate, so that the steps' fp32 sums in other orders stay
// within 1e-5 of each other (4 workers unresized against one device: 5e-10 over 400 steps; on the
// fixture's 12 rows, which it overfits, at a rate of 1e-3 over 600 steps: 1e-3).
// - kOpt, 240 steps: the runs that only need a job running for a while.
// - kResizeOpt, 150 steps: the resized runs and the one-device run they are held to (both resizes
//   land by step 40 on this machine; the rest is margin).
// - kShortOpt, 130 steps: the lost-worker runs, killed soon after the default first checkpoint
//   (step 100). Three or four ZeRO-2 workers share this machine's two cores with many small
//   collectives (70-170 ms a step, several times that under the sanitizers), so no step they do
//   not need is taken.
const std::string kOpt = " --batch 48 --steps 240 --lr 0.0001";
constexpr int kResizeSteps = 150;
const std::string kResizeOpt = " --batch 48 --steps 150 --lr 0.0001";
const std::string kShortOpt = " --batch 48 --steps 130 --lr 0.0001";

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Every float initializer of an ONNX file, by name.
std::map<std::string, std::vector<float>> weights(const std::string& path) {
  onnx::ModelProto m;
  std::ifstream f(path, std::ios::binary);
  REQUIRE(m.ParseFromIstream(&f));
  std::map<std::string, std::vector<float>> out;
  for (const onnx::TensorProto& t : m.graph().initializer()) {
    if (t.data_type() != onnx::TensorProto::FLOAT) continue;
    std::vector<float>& v = out[t.name()];
    if (t.has_raw_data()) {
      v.resize(t.raw_data().size() / 4);
      std::memcpy(v.data(), t.raw_data().data(), v.size() * 4);
    } else {
      v.assign(t.float_data().begin(), t.float_data().end());
    }
  }
  return out;
}

// The unresized one-device run every elastic run is held to: its report and final weights (run
// once per test process).
struct OneDevice {
  nlohmann::json report;
  std::map<std::string, std::vector<float>> weights;
};
const OneDevice& one_device() {
  static const OneDevice one = [] {
    test::TempDir dir;
    const test::CliResult r = run_cli("run " + kGpt + " --threads 1" + kResizeOpt + " --save " + dir.path + "/one.onnx --report " + dir.path + "/one.json");
    REQUIRE_MESSAGE(r.code == 0, r.err);
    return OneDevice{nlohmann::json::parse(slurp(dir.path + "/one.json")), weights(dir.path + "/one.onnx")};
  }();
  return one;
}

// An elastic job started in the background; its exit code lands in DIR/rc.
struct Job {
  std::string dir, control;
  Job(const std::string& d, const std::string& args) : dir(d), control(d + "/control") {
    const std::string command = "( " + std::string(TENSOROPT_BINARY) + " run " + args + " --control " + control + " >" + dir + "/out 2>" + dir +
                                "/err </dev/null; echo $? >" + dir + "/rc.tmp; mv " + dir + "/rc.tmp " + dir + "/rc ) &";
    REQUIRE(std::system(command.c_str()) == 0);
  }
  // The job's status once `ok` holds for it (or it ended), within a minute.
  nlohmann::json wait_for(const std::function<bool(const nlohmann::json&)>& ok) {
    const auto start = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - start < std::chrono::seconds(60)) {
      const std::string text = slurp(control + "/status.json");
      const nlohmann::json st = nlohmann::json::parse(text, nullptr, false);
      if (!st.is_discarded() && (ok(st) || st.value("finished", false))) return st;
      if (std::filesystem::exists(dir + "/rc")) return st;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return nlohmann::json::object();
  }
  ~Job() {  // a test that failed before the job ended leaves nothing running
    if (!std::filesystem::exists(dir + "/rc")) finish(std::chrono::seconds(0));
  }
  int finish(std::chrono::seconds limit = std::chrono::seconds(120)) {
    const auto start = std::chrono::steady_clock::now();
    while (!std::filesystem::exists(dir + "/rc")) {
      if (std::chrono::steady_clock::now() - start >= limit) {
        std::ifstream pid(control + "/launcher.pid");
        long p = 0;
        if (pid >> p && p > 0) kill(static_cast<pid_t>(p), SIGKILL);  // its workers die with it
        for (int i = 0; i < 500 && !std::filesystem::exists(dir + "/rc"); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
        return -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return std::stoi(slurp(dir + "/rc"));
  }
};

// The run resized through `sizes` (the first its start) and its report.
nlohmann::json resized_run(const std::string& dir, const std::vector<int>& sizes, const std::string& extra) {
  std::filesystem::create_directories(dir);
  const int most = *std::max_element(sizes.begin(), sizes.end());
  Job job(dir, kGpt + " --elastic --gpus " + std::to_string(sizes[0]) + " --min-gpus 1 --max-gpus " + std::to_string(most) + kResizeOpt + extra +
                   " --save " + dir + "/ck.onnx --report " + dir + "/report.json");
  job.wait_for([](const nlohmann::json&) { return true; });
  const test::CliResult outside = run_cli("resize " + job.control + " --gpus " + std::to_string(most + 1));
  CHECK(outside.code == 2);
  CHECK(has(outside.err, "outside the job's 1.." + std::to_string(most)));
  for (size_t i = 1; i < sizes.size(); ++i) {
    const test::CliResult r = run_cli("resize " + job.control + " --gpus " + std::to_string(sizes[i]));
    CHECK_MESSAGE(r.code == 0, r.err);
    const int want = sizes[i];
    const nlohmann::json st = job.wait_for([want](const nlohmann::json& s) { return s.value("workers", 0) == want; });
    CHECK_MESSAGE(st.value("workers", 0) == want, st.dump());
  }
  const int code = job.finish();
  REQUIRE_MESSAGE(code == 0, slurp(dir + "/err"));
  const std::string out = slurp(dir + "/out");
  CHECK(has(out, "control  " + job.control));
  const nlohmann::json report = nlohmann::json::parse(slurp(dir + "/report.json"));
  // status reads the finished job: its last step, its workers and its resizes.
  const test::CliResult status = run_cli("status " + job.control + " --json");
  REQUIRE(status.code == 0);
  const nlohmann::json st = nlohmann::json::parse(status.out);
  CHECK(st.at("step") == kResizeSteps);
  CHECK(st.at("finished") == true);
  CHECK(st.at("workers") == sizes.back());
  CHECK(st.at("resizes") == report.at("resizes"));
  CHECK(has(run_cli("status " + job.control).out, "resized  " + std::to_string(sizes[0]) + " -> " + std::to_string(sizes[1])));
  return report;
}

// Process `pid`'s environment, a line per variable, with a newline first: "\nNAME=value\n" finds one.
std::string environ_lines(pid_t pid) {
  std::string env(1, '\n');
  env += slurp("/proc/" + std::to_string(pid) + "/environ");
  std::replace(env.begin(), env.end(), '\0', '\n');
  return env;
}

// The worker of rank `rank` among `pids` (its RANK variable), or 0.
pid_t rank_of(const std::vector<pid_t>& pids, int rank) {
  for (pid_t p : pids)
    if (has(environ_lines(p), "\nRANK=" + std::to_string(rank) + "\n")) return p;
  return 0;
}

// The report's steps against the one-device run's first steps (a shorter run takes the same steps,
// each drawn from the seed and the step): the same losses and samples, each step once.
void same_steps(const nlohmann::json& steps, const nlohmann::json& want, size_t count) {
  REQUIRE(steps.size() == count);
  REQUIRE(count <= want.size());
  for (size_t k = 0; k < steps.size(); ++k) {
    CAPTURE(k);
    CHECK(steps[k].at("step") == static_cast<int>(k) + 1);
    CHECK(steps[k].at("loss").get<double>() == doctest::Approx(want[k]["loss"].get<double>()).epsilon(1e-5));
    CHECK(steps[k].at("samples") == want[k]["samples"]);
  }
}

}  // namespace

TEST_CASE("run --elastic resized 2 -> 3 -> 1 and 1 -> 4 -> 2 while it runs: the losses, samples and weights of an unresized run") {
  test::TempDir dir;
  const OneDevice& one = one_device();
  const nlohmann::json& want = one.report;
  const std::map<std::string, std::vector<float>>& want_weights = one.weights;
  // The chosen points (data parallel), then each count's smallest point of a plan made here, with
  // every parameter splittable (the fixture's are all below the default persistence threshold):
  // tensor parallel and ZeRO-2 in it.
  const test::CliResult plan =
      run_cli("plan " + kGpt + " --gpus 1,2,3,4 --batch 48 --cluster cpu --param-persistence 0 --json " + dir.path + "/plan.json");
  REQUIRE_MESSAGE(plan.code == 0, plan.err);
  nlohmann::json smallest = nlohmann::json::parse(slurp(dir.path + "/plan.json"));
  bool zero2 = false, tensor = false;
  for (auto& f : smallest["frontiers"]) {
    f["chosen"] = f["points"].size() - 1;
    const std::string summary = f["points"].back()["summary"];
    zero2 = zero2 || has(summary, "ZeRO-2");
    tensor = tensor || has(summary, "TP");
  }
  CHECK(zero2);
  CHECK(tensor);
  std::ofstream(dir.path + "/smallest.json") << smallest.dump();
  int run = 0;
  const std::vector<std::pair<std::string, std::vector<int>>> cases = {{std::string(), {2, 3, 1}},
                                                                       {" --plan " + dir.path + "/smallest.json", {1, 4, 2}}};
  for (const auto& [points, sizes] : cases) {
    {
      CAPTURE(points);
      CAPTURE(sizes[0]);
      const std::string here = dir.path + "/run" + std::to_string(run++);
      const nlohmann::json got = resized_run(here, sizes, points);
      const nlohmann::json& resizes = got.at("resizes");
      REQUIRE(resizes.size() == 2);
      MESSAGE("resized after steps " << resizes[0]["at_step"] << " and " << resizes[1]["at_step"]);
      for (size_t i = 0; i < 2; ++i) {
        CHECK(resizes[i].at("from") == sizes[i]);
        CHECK(resizes[i].at("to") == sizes[i + 1]);
        CHECK(resizes[i].at("pause_s").get<double>() < 5.0);
      }
      const auto& steps = got.at("steps");
      REQUIRE(steps.size() == static_cast<size_t>(kResizeSteps));
      for (size_t k = 0; k < steps.size(); ++k) {
        CAPTURE(k);
        CHECK(steps[k].at("loss").get<double>() == doctest::Approx(want["steps"][k]["loss"].get<double>()).epsilon(1e-5));
        CHECK(steps[k].at("samples") == want["steps"][k]["samples"]);
        // Every sample of the stream once, in order: step k+1 takes samples 48k .. 48k+47.
        for (size_t j = 0; j < 48; ++j) CHECK(steps[k]["samples"][j] == static_cast<int64_t>(48 * k + j));
        const int workers = steps[k].at("workers");
        const int at = static_cast<int>(k) + 1;
        CHECK(workers == (at <= resizes[0]["at_step"].get<int>() ? sizes[0] : at <= resizes[1]["at_step"].get<int>() ? sizes[1] : sizes[2]));
      }
      const std::map<std::string, std::vector<float>> got_weights = weights(here + "/ck.onnx");
      REQUIRE(got_weights.size() == want_weights.size());
      for (const auto& [name, w] : want_weights) {
        CAPTURE(name);
        REQUIRE(got_weights.count(name) == 1);
        const std::vector<float>& g = got_weights.at(name);
        REQUIRE(g.size() == w.size());
        double worst = 0, scale = 1e-3;
        for (size_t i = 0; i < w.size(); ++i) {
          worst = std::max(worst, static_cast<double>(std::abs(g[i] - w[i])));
          scale = std::max(scale, static_cast<double>(std::abs(w[i])));
        }
        // Adam moves a weight whose gradient is near zero by about its rate whatever the gradient's
        // last bits: unresized, 4 workers end 1.2e-4 of the scale from one device (a qkv bias).
        CHECK(worst <= 1e-3 * scale);
      }
    }
  }
}

TEST_CASE("run --report names each step's samples: the rows of --data in order, wrapping around") {
  test::TempDir dir;
  const test::CliResult r = run_cli("run " + kGpt + " --batch 8 --steps 3 --data " + kFix + "gpt.x.npy --labels " + kFix + "gpt.y.npy --report " +
                                    dir.path + "/r.json");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  const nlohmann::json steps = nlohmann::json::parse(slurp(dir.path + "/r.json")).at("steps");
  CHECK(steps[0]["samples"] == nlohmann::json({0, 1, 2, 3, 4, 5, 6, 7}));
  CHECK(steps[1]["samples"] == nlohmann::json({8, 9, 10, 11, 0, 1, 2, 3}));
  CHECK(steps[2]["samples"] == nlohmann::json({4, 5, 6, 7, 8, 9, 10, 11}));
}

TEST_CASE("run --elastic, status and resize: bad requests are one line and exit 2") {
  test::TempDir dir;
  const auto refused = [](const test::CliResult& r, const std::string& part) {
    CAPTURE(r.err);
    CHECK(r.code == 2);
    CHECK(test::lines(r.err) == 1);
    CHECK(has(r.err, part));
  };
  refused(run_cli("status " + dir.path), "not the control directory of an elastic job");
  refused(run_cli("join " + dir.path), "not the control directory of an elastic job");
  refused(run_cli("resize " + dir.path + " --gpus 2"), "not the control directory of an elastic job");
  refused(run_cli("run " + kGpt + " --gpus 2 --max-gpus 4"), "--max-gpus");
  refused(run_cli("run " + kGpt + " --elastic --gpus 3 --max-gpus 2"), "outside --min-gpus 1 .. --max-gpus 2");
  const test::CliResult plan = run_cli("plan " + kGpt + " --gpus 1,2 --batch 12 --cluster cpu --json " + dir.path + "/plan12.json");
  REQUIRE(plan.code == 0);
  refused(run_cli("run " + kGpt + " --elastic --gpus 2 --max-gpus 3 --batch 12 --plan " + dir.path + "/plan12.json"), "3");
  // A finished job: resize says it is gone; status still reads it.
  const std::string control = dir.path + "/control";
  const test::CliResult done = run_cli("run " + kGpt + " --elastic --gpus 2 --max-gpus 3 --steps 2" + std::string(" --batch 12 --control ") + control);
  REQUIRE_MESSAGE(done.code == 0, done.err);
  refused(run_cli("resize " + control + " --gpus 3"), "the job is gone");
  refused(run_cli("join " + control), "the job is over");
  const test::CliResult status = run_cli("status " + control);
  CHECK(status.code == 0);
  CHECK(has(status.out, "finished"));
  CHECK(has(status.out, "step     2 of 2"));
}

TEST_CASE("run --elastic: a joining worker killed before the go-ahead leaves the job at its size, and a killed launcher leaves no worker") {
  test::TempDir dir;
  // The joining worker is killed as soon as it runs (it loads for a while before it says it is ready).
  Job job(dir.path, kGpt + " --elastic --gpus 2 --max-gpus 3" + kOpt + " --report " + dir.path + "/report.json");
  job.wait_for([](const nlohmann::json&) { return true; });
  const std::vector<pid_t> before = test::runs_with(job.control);
  REQUIRE(before.size() >= 3);  // the launcher and two workers
  REQUIRE(run_cli("resize " + job.control + " --gpus 3").code == 0);
  bool killed = false;
  for (int i = 0; i < 5000 && !killed; ++i) {
    for (pid_t p : test::runs_with(job.control))
      if (std::find(before.begin(), before.end(), p) == before.end()) {
        kill(p, SIGKILL);
        killed = true;
      }
    if (!killed) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  REQUIRE(killed);
  REQUIRE_MESSAGE(job.finish() == 0, slurp(dir.path + "/err"));
  CHECK(has(slurp(dir.path + "/err"), "the resize to 3 workers is abandoned, the job goes on with 2"));
  const nlohmann::json report = nlohmann::json::parse(slurp(dir.path + "/report.json"));
  CHECK(report.at("resizes").empty());
  CHECK(report.at("steps").size() == 240);
  CHECK(report["steps"].back()["workers"] == 2);

  // SIGKILL to the launcher: its workers die with it.
  test::TempDir second;
  Job other(second.path, kGpt + " --elastic --gpus 2 --max-gpus 3" + kOpt);
  other.wait_for([](const nlohmann::json&) { return true; });
  std::ifstream pid_file(other.control + "/launcher.pid");
  long launcher = 0;
  REQUIRE(static_cast<bool>(pid_file >> launcher));
  REQUIRE(test::runs_with(other.control).size() == 3);
  kill(static_cast<pid_t>(launcher), SIGKILL);
  const auto start = std::chrono::steady_clock::now();
  while (!test::runs_with(other.control).empty() && std::chrono::steady_clock::now() - start < std::chrono::seconds(10))
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK(test::runs_with(other.control).empty());
  CHECK(other.finish() != 0);
  CHECK(has(run_cli("resize " + other.control + " --gpus 3").err, "the job is gone"));
}

TEST_CASE("run --elastic survives a lost worker: from the replicas the others hold, else from its checkpoint, and a joining one lost in the handover leaves the old group going on, the losses unchanged") {
  test::TempDir dir;
  const nlohmann::json& want = one_device().report.at("steps");
  // The chosen point at 3 workers is data parallel (every worker a replica of the whole state);
  // the smallest is ZeRO-2 (the optimizer state split: none left holds it whole).
  const test::CliResult plan = run_cli("plan " + kGpt + " --gpus 1,2,3 --batch 48 --cluster cpu --json " + dir.path + "/plan.json");
  REQUIRE_MESSAGE(plan.code == 0, plan.err);
  nlohmann::json smallest = nlohmann::json::parse(slurp(dir.path + "/plan.json"));
  for (auto& f : smallest["frontiers"]) f["chosen"] = f["points"].size() - 1;
  CHECK(has(smallest["frontiers"][2]["points"].back()["summary"].get<std::string>(), "ZeRO-2"));
  std::ofstream(dir.path + "/smallest.json") << smallest.dump();
  for (const bool replicas : {true, false}) {
    CAPTURE(replicas);
    const std::string here = dir.path + (replicas ? "/replicas" : "/checkpoint");
    std::filesystem::create_directories(here);
    // The default checkpoints: the first after 100 steps. From replicas, the job first grows 2 -> 3
    // and loses its rank 0 (another worker leads on, with the report's history and the resize);
    // from the checkpoint, it starts at 3 and loses rank 2.
    Job job(here, kGpt + " --elastic --gpus " + (replicas ? "2 --max-gpus 3" : "3") + kShortOpt +
                      (replicas ? "" : " --plan " + dir.path + "/smallest.json") + " --report " + here + "/report.json");
    if (replicas) {
      job.wait_for([](const nlohmann::json&) { return true; });
      REQUIRE(run_cli("resize " + job.control + " --gpus 3").code == 0);
    }
    job.wait_for([](const nlohmann::json& st) { return st.value("step", 0) >= 105 && st.value("workers", 0) == 3; });
    const int lost_rank = replicas ? 0 : 2;
    const pid_t victim = rank_of(test::runs_with(job.control), lost_rank);
    REQUIRE(victim > 0);
    kill(victim, SIGKILL);
    REQUIRE_MESSAGE(job.finish() == 0, slurp(here + "/err"));
    const std::string out = slurp(here + "/out");
    CHECK(has(out, "lost     rank " + std::to_string(lost_rank) + " of 3 (killed by signal 9"));
    CHECK(has(out, "regroup  the 2 workers left meet as a new group"));
    CHECK(has(out, replicas ? "regroup  2 workers go on from the state at step" : "restart  2 workers from the checkpoint"));
    const nlohmann::json report = nlohmann::json::parse(slurp(here + "/report.json"));
    REQUIRE(report.at("recoveries").size() == 1);
    const nlohmann::json& r = report["recoveries"][0];
    CHECK(r.at("lost_ranks") == nlohmann::json({lost_rank}));
    CHECK(r.at("from") == 3);
    CHECK(report.at("resizes").size() == (replicas ? 1u : 0u));
    CHECK(r.at("to") == 2);
    CHECK(r.at("source") == (replicas ? "replicas" : "checkpoint"));
    const int resumed = r.at("resumed_from_step").get<int>();
    if (replicas) {
      CHECK(resumed >= 105);
      CHECK(r.at("redone_steps").get<int>() <= 1);  // a step some finished and others did not
      CHECK(r.at("pause_s").get<double>() < 5.0);
    } else {
      CHECK(resumed % 100 == 0);
      CHECK(resumed >= 100);
    }
    const nlohmann::json& steps = report.at("steps");
    same_steps(steps, want, 130);
    const int grown = replicas ? report["resizes"][0].at("at_step").get<int>() : 0;
    for (size_t k = 0; k < steps.size(); ++k) {
      const int step = static_cast<int>(k) + 1;
      CHECK(steps[k].at("workers") == (step <= grown ? 2 : step <= resumed ? 3 : 2));
    }
    const std::string status = run_cli("status " + job.control).out;
    CHECK(has(status, "lost     rank [" + std::to_string(lost_rank) + "]"));
    CHECK(has(status, replicas ? "resized  2 -> 3" : "resizes  none"));
    CHECK(test::runs_with(job.control).empty());
  }
  // A joining worker killed during the handover: the old group goes on, unchanged, from the shards
  // each worker holds (ZeRO-2: none holds the whole state).
  const std::string here = dir.path + "/joining";
  std::filesystem::create_directories(here);
  Job job(here, kGpt + " --elastic --gpus 2 --max-gpus 3" + kShortOpt + " --plan " + dir.path + "/smallest.json --report " + here + "/report.json");
  job.wait_for([](const nlohmann::json&) { return true; });
  REQUIRE(run_cli("resize " + job.control + " --gpus 3").code == 0);
  // The go-ahead is written once the joining worker is loaded; the group hands over at least
  // 0.05 s of steps after it sees it (it looks every 0.2 s of steps): the kill falls in between.
  const auto start = std::chrono::steady_clock::now();
  while (!std::filesystem::exists(job.control + "/switch.json") && std::chrono::steady_clock::now() - start < std::chrono::seconds(60))
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  const pid_t joiner = rank_of(test::runs_with(job.control), 2);
  REQUIRE(joiner > 0);
  kill(joiner, SIGKILL);
  REQUIRE_MESSAGE(job.finish() == 0, slurp(here + "/err"));
  const std::string out = slurp(here + "/out");
  CHECK(has(out, "lost     joining worker 2 (killed by signal 9 (Killed)) during the resize 2 -> 3"));
  CHECK(has(out, "the resize is abandoned"));
  CHECK(has(out, "that each held"));
  const nlohmann::json report = nlohmann::json::parse(slurp(here + "/report.json"));
  CHECK(report.at("resizes").empty());
  REQUIRE(report.at("recoveries").size() == 1);
  CHECK(report["recoveries"][0].at("source") == "replicas");
  CHECK(report["recoveries"][0].at("to") == 2);
  CHECK(report["recoveries"][0].at("during_resize_to") == 3);
  same_steps(report.at("steps"), want, 130);
  for (const auto& e : report["steps"]) CHECK(e.at("workers") == 2);
  CHECK(test::runs_with(job.control).empty());
}


TEST_CASE("run --elastic left below --min-gpus waits --rejoin-timeout for a resize, then stops in one line, leaving no process") {
  test::TempDir dir;
  Job job(dir.path, kGpt + " --elastic --gpus 2 --min-gpus 2 --checkpoint-every 50 --rejoin-timeout 1" + kOpt);
  job.wait_for([](const nlohmann::json& st) { return st.value("step", 0) >= 60; });
  const pid_t victim = rank_of(test::runs_with(job.control), 1);
  REQUIRE(victim > 0);
  kill(victim, SIGKILL);
  CHECK(job.finish() == 1);
  const std::string err = slurp(dir.path + "/err");
  CHECK(test::lines(err) == 1);
  CHECK(has(err, "fewer than --min-gpus 2, and no resize came within 1 s: the job stops (its checkpoint: " + job.control + "/checkpoint.onnx)"));
  CHECK(has(slurp(dir.path + "/out"), "waiting  1 workers left"));
  CHECK(test::runs_with(job.control).empty());
}

TEST_CASE("run --elastic in a control directory another job used starts clean: no restart resumes from that job's checkpoint") {
  test::TempDir dir;
  const std::string control = dir.path + "/control";
  const test::CliResult first = run_cli("run " + kGpt + " --elastic --gpus 2 --steps 3 --checkpoint-every 1 --batch 12 --control " + control);
  REQUIRE_MESSAGE(first.code == 0, first.err);
  CHECK(std::filesystem::exists(control + "/checkpoint.onnx"));
  CHECK(std::filesystem::exists(control + "/history.json"));
  const test::CliResult second = run_cli("run " + kGpt + " --elastic --gpus 2 --steps 1 --checkpoint-every 0 --batch 12 --control " + control);
  REQUIRE_MESSAGE(second.code == 0, second.err);
  CHECK_FALSE(std::filesystem::exists(control + "/checkpoint.onnx"));
  CHECK_FALSE(std::filesystem::exists(control + "/checkpoint.onnx.optim"));
  CHECK_FALSE(std::filesystem::exists(control + "/history.json"));
  CHECK(nlohmann::json::parse(slurp(control + "/status.json")).at("step") == 1);
}

}  // namespace tensoropt

namespace tensoropt {
namespace {

// `tensoropt join CONTROL` started beside a job, as another machine would (not the launcher's
// child); its exit code lands in DIR/join.rc.
struct Joiner {
  std::string dir;
  Joiner(const std::string& d, const std::string& control, const std::string& env = "") : dir(d) {
    const std::string command = "( cd / && " + env + std::string(TENSOROPT_BINARY) + " join " + control + " >" + dir + "/join.out 2>" + dir +
                                "/join.err </dev/null; echo $? >" + dir + "/join.rc.tmp; mv " + dir + "/join.rc.tmp " + dir + "/join.rc ) &";
    REQUIRE(std::system(command.c_str()) == 0);
  }
  int finish(std::chrono::seconds limit = std::chrono::seconds(60)) {
    const auto start = std::chrono::steady_clock::now();
    while (!std::filesystem::exists(dir + "/join.rc") && std::chrono::steady_clock::now() - start < limit)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return std::filesystem::exists(dir + "/join.rc") ? std::stoi(slurp(dir + "/join.rc")) : -1;
  }
};

// Waits (a minute at most) for `path` to exist.
bool appears(const std::string& path) {
  for (int i = 0; i < 6000 && !std::filesystem::exists(path); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return std::filesystem::exists(path);
}

}  // namespace

TEST_CASE("run --elastic takes a worker another machine offers (tensoropt join): the losses of an unresized run, its loss survived, and a killed launcher leaves it no worker") {
  const OneDevice& one = one_device();
  {  // The offer comes as the job starts: the resize lands within its 150 steps, the losses unchanged.
    // The groups meet in a Redis server (--rendezvous), as machines without a shared store's
    // directory would, where one is installed.
    const test::RedisServer redis;
    std::string store;
    if (redis.up) store = " --rendezvous " + redis.spec();
    else MESSAGE("redis-server is not running here (Debian's redis-server package): the groups meet in CONTROL/elastic-store");
    test::TempDir dir;
    Job job(dir.path, kGpt + " --elastic --gpus 1 --max-gpus 2" + kResizeOpt + store + " --report " + dir.path + "/report.json");
    REQUIRE(appears(job.control + "/job.json"));
    Joiner joiner(dir.path, job.control);
    REQUIRE_MESSAGE(job.finish() == 0, slurp(dir.path + "/err"));
    CHECK(joiner.finish() == 0);
    const std::string out = slurp(dir.path + "/out"), join_out = slurp(dir.path + "/join.out");
    CAPTURE(out);
    CAPTURE(join_out);
    CHECK(has(out, "resize   1 -> 2 workers: offered by"));
    CHECK(has(join_out, "worker   rank 1 of 2 (generation 1)"));
    const nlohmann::json report = nlohmann::json::parse(slurp(dir.path + "/report.json"));
    REQUIRE(report.at("resizes").size() == 1);
    CHECK(report["resizes"][0]["to"] == 2);
    same_steps(report.at("steps"), one.report.at("steps"), kResizeSteps);
    CHECK(report["steps"].back()["workers"] == 2);
  }
  {  // Its worker killed: the job goes on from the replica the launcher's worker holds. The joining
    // process was given local rank 1 (by srun, say): its worker takes that device.
    test::TempDir dir;
    // 400 steps: the join lands by step 100 here, and under the sanitizers a step takes up to 0.1 s.
    Job job(dir.path, kGpt + " --elastic --gpus 1 --max-gpus 2 --batch 48 --steps 400 --lr 0.0001 --report " + dir.path + "/report.json");
    REQUIRE(appears(job.control + "/job.json"));
    Joiner joiner(dir.path, job.control, "SLURM_LOCALID=1 ");
    const nlohmann::json st = job.wait_for([](const nlohmann::json& s) { return s.value("workers", 0) == 2; });
    REQUIRE_MESSAGE(st.value("workers", 0) == 2, st.dump());
    pid_t worker = 0;
    for (pid_t p : test::runs_with(job.control))
      if (has(environ_lines(p), "\nTENSOROPT_MEMBER=")) worker = p;
    REQUIRE(worker > 0);
    CHECK(has(environ_lines(worker), "\nLOCAL_RANK=1\n"));
    kill(worker, SIGKILL);
    REQUIRE_MESSAGE(job.finish() == 0, slurp(dir.path + "/err"));
    CHECK(joiner.finish() == 1);
    CHECK(has(slurp(dir.path + "/join.err"), "this machine's worker killed by signal 9"));
    const std::string out = slurp(dir.path + "/out");
    CAPTURE(out);
    CHECK(has(out, "lost     rank 1 of 2 (killed by signal 9"));
    const nlohmann::json report = nlohmann::json::parse(slurp(dir.path + "/report.json"));
    CHECK(report.at("steps").size() == 400);
    CHECK(report["steps"].back()["workers"] == 1);
  }
  {  // ZeRO-2 at each count's smallest point: a launcher's worker lost, no one holds the whole state, and
    // the job restarts from its checkpoint with the joined machine's worker started again there.
    test::TempDir dir;
    const test::CliResult plan = run_cli("plan " + kGpt + " --gpus 1,2,3 --batch 48 --cluster cpu --json " + dir.path + "/plan.json");
    REQUIRE_MESSAGE(plan.code == 0, plan.err);
    nlohmann::json smallest = nlohmann::json::parse(slurp(dir.path + "/plan.json"));
    for (auto& f : smallest["frontiers"]) f["chosen"] = f["points"].size() - 1;
    std::ofstream(dir.path + "/smallest.json") << smallest.dump();
    Job job(dir.path, kGpt + " --elastic --gpus 2 --max-gpus 3" + kShortOpt + " --plan " + dir.path + "/smallest.json --report " + dir.path + "/report.json");
    REQUIRE(appears(job.control + "/job.json"));
    Joiner joiner(dir.path, job.control);
    const nlohmann::json st = job.wait_for([](const nlohmann::json& s) { return s.value("step", 0) >= 105 && s.value("workers", 0) == 3; });
    REQUIRE_MESSAGE(st.value("workers", 0) == 3, st.dump());
    pid_t victim = 0;
    for (pid_t p : test::runs_with(job.control))
      if (const std::string env = environ_lines(p); has(env, "\nRANK=1\n") && !has(env, "\nTENSOROPT_MEMBER=")) victim = p;
    REQUIRE(victim > 0);
    kill(victim, SIGKILL);
    REQUIRE_MESSAGE(job.finish() == 0, slurp(dir.path + "/err"));
    CHECK(joiner.finish() == 0);
    const std::string out = slurp(dir.path + "/out"), join_out = slurp(dir.path + "/join.out");
    CAPTURE(out);
    CAPTURE(join_out);
    CHECK(has(out, "restart  2 workers from the checkpoint"));
    CHECK(has(join_out, "worker   rank 1 of 2 (generation "));
    CHECK(has(join_out, ", from the checkpoint)"));
    const nlohmann::json report = nlohmann::json::parse(slurp(dir.path + "/report.json"));
    REQUIRE(report.at("recoveries").size() == 1);
    CHECK(report["recoveries"][0].at("source") == "checkpoint");
    same_steps(report.at("steps"), one.report.at("steps"), 130);
    CHECK(report["steps"].back()["workers"] == 2);
  }
  {  // The launcher killed: its own worker dies with it, the joined one once its machine sees the launcher silent.
    test::TempDir dir;
    Job job(dir.path, kGpt + " --elastic --gpus 1 --max-gpus 2 --batch 48 --steps 1000000 --lr 0.0001");
    REQUIRE(appears(job.control + "/job.json"));
    Joiner joiner(dir.path, job.control);
    const nlohmann::json st = job.wait_for([](const nlohmann::json& s) { return s.value("workers", 0) == 2; });
    REQUIRE_MESSAGE(st.value("workers", 0) == 2, st.dump());
    std::ifstream pid_file(job.control + "/launcher.pid");
    long launcher = 0;
    REQUIRE(static_cast<bool>(pid_file >> launcher));
    kill(static_cast<pid_t>(launcher), SIGKILL);
    CHECK(joiner.finish(std::chrono::seconds(30)) == 1);
    CHECK(has(slurp(dir.path + "/join.err"), "the job's launcher stopped answering"));
    const auto start = std::chrono::steady_clock::now();
    while (!test::runs_with(job.control).empty() && std::chrono::steady_clock::now() - start < std::chrono::seconds(10))
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    CHECK(test::runs_with(job.control).empty());
    CHECK(job.finish() != 0);
  }
}

}  // namespace tensoropt
