// Alpha-beta collective times on hand-computed numbers; n = 1 is free; monotone in bytes and n.
#include <doctest/doctest.h>

#include "planner/parallel/cluster.h"
#include "planner/parallel/collectives.h"

namespace tensoropt::planner {
namespace {

const LinkLevel nvlink{"test", 450e9, 3e-6};
constexpr double GiB = 1024.0 * 1024 * 1024;

TEST_CASE("collectives: all-reduce of 1 GiB over 8 GPUs at 450 GB/s and 3 us, by hand") {
  // ring: 2*7*3us + 2*7/8 * 2^30 / 450e9 = 42e-6 + 4.17568e-3
  double ring = 42e-6 + 1.75 * GiB / 450e9;
  CHECK(ring_all_reduce_time(GiB, 8, nvlink) == doctest::Approx(ring).epsilon(1e-12));
  CHECK(ring == doctest::Approx(4.217684e-3).epsilon(1e-6));
  // recursive doubling: 3 rounds of (3us + 2^30/450e9)
  CHECK(recursive_doubling_all_reduce_time(GiB, 8, nvlink) == doctest::Approx(3 * (3e-6 + GiB / 450e9)));
  CHECK(all_reduce_time(GiB, 8, nvlink) == doctest::Approx(ring));  // large: ring wins
  // 8 bytes: recursive doubling wins (3 latencies against 14).
  CHECK(all_reduce_time(8, 8, nvlink) == doctest::Approx(3 * (3e-6 + 8 / 450e9)));
  // 6 ranks: floor(log2 6) = 2 rounds plus 2 for the extra ranks.
  CHECK(recursive_doubling_all_reduce_time(8, 6, nvlink) == doctest::Approx(4 * (3e-6 + 8 / 450e9)));
}

TEST_CASE("collectives: all-gather, reduce-scatter and all-to-all, by hand") {
  double t = 7 * 3e-6 + 7.0 / 8 * GiB / 450e9;
  CHECK(collective_time(StepKind::AllGather, GiB, 8, nvlink) == doctest::Approx(t));
  CHECK(collective_time(StepKind::ReduceScatter, GiB, 8, nvlink) == doctest::Approx(t));
  CHECK(collective_time(StepKind::AllToAll, GiB, 8, nvlink) == doctest::Approx(t));
  CHECK(collective_time(StepKind::AllGather, 1e6, 2, LinkLevel{"ib", 50e9, 6e-6}) == doctest::Approx(6e-6 + 0.5 * 1e6 / 50e9));
}

TEST_CASE("collectives: one device and local steps are free") {
  for (auto k : {StepKind::AllGather, StepKind::ReduceScatter, StepKind::AllReduce, StepKind::AllToAll})
    CHECK(collective_time(k, GiB, 1, nvlink) == 0);
  for (auto k : {StepKind::LocalSlice, StepKind::LocalPad, StepKind::LocalPartial}) {
    CHECK(collective_time(k, GiB, 8, nvlink) == 0);
    CHECK(bus_bandwidth_factor(k, 8) == 0);
  }
}

TEST_CASE("collectives: ring all-reduce is monotone in n, recursive doubling is not off powers of two") {
  for (int n = 1; n < 40; ++n) CHECK(ring_all_reduce_time(1e3, n + 1, nvlink) >= ring_all_reduce_time(1e3, n, nvlink));
  CHECK(recursive_doubling_all_reduce_time(8, 9, nvlink) > recursive_doubling_all_reduce_time(8, 16, nvlink));
}

TEST_CASE("collectives: bus bandwidth factors as nccl-tests") {
  CHECK(bus_bandwidth_factor(StepKind::AllGather, 8) == doctest::Approx(7.0 / 8));
  CHECK(bus_bandwidth_factor(StepKind::ReduceScatter, 4) == doctest::Approx(0.75));
  CHECK(bus_bandwidth_factor(StepKind::AllToAll, 2) == doctest::Approx(0.5));
  CHECK(bus_bandwidth_factor(StepKind::AllReduce, 8) == doctest::Approx(1.75));
  CHECK(bus_bandwidth_factor(StepKind::AllReduce, 1) == 0);
  // Large messages: time -> factor * S / B.
  CHECK(ring_all_reduce_time(1e15, 8, nvlink) == doctest::Approx(bus_bandwidth_factor(StepKind::AllReduce, 8) * 1e15 / 450e9).epsilon(1e-6));
}

TEST_CASE("collectives: monotone in bytes and in n") {
  for (auto k : {StepKind::AllGather, StepKind::ReduceScatter, StepKind::AllReduce, StepKind::AllToAll}) {
    double prev = -1;
    for (double b = 1; b < 1e12; b *= 3.7) {
      double t = collective_time(k, b, 8, nvlink);
      CHECK(t >= prev);
      prev = t;
    }
    for (double b : {1.0, 1e4, 1e6, 1e9}) {
      prev = -1;
      // Recursive doubling pays 2 extra rounds off powers of two (9 ranks: 5 rounds, 16: 4), so
      // all-reduce is monotone over powers of two; the rest over every n.
      for (int n = 1; n <= 130; n = k == StepKind::AllReduce ? 2 * n : n + 1) {
        double t = collective_time(k, b, n, nvlink);
        CHECK(t >= prev);
        prev = t;
      }
    }
  }
}

TEST_CASE("collectives: a plan's time is the sum of its steps on each axis' link") {
  auto c = load_cluster("h100-sxm");
  auto mesh = DeviceMesh::for_cluster(c, 16);  // [2 inter, 8 intra]
  auto S0 = Placement::shard(0);
  auto R = Placement::replicate();
  auto plan = redistribute({1024, 1024}, 4, Layout({S0, S0}), Layout({R, R}), mesh);
  REQUIRE(plan.steps.size() == 2);
  // AllGather@1 over NVLink of the 2 MiB half, then AllGather@0 over InfiniBand of the 4 MiB whole.
  double t1 = 7 * 3e-6 + 7.0 / 8 * (2 << 20) / 450e9;
  double t0 = 1 * 6e-6 + 0.5 * (4 << 20) / 50e9;
  CHECK(step_time(plan.steps[0], mesh) == doctest::Approx(t1));
  CHECK(step_time(plan.steps[1], mesh) == doctest::Approx(t0));
  CHECK(plan_time(plan, mesh) == doctest::Approx(t0 + t1));
  CHECK(plan_time(redistribute({1024, 1024}, 4, Layout({S0, R}), Layout({S0, R}), mesh), mesh) == 0);
}

TEST_CASE("collectives: bucketed gradient steps share a bucket's latency by their bytes") {
  auto c = load_cluster("h100-sxm");
  auto mesh = DeviceMesh::for_cluster(c, 8);
  auto P = Placement::partial();
  auto R = Placement::replicate();
  auto step_of = [&](int64_t elements) {
    auto plan = redistribute({elements}, 4, Layout({P}), Layout({R}), mesh);
    REQUIRE(plan.steps.size() == 1);
    return plan.steps[0];
  };
  // A full bucket (25 MiB of fp32) pays exactly the unbucketed time.
  Step full = step_of(int64_t{25} << 18);
  CHECK(bucketed_step_time(full, mesh) == doctest::Approx(step_time(full, mesh)).epsilon(1e-12));
  // 1,000 pieces of 1/1000 of a bucket cost what one bucket costs (latency paid once, not 1,000 times).
  Step piece = step_of((int64_t{25} << 18) / 1000);
  double sum = 1000 * bucketed_step_time(piece, mesh);
  CHECK(sum == doctest::Approx(step_time(full, mesh)).epsilon(0.01));
  CHECK(1000 * step_time(piece, mesh) > 2 * step_time(full, mesh));  // unbucketed: latency 1,000 times
  // A ring all-reduce, bucketed, is a bucketed reduce-scatter plus a bucketed all-gather (ZeRO-2
  // moves what data parallelism moves).
  Step big = step_of(int64_t{1} << 22);
  auto rs = redistribute({int64_t{1} << 22}, 4, Layout({P}), Layout({Placement::shard(0)}), mesh);
  auto ag = redistribute({int64_t{1} << 22}, 4, Layout({Placement::shard(0)}), Layout({R}), mesh);
  CHECK(bucketed_step_time(big, mesh) ==
        doctest::Approx(bucketed_step_time(rs.steps[0], mesh) + bucketed_step_time(ag.steps[0], mesh)).epsilon(1e-12));
  // A gradient travels in a bucket: a small one pays its share of a ring all-reduce of the whole
  // bucket, even where recursive doubling would be faster for its own bytes alone.
  const LinkLevel& link = mesh.axis(0).link;
  const double bucket = 25.0 * (1 << 20);
  Step tiny = step_of(256);
  CHECK(step_time(tiny, mesh) == doctest::Approx(recursive_doubling_all_reduce_time(1024, 8, link)).epsilon(1e-12));
  CHECK(bucketed_step_time(tiny, mesh) == doctest::Approx(1024 / bucket * ring_all_reduce_time(bucket, 8, link)).epsilon(1e-12));
  // Never below the ring's bandwidth term, never above the unbucketed ring.
  const double bytes = static_cast<double>(piece.bytes);
  CHECK(bucketed_step_time(piece, mesh) >= ring_all_reduce_time(bytes, 8, link) - ring_all_reduce_time(0, 8, link));
  CHECK(bucketed_step_time(piece, mesh) <= ring_all_reduce_time(bytes, 8, link));
}

}  // namespace
}  // namespace tensoropt::planner
