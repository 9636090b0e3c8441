// Hand-written strategies as rules over node and parameter names (planner/strategy_rules.h), end
// to end: `evaluate` costs a rules file exactly as the coded strategy it stands for (all-batch
// rules as the data-parallel baseline of a plan), refuses a rule that matches nothing, a split an
// op cannot take and an op no rule covers with one line and exit code 2; `plan --dump-space` says
// what each variable and configuration is; `run --gpus 2 --plan` trains a rules file as it trains
// the same strategy given by names. On the GPT fixture (2 layers, 4 heads) at batch 4 on 2 GPUs.
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/children.h"
#include "tests/cli/binary.h"

namespace tensoropt {
namespace {

using nlohmann::json;

const std::string kFix = std::string(TENSOROPT_SOURCE_DIR) + "/tests/fixtures/runtime/";
const std::string kGpt = kFix + "gpt.onnx";

using test::slurp;

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::string write(const std::string& path, const json& j) {
  std::ofstream(path) << j.dump(1);
  return path;
}

json strategy(const json& body) {
  json j = {{"format", "tensoropt-strategy"}, {"version", 1}};
  j.update(body);
  return j;
}

// The data-parallel baseline of a 2-GPU plan of the fixture: its recorded cost and names.
json dp_baseline(const std::string& dir) {
  const std::string plan = dir + "/plan.json";
  const test::CliResult p = test::run_cli("plan " + kGpt + " --gpus 2 --batch 4 --mesh-axes 1 --baselines --json " + plan);
  REQUIRE_MESSAGE(p.code == 0, p.err);
  const json doc = json::parse(slurp(plan));  // named: the loop reads into it
  for (const json& b : doc["frontiers"][0]["baselines"])
    if (b["name"] == "data parallel") return b;
  FAIL("no data-parallel baseline");
  return {};
}

json evaluate(const std::string& file) {
  const test::CliResult r = test::run_cli("evaluate " + kGpt + " --strategy " + file + " --json");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  return json::parse(r.out);
}

// The rules of the heads test: attention's two MatMuls split their heads (output axis 1), the
// layer norms' parameters are kept whole under ZeRO-2, every other op splits the batch.
const json kHeadsRules = {
    {"gpus", 2},
    {"batch", 4},
    {"rules", {{{"match", "/blocks.?/MatMul*"}, {"op", "MatMul"}, {"split", {{"axis", 1}}}},
               {{"kind", "param"}, {"match", "blocks.*.ln*"}, {"split", "replicate"}, {"zero", 2}}}},
    {"default", "batch"}};

// The same strategy by name: the data-parallel baseline's names, with the heads dim (b1 of the
// catalogue's MatMul [b0, b1, m, k] x [b0, b1, k, n]) split for those four ops and ZeRO-2 on the
// layer norms' parameters.
json heads_coded(const json& dp) {
  json configs = dp["strategy"]["configs"];
  for (const char* op : {"op:/blocks.0/MatMul", "op:/blocks.0/MatMul_1", "op:/blocks.1/MatMul", "op:/blocks.1/MatMul_1"}) {
    REQUIRE(configs.contains(op));
    configs[op] = "b1:S0";
  }
  int ln = 0;
  for (auto it = configs.begin(); it != configs.end(); ++it)
    if (it.key().rfind("param:blocks.", 0) == 0 && has(it.key(), ".ln")) {
      it.value() = "[R] zero-2";
      ++ln;
    }
  CHECK(ln == 8);
  return strategy({{"mesh", {2}}, {"configs", configs}});
}

}  // namespace

TEST_CASE("strategy rules: all-batch rules cost what the data-parallel baseline costs, by name and in the plan") {
  test::TempDir dir;
  const json dp = dp_baseline(dir.path);
  const json by_name = evaluate(write(dir.path + "/dp.json", strategy({{"mesh", {2}}, {"configs", dp["strategy"]["configs"]}})) + " --batch 4");
  const json by_rules = evaluate(write(dir.path + "/rules.json", strategy({{"gpus", 2}, {"batch", 4}, {"default", "batch"}})));
  CHECK(by_rules["time_s"] == by_name["time_s"]);
  CHECK(by_rules["memory_bytes"] == by_name["memory_bytes"]);
  CHECK(by_rules["time_s"] == dp["time_s"]);
  CHECK(by_rules["memory_bytes"] == dp["memory_bytes"]);
  CHECK(by_rules["summary"] == "DP2");
}

TEST_CASE("strategy rules: rules over node and parameter names cost exactly the coded strategy they stand for") {
  test::TempDir dir;
  const json dp = dp_baseline(dir.path);
  const json by_rules = evaluate(write(dir.path + "/heads.json", strategy(kHeadsRules)));
  const json by_name = evaluate(write(dir.path + "/coded.json", heads_coded(dp)) + " --batch 4");
  CHECK(by_rules["time_s"] == by_name["time_s"]);
  CHECK(by_rules["memory_bytes"] == by_name["memory_bytes"]);
  CHECK(by_rules["breakdown"] == by_name["breakdown"]);
  // The rules did something: this is not the data-parallel strategy.
  CHECK(by_rules["time_s"] != dp["time_s"]);
  CHECK(by_rules["breakdown"]["optimizer_state_bytes"].get<double>() < dp["breakdown"]["optimizer_state_bytes"].get<double>());
}

TEST_CASE("strategy rules: a rule that matches nothing, a split an op cannot take, an op no rule covers: one line, exit 2") {
  test::TempDir dir;
  const auto refused = [&](const json& body, const std::vector<std::string>& parts, const std::string& extra = "") {
    const std::string file = write(dir.path + "/bad.json", strategy(body));
    const test::CliResult r = test::run_cli("evaluate " + kGpt + " --strategy " + file + extra);
    CAPTURE(r.err);
    CHECK(r.code == 2);
    CHECK(r.out.empty());
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK(has(r.err, "tensoropt: error: " + file));
    for (const std::string& p : parts) CHECK(has(r.err, p));
  };
  // A typo in a glob: nothing matches.
  refused({{"gpus", 2}, {"batch", 4}, {"rules", {{{"match", "/blocks.*/atn/*"}, {"split", "replicate"}}}}, {"default", "batch"}},
          {"rules[0]", "/blocks.*/atn/*", "matches no variable"});
  // A rule after one that takes all it matches.
  refused({{"gpus", 2},
           {"batch", 4},
           {"rules", {{{"op", "MatMul"}, {"split", "batch"}}, {{"match", "/blocks.0/MatMul"}, {"split", {{"axis", 1}}}}}},
           {"default", "batch"}},
          {"rules[1]", "took an earlier rule (rules[0])"});
  // Layer normalisation normalises its last axis: it cannot split it.
  refused({{"gpus", 2}, {"batch", 4}, {"rules", {{{"match", "/blocks.0/ln1/*"}, {"split", {{"axis", -1}}}}}}, {"default", "batch"}},
          {"rules[0]", "node '/blocks.0/ln1/LayerNormalization' (LayerNormalization)", "has no configuration where mesh axis 0 splits",
           "its configurations: replicate"});
  refused({{"gpus", 2}, {"batch", 4}, {"rules", {{{"match", "/blocks.0/qkv/MatMul"}, {"split", {{"dim", "heads"}}}}}}, {"default", "batch"}},
          {"rules[0]", "node '/blocks.0/qkv/MatMul' (MatMul)", "has no dim 'heads'"});
  // No default: every op must be covered.
  refused({{"gpus", 2}, {"batch", 4}, {"rules", {{{"op", "MatMul"}, {"split", "batch"}}}}},
          {"ops match no rule and there is no \"default\"", "the first node '/wte/Gather' (Gather)"});
  // Malformed rules.
  refused({{"gpus", 2}, {"batch", 4}, {"rules", {{{"op", "MatMul"}, {"spilt", "batch"}}}}, {"default", "batch"}},
          {"rules[0]", "unknown key 'spilt'"});
  refused({{"gpus", 2}, {"batch", 4}, {"rules", json::array()}, {"configs", json::object()}}, {"either 'configs'", "or 'rules'"});
  // The coded form still names the missing variable.
  const test::CliResult b = test::run_cli("evaluate " + kGpt + " --batch 8 --strategy " + write(dir.path + "/b.json", strategy({{"gpus", 2}, {"batch", 4}, {"default", "batch"}})));
  CHECK(b.code == 2);
  CHECK(has(b.err, "--batch 8 differs from the strategy's batch 4"));
  refused({{"mesh", {2}}, {"configs", {{"op:/wte/Gather", "replicate"}}}}, {"have no configuration"}, " --batch 4");
}

TEST_CASE("strategy rules: plan --dump-space gives each variable's node, op, shapes and batch axis, and each configuration's meaning") {
  test::TempDir dir;
  const std::string file = dir.path + "/space.json";
  const test::CliResult r = test::run_cli("plan " + kGpt + " --gpus 2 --batch 4 --mesh-axes 1 --param-persistence 0 --dump-space " + file);
  REQUIRE_MESSAGE(r.code == 0, r.err);
  const json space = json::parse(slurp(file))[0]["spaces"][0];
  CHECK(space["shape"] == json({2}));
  bool seen_op = false, seen_param = false, seen_input = false;
  for (const json& v : space["variables"]) {
    REQUIRE(v["meaning"].size() == v["configs"].size());
    if (v["name"] == "op:/blocks.0/MatMul") {
      seen_op = true;
      CHECK(v["kind"] == "op");
      CHECK(v["node"] == "/blocks.0/MatMul");
      CHECK(v["op"] == "MatMul");
      CHECK(v["outputs"][0]["shape"] == json({4, 4, 16, 16}));
      CHECK(v["outputs"][0]["batch_axis"] == 0);
      const auto& names = v["configs"];
      const size_t k = static_cast<size_t>(std::find(names.begin(), names.end(), "b1:S0") - names.begin());
      REQUIRE(k < names.size());
      CHECK(v["meaning"][k] == "mesh axis 0 (2): splits b1 (parallel, 4) = output axis 1");
      CHECK(v["meaning"][0] == "mesh axis 0 (2): replicates");
    }
    if (v["name"] == "param:blocks.0.fc.weight") {
      seen_param = true;
      CHECK(v["kind"] == "param");
      CHECK(v["shape"] == json({128, 32}));
      CHECK(v["batch_axis"] == -1);
      const auto& names = v["configs"];
      const size_t k = static_cast<size_t>(std::find(names.begin(), names.end(), "[S(0)]") - names.begin());
      REQUIRE(k < names.size());
      CHECK(v["meaning"][k] == "mesh axis 0 (2): splits axis 0");
    }
    if (v["name"] == "input:input") {
      seen_input = true;
      CHECK(v["shape"] == json({4, 16}));
      CHECK(v["batch_axis"] == 0);
    }
  }
  CHECK(seen_op);
  CHECK(seen_param);
  CHECK(seen_input);
}

TEST_CASE("strategy rules: run --gpus 2 --plan trains a rules file as it trains the same strategy by name") {
  test::TempDir dir;
  const json dp = dp_baseline(dir.path);
  const std::string rules = write(dir.path + "/heads.json", strategy(kHeadsRules));
  const std::string coded = write(dir.path + "/coded.json", heads_coded(dp));
  const std::string data = " --data " + kFix + "gpt.x.npy --labels " + kFix + "gpt.y.npy";
  json reports[2];
  for (int i = 0; i < 2; ++i) {
    const std::string report = dir.path + "/r" + std::to_string(i) + ".json";
    const test::CliResult r = test::run_cli("run " + kGpt + " --gpus 2 --batch 4 --steps 2 --threads 1 --plan " + (i ? coded : rules) + data +
                            " --report " + report);
    REQUIRE_MESSAGE(r.code == 0, r.err);
    CHECK(has(r.out, "workers  2"));
    reports[i] = json::parse(slurp(report));
  }
  REQUIRE(reports[0]["steps"].size() == 2);
  for (size_t k = 0; k < 2; ++k) CHECK(reports[0]["steps"][k]["loss"] == reports[1]["steps"][k]["loss"]);
  CHECK(reports[0]["predicted"]["time_s"] == reports[1]["predicted"]["time_s"]);
  CHECK(reports[0]["predicted"]["memory_bytes"] == reports[1]["predicted"]["memory_bytes"]);
  // Refused before any worker starts: a rules file for another GPU count, and a rule that fits no op.
  test::CliResult r = test::run_cli("run " + kGpt + " --gpus 4 --steps 1 --plan " + rules);
  CHECK(r.code == 2);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK(has(r.err, "the strategy is for 2 GPUs"));
  json bad = kHeadsRules;
  bad["rules"][0]["split"] = {{"dim", "heads"}};
  r = test::run_cli("run " + kGpt + " --gpus 2 --steps 1 --plan " + write(dir.path + "/bad.json", strategy(bad)));
  CHECK(r.code == 2);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK(has(r.err, "has no dim 'heads'"));
  CHECK(!has(r.out, "workers"));
}

}  // namespace tensoropt
