// The cluster simulator's engine and policies (launcher/cluster/) on workloads small enough to
// work out by hand: each schedule below is derived in its comment, and the engine must land on it.
#include <doctest/doctest.h>

#include "graph/error.h"
#include "launcher/cluster/engine.h"
#include "launcher/cluster/policy.h"

namespace tensoropt::cluster {
namespace {

// A job of `work` samples whose speed on k GPUs is per_gpu * k (scaling perfectly), or `flat`
// whatever the count when per_gpu is 0; counts below `least` do not fit.
Job job(const std::string& name, double submit, double work, int requested, int gpus, double per_gpu, double flat = 0, int least = 1) {
  Job j;
  j.name = name;
  j.submit_s = submit;
  j.work = work;
  j.requested = requested;
  j.speed.assign(static_cast<size_t>(gpus) + 1, 0);
  for (int k = least; k <= gpus; ++k) j.speed[static_cast<size_t>(k)] = per_gpu > 0 ? per_gpu * k : flat;
  return j;
}

Result run(const std::string& policy, const std::vector<Job>& jobs, int gpus) {
  const std::unique_ptr<Policy> p = make_policy(policy);
  return simulate(jobs, gpus, *p);
}

TEST_CASE("cluster: two jobs on four GPUs, worked out by hand under each policy") {
  // A and B: 100 samples each, 10 samples/s per GPU, both asking for 2 GPUs at time 0.
  std::vector<Job> jobs = {job("a", 0, 100, 2, 4, 10), job("b", 0, 100, 2, 4, 10)};
  // fifo and tiresias: 2 GPUs each, 20 samples/s, both done at 5 s.
  for (const char* p : {"fifo", "tiresias"}) {
    CAPTURE(p);
    const Result r = run(p, jobs, 4);
    CHECK(r.jobs[0].finish_s == doctest::Approx(5));
    CHECK(r.jobs[1].finish_s == doctest::Approx(5));
    CHECK(r.avg_jct_s() == doctest::Approx(5));
    CHECK(r.utilisation() == doctest::Approx(1));
    CHECK(r.resizes() == 0);
  }
  // frontier: both on 1 GPU, then each free GPU to the job gaining most per GPU over the work it
  // has left (a tie: the first), so a gets 3 and b 1. a is done at 100/30 = 10/3 s, when b has
  // 100/3 samples and takes all 4 GPUs: 200/3 left at 40/s, done at 10/3 + 5/3 = 5 s.
  Result r = run("frontier", jobs, 4);
  CHECK(r.jobs[0].finish_s == doctest::Approx(10.0 / 3));
  CHECK(r.jobs[1].finish_s == doctest::Approx(5));
  CHECK(r.avg_jct_s() == doctest::Approx(25.0 / 6));
  CHECK(r.resizes() == 1);
  // With a resize costing 1 s, b's grow still pays (it saves 20/3 - 5/3 = 5 s > 2 x 1 s): b
  // pauses 1 s holding 4 GPUs and is done at 10/3 + 1 + 5/3 = 6 s.
  for (Job& j : jobs) j.resize_s = 1;
  r = run("frontier", jobs, 4);
  CHECK(r.jobs[1].finish_s == doctest::Approx(6));
  CHECK(r.paused_s() == doctest::Approx(1));
  CHECK(r.jobs[1].gpu_s == doctest::Approx(10.0 / 3 + 4 * (1 + 5.0 / 3)));
  // With 10 s it does not (5 s saved < 20 s): b goes on on 1 GPU, done at 10 s.
  for (Job& j : jobs) j.resize_s = 10;
  r = run("frontier", jobs, 4);
  CHECK(r.jobs[1].finish_s == doctest::Approx(10));
  CHECK(r.resizes() == 0);
}

TEST_CASE("cluster: a job's launch pauses its first start, not its restarts, and is no resize") {
  // A alone on 2 GPUs (fifo), 100 samples at 20/s, launching for 2 s: it holds its GPUs from 0 and
  // is done at 2 + 5 = 7 s; nothing is lost to resizes.
  std::vector<Job> jobs = {job("a", 0, 100, 2, 2, 10)};
  jobs[0].launch_s = 2;
  Result r = run("fifo", jobs, 2);
  CHECK(r.jobs[0].start_s == doctest::Approx(0));
  CHECK(r.jobs[0].finish_s == doctest::Approx(7));
  CHECK(r.jobs[0].gpu_s == doctest::Approx(14));
  CHECK(r.paused_s() == doctest::Approx(0));
  CHECK(r.resizes() == 0);
  // B arrives at 1 s asking for 2 and waits for A (7 s), launches 2 s, trains 5 s: done at 14 s.
  jobs.push_back(job("b", 1, 100, 2, 2, 10));
  jobs[1].launch_s = 2;
  r = run("fifo", jobs, 2);
  CHECK(r.jobs[1].start_s == doctest::Approx(7));
  CHECK(r.jobs[1].finish_s == doctest::Approx(14));
}

TEST_CASE("cluster: a job that runs slower beside others speeds up when it is alone (Job::speed_alone)") {
  // A (150 samples) at 0 s and B (150) at 5 s ask for 1 GPU each of 2: 20 samples/s alone, 10
  // with the other GPU busy. A trains 100 samples alone by 5 s, then both run at 10/s: A's last 50
  // take 5 s (done at 10 s), while B trains 50; alone again, B's last 100 take 5 s: done at 15 s.
  std::vector<Job> jobs = {job("a", 0, 150, 1, 2, 0, 10), job("b", 5, 150, 1, 2, 0, 10)};
  for (Job& j : jobs) j.speed_alone = {0, 20, 10};
  Result r = run("fifo", jobs, 2);
  CHECK(r.jobs[0].finish_s == doctest::Approx(10));
  CHECK(r.jobs[1].finish_s == doctest::Approx(15));
  CHECK(r.avg_jct_s() == doctest::Approx(10));
  // Without the speeds alone, both run at 10/s throughout: A is done at 15 s, B at 20 s.
  for (Job& j : jobs) j.speed_alone.clear();
  r = run("fifo", jobs, 2);
  CHECK(r.jobs[0].finish_s == doctest::Approx(15));
  CHECK(r.jobs[1].finish_s == doctest::Approx(20));
  // Between the loads, the line between the two: 1 GPU of 4 with 2 busy is a third of the way
  // from alone (20) to full (10); a job on every GPU runs at its one speed.
  Job four = job("c", 0, 100, 1, 4, 10);
  four.speed_alone = {0, 20, 30, 35, 40};
  CHECK(speed_at(four, 1, 1, 4) == doctest::Approx(20));
  CHECK(speed_at(four, 1, 2, 4) == doctest::Approx(20 - 10.0 / 3));
  CHECK(speed_at(four, 1, 4, 4) == doctest::Approx(10));
  CHECK(speed_at(four, 2, 3, 4) == doctest::Approx(25));
  CHECK(speed_at(four, 4, 4, 4) == doctest::Approx(40));  // speed[4]: the cluster is full
}

TEST_CASE("cluster: fifo's head of the queue blocks the jobs behind it, tiresias skips to one that fits") {
  // 4 GPUs. a (t 0) asks 3 GPUs for 30 samples at 10/s per GPU: 1 s. b (t 0.1) asks 2 for 20: it
  // waits for a, runs 1 to 2. c (t 0.2) asks 1 for 10: under fifo it waits behind b although a
  // GPU is free, and runs with b from 1 to 2; tiresias starts it at once: 0.2 to 1.2.
  const std::vector<Job> jobs = {job("a", 0, 30, 3, 4, 10), job("b", 0.1, 20, 2, 4, 10), job("c", 0.2, 10, 1, 4, 10)};
  const Result fifo = run("fifo", jobs, 4);
  CHECK(fifo.jobs[0].finish_s == doctest::Approx(1));
  CHECK(fifo.jobs[1].finish_s == doctest::Approx(2));
  CHECK(fifo.jobs[2].start_s == doctest::Approx(1));
  CHECK(fifo.jobs[2].finish_s == doctest::Approx(2));
  CHECK(fifo.makespan_s == doctest::Approx(2));
  const Result tiresias = run("tiresias", jobs, 4);
  CHECK(tiresias.jobs[2].start_s == doctest::Approx(0.2));
  CHECK(tiresias.jobs[2].finish_s == doctest::Approx(1.2));
  CHECK(tiresias.jobs[1].finish_s == doctest::Approx(2));
  CHECK(tiresias.avg_jct_s() == doctest::Approx((1 + 1.9 + 1.0) / 3));
}

TEST_CASE("cluster: tiresias preempts a job that left its first queue, which pays its restart") {
  // One GPU. a (t 0, 5000 samples at 1/s) reaches 3600 GPU-seconds at 3600 s and leaves the first
  // queue; b (t 100, 50 samples) has waited behind it and now runs, 3600 to 3650; a resumes, pays
  // its 10 s restart, and has 1400 samples left: done at 3650 + 10 + 1400 = 5060 s.
  std::vector<Job> jobs = {job("a", 0, 5000, 1, 1, 1), job("b", 100, 50, 1, 1, 1)};
  for (Job& j : jobs) j.restart_s = 10;
  const Result r = run("tiresias", jobs, 1);
  CHECK(r.jobs[1].start_s == doctest::Approx(3600));
  CHECK(r.jobs[1].finish_s == doctest::Approx(3650));
  CHECK(r.jobs[0].finish_s == doctest::Approx(5060));
  CHECK(r.jobs[0].resizes == 1);
  CHECK(r.jobs[0].paused_s == doctest::Approx(10));
  // fifo: a to the end (5000 s), then b (5050 s).
  const Result fifo = run("fifo", jobs, 1);
  CHECK(fifo.jobs[1].finish_s == doctest::Approx(5050));
}

TEST_CASE("cluster: doubling and edl grow the job that scales, not the one that does not") {
  // 4 GPUs. a scales (10/s per GPU, 100 samples); b does not (10/s on any count, 100 samples).
  const std::vector<Job> jobs = {job("a", 0, 100, 1, 4, 10), job("b", 0, 100, 1, 4, 0, 10)};
  // doubling: both on 1; a doubles to 2 (gain 1 per GPU; b's is 0); doubling again would take 2
  // more and 1 is free, so a runs at 20/s: done at 5 s; b stays on 1 (doubling gains it nothing):
  // 10 s, and a GPU idles.
  const Result doubling = run("doubling", jobs, 4);
  CHECK(doubling.jobs[0].finish_s == doctest::Approx(5));
  CHECK(doubling.jobs[1].finish_s == doctest::Approx(10));
  // edl: both on 1; the idle GPUs grow the fewest-holding job whose speed gains: a, to 3 (30/s),
  // done at 10/3 s; then b, alone, grows but gains nothing, so stays on 1: 10 s.
  const Result edl = run("edl", jobs, 4);
  CHECK(edl.jobs[0].finish_s == doctest::Approx(10.0 / 3));
  CHECK(edl.jobs[1].finish_s == doctest::Approx(10));
  // edl shrinks to admit: c (t 1, 10 samples, 10/s) arrives with a on 3 and b on 1 (none free):
  // a shrinks to 2, c runs on 1 from 1 to 2 s.
  std::vector<Job> three = jobs;
  three.push_back(job("c", 1, 10, 1, 4, 10));
  const Result admitted = run("edl", three, 4);
  CHECK(admitted.jobs[2].start_s == doctest::Approx(1));
  CHECK(admitted.jobs[2].finish_s == doctest::Approx(2));
}

TEST_CASE("cluster: a job that fits only on two or more GPUs gets two, and bad decisions are internal errors") {
  const std::vector<Job> jobs = {job("big", 0, 40, 1, 4, 10, 0, 2)};
  const Result r = run("fifo", jobs, 4);
  CHECK(r.jobs[0].finish_s == doctest::Approx(2));  // 2 GPUs, 20/s
  CHECK_THROWS_AS(make_policy("sjf"), InputError);
  struct Greedy final : Policy {
    std::string name() const override { return "greedy"; }
    bool elastic() const override { return true; }
    Decision decide(double, const std::vector<JobView>& active, int gpus) override { return {std::vector<int>(active.size(), gpus + 1), 0}; }
  } greedy;
  CHECK_THROWS_AS(simulate(jobs, 4, greedy), InternalError);
  struct Idle final : Policy {
    std::string name() const override { return "idle"; }
    bool elastic() const override { return true; }
    Decision decide(double, const std::vector<JobView>& active, int) override { return {std::vector<int>(active.size(), 0)}; }
  } idle;
  CHECK_THROWS_AS(simulate(jobs, 4, idle), InternalError);
}

}  // namespace
}  // namespace tensoropt::cluster
