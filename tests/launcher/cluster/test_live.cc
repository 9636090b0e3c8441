// The live scheduler's loop (launcher/cluster/live.h) under a policy made for the test, which
// preempts: a running job stopped when another arrives, and started again from its checkpoint once
// that one is done, as real `tensoropt run --elastic` processes (the MLP fixture on CPU workers).
// The shipped policies preempt only after an hour of GPU time, which no test waits for.
#include <doctest/doctest.h>

#include <sstream>

#include <nlohmann/json.hpp>

#include "launcher/cluster/live.h"
#include "tests/children.h"
#include "tests/cli/binary.h"

namespace tensoropt::cluster {
namespace {

// One job alone runs on 1 GPU; with two, the newer gets them all and the older waits.
class NewestFirst final : public Policy {
 public:
  std::string name() const override { return "newest-first"; }
  bool elastic() const override { return false; }
  Decision decide(double, const std::vector<JobView>& active, int gpus) override {
    Decision d;
    d.gpus.assign(active.size(), 0);
    d.gpus.back() = active.size() == 1 ? 1 : gpus;
    return d;
  }
};

LiveJob mlp_job(const std::string& name, double submit, int64_t steps) {
  LiveJob j;
  j.job.name = name;
  j.job.submit_s = submit;
  j.job.work = static_cast<double>(steps * 8);
  j.job.speed = {0, 1, 1};
  j.batch = 8;
  j.argv = {TENSOROPT_BINARY, "run", std::string(TENSOROPT_SOURCE_DIR) + "/tests/fixtures/runtime/mlp.onnx", "--batch", "8",
            "--steps", std::to_string(steps), "--threads", "1", "--elastic", "--min-gpus", "1", "--max-gpus", "2", "--checkpoint-every", "200"};
  return j;
}

TEST_CASE("cluster live: a preempted job starts again from its checkpoint and trains every step once more at most from there") {
  test::TempDir dir;
  NewestFirst policy;
  std::ostringstream log;
  LiveOptions o;
  o.dir = dir.path + "/jobs";
  const Result r = run_live({mlp_job("a", 0, 20000), mlp_job("b", 1.5, 300)}, 2, policy, o, log);
  CAPTURE(log.str());
  REQUIRE(r.jobs.size() == 2);
  const JobResult &a = r.jobs[0], &b = r.jobs[1];
  CHECK(a.start_s < 0.2);
  CHECK(b.start_s >= 1.5);
  CHECK(a.finish_s > b.finish_s);  // a waited for b
  CHECK(a.resizes == 1);            // its restart
  CHECK(b.resizes == 0);
  CHECK(log.str().find("stop     a (") != std::string::npos);
  CHECK(log.str().find("restart  a on 1 GPU from its checkpoint") != std::string::npos);
  CHECK(log.str().find("start    b on 2 GPUs") != std::string::npos);
  // a finished its steps, and its second run went on from the checkpoint (a multiple of 200
  // steps, at most 200 behind where it was stopped): at most 200 step lines more than one run's.
  const nlohmann::json st = nlohmann::json::parse(test::slurp(o.dir + "/job-0/status.json"));
  CHECK(st.at("finished") == true);
  CHECK(st.at("step") == 20000);
  const std::string alog = test::slurp(o.dir + "/job-0.log");
  long steps = 0;
  for (size_t at = alog.find("\nstep "); at != std::string::npos; at = alog.find("\nstep ", at + 1)) ++steps;
  CHECK(steps >= 20000);
  CHECK(steps <= 20200);
  CHECK(test::runs_with(o.dir).empty());
}

}  // namespace
}  // namespace tensoropt::cluster
