// The profiler's pieces (docs/profile.md): the database's format and its refusals, measured
// collective times between and beyond their points, where a profile applies, the cost model priced
// from one, what a model's strategy spaces ask to be timed, and the op timer on the CPU backend.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "graph/error.h"
#include "graph/import.h"
#include "launcher/runtime/cpu/backend.h"
#include "planner/parallel/collectives.h"
#include "planner/plan.h"
#include "profiler/cases.h"
#include "profiler/database.h"
#include "profiler/device_id.h"
#include "profiler/op_timer.h"
#include "profiler/profiled_compute.h"
#include "profiler/signature.h"
#include "tests/onnx_builder.h"

namespace tensoropt::profiler {
namespace {

std::string temp(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("tensoropt-profiler-" + std::to_string(getpid()) + "-" + name)).string();
}

void write_text(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

Graph mlp() {
  test::ModelBuilder b;
  b.input("x", {-1, 8}).input("w1", {8, 16}).input("w2", {16, 8});
  b.node("MatMul", {"x", "w1"}, {"h"}).node("Relu", {"h"}, {"r"}).node("MatMul", {"r", "w2"}, {"y"});
  b.output("y");
  return import_onnx_bytes(b.bytes(), "mlp.onnx", {.batch = 4});
}

ProfileDb sample_db() {
  ProfileDb db;
  db.device = DeviceId{"cpu", "Test CPU", 2, {{"gemm", "avx2"}}, "0.1.0"};
  db.ops.push_back(OpEntry{"Relu", "Relu||float32[4,16]|float32[4,16]|grad 1", 1, 2, 1e-6, 2e-6, 9});
  db.collectives.push_back(CollectiveEntry{"all_reduce", "intra", 2, 2, {{4, 1e-4}, {1024, 1e-4}, {1 << 20, 1.1e-3}}, 1e-4, 1e9});
  db.optimizer.push_back(OptimizerEntry{"adam", "fp32", 1, 2, {{1024, 2e-6}, {4096, 5e-6}}, 1e-6, 1e-9});
  db.overlap.push_back(OverlapEntry{2, 2, 1 << 20, 0.25});
  return db;
}

TEST_CASE("profile database: written and read back field for field, and sorted") {
  const std::string path = temp("db.json");
  ProfileDb db = sample_db();
  db.ops.insert(db.ops.begin(), OpEntry{"Relu", "Relu||float32[8,16]|float32[8,16]|grad 1", 1, 2, 3e-6, 4e-6, 9});
  write_profile(db, path);
  const ProfileDb back = read_profile(path);
  CHECK(back.device == db.device);
  REQUIRE(back.ops.size() == 2);
  CHECK(back.ops[0].signature == "Relu||float32[4,16]|float32[4,16]|grad 1");  // sorted by signature
  CHECK(back.ops[0].backward_s == 2e-6);
  REQUIRE(back.collectives.size() == 1);
  CHECK(back.collectives[0].points == db.collectives[0].points);
  CHECK(back.optimizer[0].per_byte_s == 1e-9);
  REQUIRE(back.overlap.size() == 1);
  CHECK(back.overlap[0].exposed == 0.25);
  std::filesystem::remove(path);
}

TEST_CASE("profile database: a corrupt file is refused in one line naming the file and the field") {
  const std::string path = temp("bad.json");
  auto refused = [&](const std::string& text, const std::string& what) {
    write_text(path, text);
    CAPTURE(text);
    try {
      (void)read_profile(path);
      FAIL("accepted");
    } catch (const InputError& e) {
      const std::string m = e.what();
      CHECK(m.find(path) == 0);
      CHECK(m.find(what) != std::string::npos);
      CHECK(m.find('\n') == std::string::npos);
    }
  };
  refused("{not json", "not a JSON file");
  refused(R"({"format": "other"})", "not a tensoropt profile");
  refused(R"({"format": "tensoropt-profile", "version": 2})", "profile version 2");
  write_profile(sample_db(), path);
  std::string good = [&] { std::ifstream in(path); return std::string(std::istreambuf_iterator<char>(in), {}); }();
  auto edited = [&](const std::string& from, const std::string& to) {
    std::string t = good;
    REQUIRE(t.find(from) != std::string::npos);
    return t.replace(t.find(from), from.size(), to);
  };
  refused(edited("\"forward_s\": 1e-06", "\"forward_s\": -1"), "ops[0]: forward_s");
  refused(edited("\"kind\": \"all_reduce\"", "\"kind\": \"broadcast\""), "collectives[0]: kind");
  refused(edited("\"units\": 2", "\"units\": \"two\""), "device: units");
  std::filesystem::remove(path);
}

TEST_CASE("measured collectives: interpolated between points, the first below, the last segment's line beyond, counted") {
  planner::MeasuredCollectives m;
  m.add(planner::StepKind::AllReduce, 2, {{1000, 1e-4}, {100, 5e-5}, {10000, 1e-3}});
  CHECK(*m.time(planner::StepKind::AllReduce, 2, 10) == 5e-5);
  CHECK(*m.time(planner::StepKind::AllReduce, 2, 550) == doctest::Approx(7.5e-5));
  CHECK(*m.time(planner::StepKind::AllReduce, 2, 19000) == doctest::Approx(1.9e-3));
  CHECK_FALSE(m.time(planner::StepKind::AllGather, 2, 100).has_value());
  CHECK_FALSE(m.time(planner::StepKind::AllReduce, 4, 100).has_value());
  const auto c = m.counts();
  CHECK(c.measured == 1);
  CHECK(c.modelled == 2);
  CHECK(m.asked().at({planner::StepKind::AllReduce, 2}) == 19000);
  // A gradient bucket's all-reduce is charged its exposed share where one was measured.
  planner::Cluster cpu = planner::load_cluster("cpu");
  auto ar = std::make_shared<planner::MeasuredCollectives>();
  ar->add(planner::StepKind::AllReduce, 2, {{1 << 20, 1e-3}, {1 << 26, 4e-2}});
  cpu.intra_node.measured = ar;
  const planner::DeviceMesh mesh = planner::DeviceMesh::with_shape(cpu, {2});
  planner::Step step;
  step.kind = planner::StepKind::AllReduce;
  step.mesh_axis = 0;
  step.group_size = 2;
  step.bytes = 1 << 20;
  const double whole = planner::bucketed_step_time(step, mesh, 1 << 20);
  CHECK(whole == doctest::Approx(1e-3));
  ar->set_exposed(2, 0.25);
  CHECK(planner::bucketed_step_time(step, mesh, 1 << 20) == doctest::Approx(0.25e-3));
  CHECK(planner::step_time(step, mesh) == doctest::Approx(1e-3));  // a blocking all-reduce is not overlapped
  // Times never fall as sizes grow: a dip in the measurements is flattened.
  planner::MeasuredCollectives dip;
  dip.add(planner::StepKind::AllGather, 2, {{100, 2e-4}, {1000, 1e-4}});
  CHECK(*dip.time(planner::StepKind::AllGather, 2, 1000) == 2e-4);
}

TEST_CASE("profile: applies to its own device only, and a CPU profile only to CPU workers") {
  const DeviceId cpu{"cpu", "Test CPU", 2, {{"gemm", "avx2"}}, "0.1.0"};
  const planner::Cluster workers = planner::load_cluster("cpu"), h100 = planner::load_cluster("h100-sxm");
  CHECK_FALSE(profile_mismatch(cpu, &cpu, workers).has_value());
  DeviceId other = cpu;
  other.facts["gemm"] = "avx512";
  CHECK(profile_mismatch(cpu, &other, workers).has_value());
  other = cpu;
  other.tensoropt = "0.2.0";
  CHECK(profile_mismatch(cpu, &other, workers).has_value());
  CHECK(profile_mismatch(cpu, nullptr, h100)->find("has GPUs") != std::string::npos);
  const DeviceId gpu{"cuda", "NVIDIA H100 80GB HBM3", 132, {}, "0.1.0"};
  CHECK_FALSE(profile_mismatch(gpu, nullptr, h100).has_value());
  CHECK(profile_mismatch(gpu, nullptr, planner::load_cluster("a100-80gb-sxm")).has_value());
  CHECK(profile_mismatch(gpu, nullptr, workers).has_value());
}

TEST_CASE("profiled costs: a measured op shard and optimizer cost their measurements, the rest the analytic model, counted") {
  const Graph g = mlp();
  const ProfileDb db = [&] {
    ProfileDb d = sample_db();
    // The Relu of the one-device space: what its signature says it is.
    d.ops[0].workers = 1;
    return d;
  }();
  const std::string path = temp("costs.json");
  write_profile(db, path);
  const planner::Cluster cluster = planner::load_cluster("cpu");
  const ProfileCosts pc = profile_costs(path, cluster, planner::Precision::Fp32, 1, 2, &db.device);
  REQUIRE(pc.profiled);
  CHECK(pc.warning.empty());
  planner::SpaceOptions so;
  const planner::StrategySpace space(g, planner::DeviceMesh::with_shape(pc.cluster, {1}), *pc.compute, so);
  const planner::Breakdown b = space.breakdown(std::vector<int>(space.variables().size(), 0));
  const planner::AnalyticCompute analytic(cluster, planner::Precision::Fp32);
  const planner::StrategySpace plain(g, planner::DeviceMesh::with_shape(cluster, {1}), analytic, so);
  const planner::Breakdown a = plain.breakdown(std::vector<int>(plain.variables().size(), 0));
  // Relu forward measured (1 us) in place of its analytic time (4 us launch + 512 bytes at 8 GB/s);
  // both MatMuls analytic.
  CHECK(a[planner::Term::ComputeForward] - b[planner::Term::ComputeForward] == doctest::Approx(4e-6 + 512 / 8e9 - 1e-6));
  CHECK(b[planner::Term::ComputeBackward] < a[planner::Term::ComputeBackward]);
  // Adam measured: 2 us for a parameter of 1 KiB or less (both are 512 bytes).
  CHECK(b[planner::Term::OptimizerStep] == doctest::Approx(2 * 2e-6));
  const TermCounts n = pc.counts();
  CHECK(n.measured == 2);  // the Relu shard, the optimizer
  CHECK(n.modelled == 2);  // two MatMul shards
  // Another device's: analytic, with the reason.
  DeviceId here = db.device;
  here.name = "Another CPU";
  const ProfileCosts other = profile_costs(path, cluster, planner::Precision::Fp32, 1, 2, &here);
  CHECK_FALSE(other.profiled);
  CHECK(other.warning.find("does not apply") != std::string::npos);
  // Timed at other thread counts: nothing applies.
  const ProfileCosts threads = profile_costs(path, cluster, planner::Precision::Fp32, 1, 1, &db.device);
  const planner::StrategySpace s1(g, planner::DeviceMesh::with_shape(threads.cluster, {1}), *threads.compute, so);
  CHECK(threads.counts().measured == 0);
  std::filesystem::remove(path);
}

TEST_CASE("profile cases: every op of the model at every shard its spaces use, distinct, and the collectives they issue") {
  const Graph g = mlp();
  planner::SpaceOptions so;
  const ProfileCases one = profile_cases(g, planner::load_cluster("cpu"), 1, so, 2);
  REQUIRE(one.ops.size() == 3);  // two MatMuls (different shapes) and the Relu, one shard each
  CHECK(one.collectives.empty());
  const ProfileCases two = profile_cases(g, planner::load_cluster("cpu"), 2, so, 2);
  CHECK(two.ops.size() > 3);
  for (size_t i = 0; i < two.ops.size(); ++i)
    for (size_t j = 0; j < i; ++j) CHECK(two.signatures[i] != two.signatures[j]);
  bool all_reduce = false;
  for (const CollectiveCase& c : two.collectives) all_reduce = all_reduce || (c.kind == planner::StepKind::AllReduce && c.group == 2 && c.largest_bytes > 0);
  CHECK(all_reduce);
  CHECK(two.signatures.front().rfind("MatMul|", 0) == 0);
}

TEST_CASE("op timer: the CPU backend's forward and backward of an op shard take time, and a bigger shard more") {
  test::ModelBuilder b;
  b.input("x", {-1, 256}).input("w", {256, 256});
  b.node("MatMul", {"x", "w"}, {"y"}).output("y");
  const Graph g = import_onnx_bytes(b.bytes(), "mm.onnx", {.batch = 256});
  planner::SpaceOptions so;
  const ProfileCases cases = profile_cases(g, planner::load_cluster("cpu"), 2, so, 2);
  runtime::cpu::CpuBackend cpu(1);
  double whole = 0, half = 1e9;
  for (const planner::ShardWork& w : cases.ops) {
    const OpTiming t = time_op_shard(w, planner::Precision::Fp32, cpu, 1, 5);
    CHECK(t.forward_s > 0);
    CHECK(t.backward_s > 0);
    if (w.local_inputs[0] == Shape{256, 256} && w.local_inputs[1] == Shape{256, 256}) whole = t.forward_s;
    if (w.local_inputs[0] == Shape{128, 256}) half = std::min(half, t.forward_s);
  }
  CHECK(whole > half);  // 2x the FLOPs: more time (the margin noise cannot erase)
  CHECK(device_id(cpu).backend == "cpu");
  CHECK(device_id(cpu).units >= 1);
}

}  // namespace
}  // namespace tensoropt::profiler
