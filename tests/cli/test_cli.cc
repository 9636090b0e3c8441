// End-to-end: the tensoropt binary as a user runs it — output, JSON keys, exit codes, and one
// clear line on stderr for every kind of bad input.
#include <cstdlib>
#include <cstring>
#include <doctest/doctest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <sys/wait.h>

#include "planner/file_hash.h"
#include "tests/onnx_builder.h"

namespace tensoropt {
namespace {

struct Result {
  int code = -1;
  std::string out, err;
};

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::filesystem::path temp_dir() {
  static std::filesystem::path dir = [] {
    auto d = std::filesystem::temp_directory_path() / ("tensoropt_cli_" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    return d;
  }();
  return dir;
}

Result run(const std::string& args) {
  auto out = temp_dir() / "stdout", err = temp_dir() / "stderr";
  std::string cmd = std::string(TENSOROPT_BINARY) + " " + args + " >" + out.string() + " 2>" + err.string() + " </dev/null";
  int status = std::system(cmd.c_str());
  Result r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(out.string());
  r.err = slurp(err.string());
  return r;
}

std::string write_temp(const std::string& name, const std::string& bytes) {
  auto p = temp_dir() / name;
  std::ofstream(p, std::ios::binary) << bytes;
  return p.string();
}

std::string model(const std::string& name) { return std::string(TENSOROPT_SOURCE_DIR) + "/models/" + name; }

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Bad input: exit code 2, nothing on stdout, one line on stderr naming `what`.
void check_refused(const Result& r, const std::string& what) {
  CAPTURE(r.err);
  CHECK(r.code == 2);
  CHECK(r.out.empty());
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK(has(r.err, what));
}

}  // namespace

TEST_CASE("cli: --version says whether CUDA is built in") {
  Result r = run("--version");
  CHECK(r.code == 0);
  CHECK(r.out.rfind("tensoropt 0.1.0\n", 0) == 0);
  CHECK(has(r.out, "CUDA support: "));
}

TEST_CASE("cli: inspect prints parameters, FLOPs, activations and op counts") {
  Result r = run("inspect " + model("resnet18.onnx") + " --batch 1");
  CHECK(r.code == 0);
  CHECK(has(r.out, "parameters   11,689,512 trainable"));
  CHECK(has(r.out, "input        image float32 [1,3,224,224]"));
  CHECK(has(r.out, "\nConv                       20"));
  Result v = run("inspect " + model("resnet18.onnx") + " --batch 1 --verbose");
  CHECK(v.code == 0);
  CHECK(has(v.out, "Conv  [1,3,224,224] [64,3,7,7] -> [1,64,112,112]"));
}

TEST_CASE("cli: inspect --json has the documented keys with the right types") {
  Result r = run("inspect " + model("gpt2_small.onnx") + " --batch 2 --json");
  REQUIRE(r.code == 0);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["format_version"] == 1);
  CHECK(j["trainable_parameters"].is_number_integer());
  CHECK(j["trainable_parameters"] == 124439808);
  CHECK(j["ops"].is_object());
  CHECK(j["ops"]["MatMul"].get<int>() > 0);
  CHECK(j["flops"]["forward"].get<double>() > 0);
  CHECK(j["flops"]["backward"].get<double>() > j["flops"]["forward"].get<double>());
  CHECK(j["activation_bytes"].is_number_integer());
  CHECK(j["model"]["batch"] == 2);
  CHECK(j["inputs"][0]["shape"] == nlohmann::json::array({2, 1024}));
  CHECK(!j.contains("node_list"));
  Result v = run("inspect " + model("resnet18.onnx") + " --batch 1 --json --verbose");
  CHECK(nlohmann::json::parse(v.out)["node_list"].size() > 40);
}

TEST_CASE("cli: bad input is one line on stderr and exit code 2") {
  check_refused(run("inspect /no/such/model.onnx --batch 1"), "/no/such/model.onnx: no such file");
  check_refused(run("inspect " + temp_dir().string() + " --batch 1"), "is a directory");
  std::string text = write_temp("text.onnx", "this is not a model\n");
  check_refused(run("inspect " + text + " --batch 1"), text + ": not an ONNX model");
  std::string whole = slurp(model("resnet18.onnx"));
  std::string cut = write_temp("cut.onnx", whole.substr(0, whole.size() / 3));
  check_refused(run("inspect " + cut + " --batch 1"), cut + ": not an ONNX model, or truncated");
  std::string odd = write_temp("odd.onnx", test::ModelBuilder().input("x", {-1, 4}).node("Frobnicate", {"x"}, {"y"}, "frob1").output("y").bytes());
  check_refused(run("inspect " + odd + " --batch 1"), "'frob1' (Frobnicate)");
  // A dynamic batch takes plan's default for one device (8), as plan takes 8 per GPU.
  CHECK(has(run("inspect " + model("resnet18.onnx")).out, "batch 8\n"));
  check_refused(run("inspect " + model("resnet18.onnx") + " --batch -3"), "--batch");
  check_refused(run("inspect " + model("resnet18.onnx") + " --batch abc"), "--batch");
  check_refused(run("inspect " + model("resnet18.onnx") + " --frobnicate"), "--frobnicate");
  check_refused(run("inspect"), "model");
}

TEST_CASE("cli: docs/ops.md holds the table `tensoropt ops --markdown` prints") {
  Result r = run("ops --markdown");
  REQUIRE(r.code == 0);
  std::string doc = slurp(std::string(TENSOROPT_SOURCE_DIR) + "/docs/ops.md");
  CHECK_MESSAGE(has(doc, r.out), "regenerate the table in docs/ops.md with `tensoropt ops --markdown`");
}

}  // namespace tensoropt

namespace tensoropt {

TEST_CASE("cli: plan prints the frontier, writes the plan file, and evaluate reproduces every point exactly") {
  std::string plan = (temp_dir() / "plan.json").string();
  std::string svg = (temp_dir() / "plan.svg").string();
  Result r = run("plan " + model("resnet18.onnx") + " --gpus 1,2 --batch 8 --mesh-axes 1 --baselines --json " + plan +
                 " --plot " + svg);
  CAPTURE(r.err);
  REQUIRE(r.code == 0);
  CHECK(has(r.out, "1 GPU: "));
  CHECK(has(r.out, "2 GPUs: "));
  CHECK(has(r.out, "chosen: point 0, the fastest"));
  CHECK(has(r.out, "data parallel"));
  CHECK_FALSE(has(r.out, "NOT dominated"));
  CHECK_FALSE(has(r.out, "note: the exact frontier"));  // small frontiers need no hint
  CHECK(has(slurp(svg), "<svg"));
  nlohmann::json j = nlohmann::json::parse(slurp(plan));
  CHECK(j["format"] == "tensoropt-plan");
  CHECK(j["version"] == 1);
  CHECK(j["model"]["batch"] == 8);
  REQUIRE(j["frontiers"].size() == 2);
  const auto& f = j["frontiers"][1];
  CHECK(f["gpus"] == 2);
  // Every mesh solved exactly: the count's line and the file say so.
  CHECK(has(r.out, "2 GPUs: " + std::to_string(f["points"].size()) + " points on the exact frontier ("));
  CHECK(f["within"] == 0.0);
  const auto& pts = f["points"];
  REQUIRE(pts.size() >= 2);
  for (size_t i = 1; i < pts.size(); ++i) {
    CHECK(pts[i]["time_s"].get<double>() > pts[i - 1]["time_s"].get<double>());
    CHECK(pts[i]["memory_bytes"].get<double>() < pts[i - 1]["memory_bytes"].get<double>());
  }
  for (size_t k : {size_t{0}, pts.size() / 2, pts.size() - 1}) {
    CAPTURE(k);
    Result e = run("evaluate " + model("resnet18.onnx") + " --strategy " + plan + " --gpus 2 --point " + std::to_string(k) + " --json");
    CAPTURE(e.err);
    REQUIRE(e.code == 0);
    nlohmann::json ej = nlohmann::json::parse(e.out);
    CHECK(ej["time_s"].get<double>() == pts[k]["time_s"].get<double>());
    CHECK(ej["memory_bytes"].get<double>() == pts[k]["memory_bytes"].get<double>());
    CHECK(ej["matches_plan"] == true);
    double sum = 0;
    for (auto it = ej["breakdown"].begin(); it != ej["breakdown"].end(); ++it)
      if (it.key().ends_with("_bytes")) sum += it.value().get<double>();
    CHECK(sum == doctest::Approx(ej["memory_bytes"].get<double>()).epsilon(1e-12));
  }
  // A hand-written strategy file: a baseline's strategy, as the plan records it by name.
  nlohmann::json strategy = {{"format", "tensoropt-strategy"}, {"version", 1},
                             {"mesh", f["baselines"][0]["strategy"]["mesh"]},
                             {"configs", f["baselines"][0]["strategy"]["configs"]}};
  std::string sfile = write_temp("dp.json", strategy.dump());
  Result e = run("evaluate " + model("resnet18.onnx") + " --strategy " + sfile + " --batch 8 --json");
  CAPTURE(e.err);
  REQUIRE(e.code == 0);
  CHECK(nlohmann::json::parse(e.out)["time_s"].get<double>() == f["baselines"][0]["time_s"].get<double>());
  strategy["configs"].erase(strategy["configs"].begin());
  std::string partial = write_temp("partial.json", strategy.dump());
  check_refused(run("evaluate " + model("resnet18.onnx") + " --strategy " + partial + " --batch 8"), "1 variable has no configuration");
  check_refused(run("evaluate " + model("resnet50.onnx") + " --strategy " + plan + " --gpus 2"), "not the model the plan was made for");
  // The plan names its model by XXH64; a plan file written before records FNV-1a, still checked.
  CHECK(j["model"]["xxh64"] == planner::file_hash(model("resnet18.onnx")));
  nlohmann::json older = j;
  older["model"].erase("xxh64");
  older["model"]["fnv1a64"] = planner::file_hash(model("resnet18.onnx"), "fnv1a64");
  CHECK(run("evaluate " + model("resnet18.onnx") + " --strategy " + write_temp("older.json", older.dump()) + " --gpus 2").code == 0);
  older["model"]["fnv1a64"] = "0123456789abcdef";
  check_refused(run("evaluate " + model("resnet18.onnx") + " --strategy " + write_temp("older_other.json", older.dump()) + " --gpus 2"),
                "not the model the plan was made for (" + model("resnet18.onnx") + ", fnv1a64 0123456789abcdef)");
  check_refused(run("evaluate " + model("resnet18.onnx") + " --strategy " + plan), "choose one with --gpus");
  // The plan's own settings may be repeated, not contradicted.
  CHECK(run("evaluate " + model("resnet18.onnx") + " --strategy " + plan + " --gpus 2 --batch 8 --dtype fp32").code == 0);
  check_refused(run("evaluate " + model("resnet18.onnx") + " --strategy " + plan + " --gpus 2 --batch 16"), "--batch 16 differs from the plan's batch 8");
  check_refused(run("evaluate " + model("resnet18.onnx") + " --strategy " + plan + " --gpus 2 --dtype bf16"), "--dtype bf16 differs");
  check_refused(run("evaluate " + model("resnet18.onnx") + " --strategy " + plan + " --gpus 2 --optimizer sgd"), "--optimizer sgd differs");
  check_refused(run("evaluate " + model("resnet18.onnx") + " --strategy " + plan + " --gpus 2 --cluster a100-80gb-sxm"), "--cluster a100-80gb-sxm differs");
  check_refused(run("evaluate " + model("resnet18.onnx") + " --strategy " + plan + " --gpus 2 --point 100000"), "out of range");
}

TEST_CASE("cli: plan --rows N shows N rows of the frontier, each numbered within it") {
  for (int rows : {1, 2, 3}) {
    CAPTURE(rows);
    Result r = run("plan " + model("resnet18.onnx") + " --gpus 2 --batch 8 --mesh-axes 1 --rows " + std::to_string(rows));
    REQUIRE_MESSAGE(r.code == 0, r.err);
    CHECK(has(r.out, "(" + std::to_string(rows) + " of "));
    CHECK_FALSE(has(r.out, "922337203685477"));
  }
  CHECK(has(run("plan " + model("resnet18.onnx") + " --gpus 2 --batch 8 --mesh-axes 1 --rows 1").out, "  *     0 "));
}

TEST_CASE("cli: plan speaks of one GPU and one point in the singular") {
  Result r = run("plan " + std::string(TENSOROPT_SOURCE_DIR) + "/tests/fixtures/user_exports/resnet_narrow_eval_inline_dyn.onnx --gpus 1,8 --batch 128");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK(has(r.out, "1 GPU: "));
  CHECK(has(r.out, "the only point within"));
  CHECK_FALSE(has(r.out, "1 GPUs"));
  CHECK_FALSE(has(r.out, "of the 1 points"));
}

TEST_CASE("cli: the cpu cluster's budget speaks of CPU workers, a GPU cluster's of the CUDA context") {
  const std::string plan = "plan " + model("resnet18.onnx") + " --gpus 2 --batch 8 --mesh-axes 1 --rows 1";
  const Result cpu = run(plan + " --cluster cpu"), gpu = run(plan);
  CHECK(has(cpu.out, "of memory per CPU worker less a 512.00 MiB reserve for the process, Gloo and allocator slack"));
  CHECK_FALSE(has(cpu.out, "CUDA"));
  CHECK(has(gpu.out, "of GPU memory less a 4.00 GiB reserve for the CUDA context"));
}

TEST_CASE("cli: plan refuses bad flags with one line and exit code 2") {
  std::string m = model("resnet18.onnx");
  check_refused(run("plan " + m + " --gpus 0 --batch 8"), "--gpus");
  check_refused(run("plan " + m + " --gpus 2 --batch 8 --dtype fp8"), "--dtype");
  check_refused(run("plan " + m + " --gpus 2 --batch 8 --optimizer lion"), "--optimizer");
  check_refused(run("plan " + m + " --gpus 2 --batch 8 --memory-budget lots"), "--memory-budget");
  check_refused(run("plan " + m + " --gpus 2 --batch 8 --cluster dgx-z"), "--cluster");
  check_refused(run("plan " + m + " --gpus 2 --batch 8 --epsilon -1"), "--epsilon");
  check_refused(run("plan " + m + " --gpus 2 --batch 8 --mesh-axes 5"), "--mesh-axes");
  check_refused(run("plan " + m + " --batch 8"), "--gpus");
  check_refused(run("plan " + m + " --gpus 2 --batch 8 --recompute some"), "--recompute");
  check_refused(run("plan " + m + " --gpus 2 --batch 8 --recompute all --no-recompute"), "excludes");
  check_refused(run("plan " + m + " --gpus 2 --batch 8 --no-recompute --recompute selective"), "excludes");
  // A run that fails leaves an existing plan file as it was and creates none.
  const std::string kept = (temp_dir() / "kept.json").string();
  { std::ofstream(kept) << "keep"; }
  check_refused(run("plan " + model("missing.onnx") + " --gpus 2 --batch 8 --json " + kept), "missing.onnx");
  CHECK(slurp(kept) == "keep");
  const std::string fresh = (temp_dir() / "fresh.json").string();
  check_refused(run("plan " + model("missing.onnx") + " --gpus 2 --batch 8 --json " + fresh), "missing.onnx");
  CHECK_FALSE(std::filesystem::exists(fresh));
  // Output files that cannot be written are refused before planning.
  check_refused(run("plan " + m + " --gpus 2 --batch 8 --json /nonexistent-dir/plan.json"), "--json");
  check_refused(run("plan " + m + " --gpus 2 --batch 8 --plot /nonexistent-dir/plan.svg"), "--plot");
  check_refused(run("plan " + m + " --gpus 2 --batch 8 --dump-space /nonexistent-dir/space.json"), "--dump-space");
}

TEST_CASE("cli: a big exact frontier comes with the hint to use --epsilon, which thins it") {
  const std::string m = model("vit_b_16.onnx");
  const std::string plan = (temp_dir() / "big-plan.json").string();
  Result exact = run("plan " + m + " --gpus 8 --batch 64 --recompute all --json " + plan);
  REQUIRE(exact.code == 0);
  CHECK(has(exact.out, "note: the exact frontier has "));
  // Its plan file is formatted in parallel batches of 256 points: in order across the batches.
  const nlohmann::json j = nlohmann::json::parse(slurp(plan));
  const auto& written = j.at("frontiers").at(0).at("points");
  REQUIRE(written.size() > 600);
  for (size_t k = 1; k < written.size(); ++k) CHECK(written[k - 1].at("time_s").get<double>() < written[k].at("time_s").get<double>());
  for (size_t k : {size_t{255}, size_t{256}, size_t{511}, size_t{512}, written.size() - 1}) {
    Result e = run("evaluate " + m + " --strategy " + plan + " --point " + std::to_string(k));
    CAPTURE(k);
    CHECK(e.code == 0);
    CHECK(has(e.out, "matches the plan's cost of this point exactly"));
  }
  Result thinned = run("plan " + m + " --gpus 8 --batch 64 --recompute all --epsilon 0.01");
  REQUIRE(thinned.code == 0);
  CHECK_FALSE(has(thinned.out, "note: the exact frontier"));
  const auto points = [](const std::string& out) { return std::stol(out.substr(out.find("8 GPUs: ") + 8)); };
  // FT thins its frontiers; the re-costed step peaks then prune both (docs/search.md "Exactness and the step's peak").
  CHECK(points(thinned.out) < points(exact.out));
}

TEST_CASE("cli: --planner-memory: a mesh whose exact frontier would pass it is thinned with epsilon 0.01, and says so") {
  // Every parameter may be split (the sizes below were measured so).
  const std::string m = model("resnet18.onnx") + " --recompute all --param-persistence 0";
  // Exact, the one-axis mesh needs under 2 MiB here, the two-axis ones 27 MiB together. With
  // 28 MiB the two solved side by side get 14 MiB each: over what their exact frontiers need, and
  // enough with epsilon 0.01.
  Result r = run("plan " + m + " --gpus 8 --batch 64 --planner-memory 28MiB");
  CAPTURE(r.err);
  REQUIRE(r.code == 0);
  CHECK(has(r.out, "mesh [4 intra, 2 intra]: approximate: the exact frontier passed the planner memory limit of "));
  // The count's line says the whole frontier is approximate, with the fallback's 1%.
  CHECK(has(r.out, "points within 1% of the exact frontier ("));
  CHECK_FALSE(has(r.out, "points on the exact frontier"));
  CHECK_FALSE(has(r.out, "mesh [8 intra]: approximate"));
  CHECK_FALSE(has(r.out, "note: the exact frontier"));
  Result all = run("plan " + m + " --gpus 8 --batch 64 --planner-memory 0");
  REQUIRE(all.code == 0);
  CHECK_FALSE(has(all.out, "approximate"));
  CHECK(has(all.out, "points on the exact frontier ("));
  Result none = run("plan " + m + " --gpus 8 --batch 64 --planner-memory 100KiB");
  CHECK(none.code == 2);
  // [8 intra] is solved beside [4 intra, 2 intra] on two or more threads, with half the limit.
  CHECK(has(none.err, "no mesh for 8 GPUs could be planned: [8 intra]: FT's working set passed the planner memory limit of "));
  CHECK(has(none.err, "(--planner-memory), even with epsilon 0.01"));
  check_refused(run("plan " + m + " --gpus 8 --planner-memory lots"), "--planner-memory");
}

TEST_CASE("cli: plan marks no point when nothing fits the memory budget") {
  Result r = run("plan " + model("resnet18.onnx") + " --gpus 1 --batch 8 --memory-budget 1MiB");
  REQUIRE(r.code == 0);
  CHECK(has(r.out, "no point fits the memory budget of 1.00 MiB"));
  CHECK(has(r.out, "use more GPUs, or plan with --recompute all"));
  CHECK_FALSE(has(r.out, "  *"));
  Result all = run("plan " + model("resnet18.onnx") + " --gpus 1 --batch 8 --memory-budget 1MiB --recompute all");
  REQUIRE(all.code == 0);
  CHECK_FALSE(has(all.out, "--recompute all"));  // nothing more to suggest
}

TEST_CASE("cli: GPT-2 small plans on 4,096 GPUs, its logits [32768,1024,50257] past 2^40 elements") {
  Result r = run("plan " + model("gpt2_small.onnx") + " --gpus 4096 --epsilon 0.01 --rows 1");
  CAPTURE(r.err);
  REQUIRE(r.code == 0);
  CHECK(has(r.out, "batch 32768 (global)"));
  // The header names every mesh searched (a dozen) and still ends with the planner's figures.
  size_t head = r.out.find("4096 GPUs: ");
  REQUIRE(head != std::string::npos);
  std::string line = r.out.substr(head, r.out.find('\n', head) - head);
  CHECK(has(line, "[512 inter, 8 intra]"));
  CHECK(has(line, "; planned in "));
  CHECK(line.back() == ')');
  CHECK(has(r.out, "  chosen: point "));
}

TEST_CASE("cli: plan --param-persistence is recorded, evaluate and old plan files follow it") {
  const std::string m = model("resnet18.onnx");
  const std::string kept = (temp_dir() / "persist.json").string();
  const std::string any = (temp_dir() / "persist0.json").string();
  Result r = run("plan " + m + " --gpus 4 --batch 16 --json " + kept);
  CAPTURE(r.err);
  REQUIRE(r.code == 0);
  REQUIRE(run("plan " + m + " --gpus 4 --batch 16 --param-persistence 0 --json " + any).code == 0);
  const nlohmann::json jk = nlohmann::json::parse(slurp(kept));
  const nlohmann::json ja = nlohmann::json::parse(slurp(any));
  CHECK(jk["search"]["param_persistence"] == 100000);
  CHECK(ja["search"]["param_persistence"] == 0);
  // The smallest point of the full space stores a BatchNormalization parameter (at most 512
  // elements) split, gathered at each use; with the default every such parameter is whole.
  const auto splits_small = [](const nlohmann::json& frontier, const nlohmann::json& point) {
    const auto& vars = frontier["spaces"][point["strategy"]["space"].get<size_t>()]["variables"];
    const auto& configs = point["strategy"]["configs"];
    for (size_t v = 0; v < vars.size(); ++v) {
      const std::string name = vars[v]["name"];
      if (name.rfind("param:", 0) != 0 || !has(name, "bn")) continue;
      if (has(vars[v]["configs"][configs[v].get<size_t>()].get<std::string>(), "S(")) return true;
    }
    return false;
  };
  CHECK(splits_small(ja["frontiers"][0], ja["frontiers"][0]["points"].back()));
  for (const auto& p : jk["frontiers"][0]["points"]) CHECK_FALSE(splits_small(jk["frontiers"][0], p));
  // evaluate rebuilds each plan's own space: both smallest points match their plans.
  for (const std::string& file : {kept, any}) {
    const size_t last = nlohmann::json::parse(slurp(file))["frontiers"][0]["points"].size() - 1;
    Result e = run("evaluate " + m + " --strategy " + file + " --point " + std::to_string(last) + " --json");
    CAPTURE(e.err);
    REQUIRE(e.code == 0);
    CHECK(nlohmann::json::parse(e.out)["matches_plan"] == true);
  }
  // A plan file from before the flag (no param_persistence) offered every split: read as 0.
  nlohmann::json old = ja;
  old["search"].erase("param_persistence");
  const size_t last = ja["frontiers"][0]["points"].size() - 1;
  Result o = run("evaluate " + m + " --strategy " + write_temp("older_persist.json", old.dump()) + " --point " + std::to_string(last) + " --json");
  CAPTURE(o.err);
  REQUIRE(o.code == 0);
  CHECK(nlohmann::json::parse(o.out)["matches_plan"] == true);
  // Read with the default instead, that point's split scale would have no configuration.
  nlohmann::json narrowed = ja;
  narrowed["search"]["param_persistence"] = 100000;
  check_refused(run("evaluate " + m + " --strategy " + write_temp("narrowed_persist.json", narrowed.dump()) + " --point " + std::to_string(last)),
                "has no configuration");
  check_refused(run("plan " + m + " --gpus 4 --param-persistence -1"), "--param-persistence");
  narrowed["search"]["param_persistence"] = -5;
  check_refused(run("evaluate " + m + " --strategy " + write_temp("bad_persist.json", narrowed.dump())), "param_persistence");
}

TEST_CASE("cli: plan --recompute all reaches less memory, records it, and evaluate reproduces its points") {
  const std::string m = model("resnet18.onnx");
  const std::string selective = (temp_dir() / "selective.json").string();
  const std::string all = (temp_dir() / "all.json").string();
  REQUIRE(run("plan " + m + " --gpus 2 --batch 8 --mesh-axes 1 --json " + selective).code == 0);
  Result r = run("plan " + m + " --gpus 2 --batch 8 --mesh-axes 1 --recompute all --json " + all);
  CAPTURE(r.err);
  REQUIRE(r.code == 0);
  const nlohmann::json js = nlohmann::json::parse(slurp(selective));
  const nlohmann::json ja = nlohmann::json::parse(slurp(all));
  CHECK(js["search"]["recompute_all"] == false);
  CHECK(ja["search"]["recompute_all"] == true);
  const auto& ps = js["frontiers"][0]["points"];
  const auto& pa = ja["frontiers"][0]["points"];
  CHECK(pa.back()["memory_bytes"].get<double>() < ps.back()["memory_bytes"].get<double>());
  CHECK(pa[0]["time_s"].get<double>() == ps[0]["time_s"].get<double>());  // the fastest recomputes nothing
  const size_t last = pa.size() - 1;
  Result e = run("evaluate " + m + " --strategy " + all + " --point " + std::to_string(last) + " --json");
  CAPTURE(e.err);
  REQUIRE(e.code == 0);
  const nlohmann::json ej = nlohmann::json::parse(e.out);
  CHECK(ej["matches_plan"] == true);
  CHECK(ej["memory_bytes"].get<double>() == pa[last]["memory_bytes"].get<double>());
  // That point recomputes ops selective recompute does not offer: read as selective, it is refused.
  nlohmann::json narrowed = ja;
  narrowed["search"]["recompute_all"] = false;
  check_refused(run("evaluate " + m + " --strategy " + write_temp("narrowed.json", narrowed.dump()) + " --point " + std::to_string(last)),
                "has no configuration");
  // A plan file from before --recompute all (no recompute_all) reads as selective: the same point
  // is refused, the fastest (no recompute) still matches.
  nlohmann::json old = ja;
  old["search"].erase("recompute_all");
  const std::string older = write_temp("older.json", old.dump());
  check_refused(run("evaluate " + m + " --strategy " + older + " --point " + std::to_string(last)), "has no configuration");
  Result o = run("evaluate " + m + " --strategy " + older + " --point 0 --json");
  CAPTURE(o.err);
  CHECK(o.code == 0);
  CHECK(nlohmann::json::parse(o.out)["matches_plan"] == true);
}

}  // namespace tensoropt

namespace tensoropt {
namespace {

std::string fixture(const std::string& name) { return std::string(TENSOROPT_SOURCE_DIR) + "/tests/fixtures/runtime/" + name; }

}  // namespace

TEST_CASE("cli: run trains, prints a line per step and measured against predicted, and writes the report") {
  auto report = (temp_dir() / "run.json").string();
  Result r = run("run " + fixture("mlp.onnx") + " --steps 3 --batch 4 --threads 1 --data " + fixture("mlp.x.npy") +
                 " --labels " + fixture("mlp.y.npy") + " --report " + report);
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK(has(r.out, "step 1 "));
  CHECK(has(r.out, "step 3 "));
  CHECK(has(r.out, "time/step"));
  CHECK(has(r.out, "peak memory"));
  auto j = nlohmann::json::parse(slurp(report));
  REQUIRE(j["steps"].size() == 3);
  CHECK(j["steps"][0]["step"] == 1);
  CHECK(j["steps"][0]["loss"].is_number());
  CHECK(j["steps"][0]["time_s"].is_number());
  CHECK(j["predicted"]["time_s"].get<double>() > 0);
  CHECK(j["predicted"]["memory_bytes"].get<double>() > 0);
  CHECK(j["measured"]["time_s"].get<double>() > 0);
  CHECK(j["measured"]["peak_memory_bytes"].get<double>() > 0);
  // The same data and seed give the same losses as PyTorch's reference (tests/launcher/runtime/test_training.cc
  // checks the numbers; here only that the CLI feeds the data in order).
  auto ref = nlohmann::json::parse(slurp(fixture("mlp.ref.json")));
  CHECK(j["steps"][0]["loss"].get<double>() == doctest::Approx(ref["losses"]["adam"][0].get<double>()).epsilon(1e-4));
}

// A NumPy .npy file (format 1.0) of `descr` ('<f4', '<i8', ...) and `shape`, its values zero.
std::string write_npy(const std::string& name, const std::string& descr, const std::vector<int64_t>& shape, int element_bytes) {
  std::string dims;
  int64_t n = 1;
  for (int64_t d : shape) {
    dims += std::to_string(d) + ",";
    n *= d;
  }
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" + dims + "), }";
  header.append(64 - (10 + header.size() + 1) % 64, ' ');
  header += '\n';
  const auto path = (temp_dir() / name).string();
  std::ofstream f(path, std::ios::binary);
  const auto len = static_cast<uint16_t>(header.size());
  f << "\x93NUMPY" << '\x01' << '\x00';
  f.put(static_cast<char>(len & 0xff)).put(static_cast<char>(len >> 8));
  f << header << std::string(static_cast<size_t>(n * element_bytes), '\0');
  return path;
}

// One run of the mlp fixture per value of an environment variable that picks how the CPU
// kernels run: `chosen` set, `bad` set, then unset (the default). Returns their results in order.
struct EnvRuns {
  Result chosen, bad, unset;
};
EnvRuns run_with_env(const char* variable, const char* chosen, const char* bad) {
  const std::string args = "run " + fixture("mlp.onnx") + " --steps 1 --batch 4 --threads 1";
  EnvRuns r;
  ::setenv(variable, chosen, 1);
  r.chosen = run(args);
  ::setenv(variable, bad, 1);
  r.bad = run(args);
  ::unsetenv(variable);
  r.unset = run(args);
  return r;
}

TEST_CASE("cli: TENSOROPT_GEMM picks the dense product's build, and a bad value is refused before anything runs") {
  const EnvRuns r = run_with_env("TENSOROPT_GEMM", "baseline", "no-such-build");
  REQUIRE_MESSAGE(r.chosen.code == 0, r.chosen.err);
  CHECK(has(r.chosen.out, "1 thread(s), baseline GEMM, subnormals flush;"));
  check_refused(r.bad, "TENSOROPT_GEMM=no-such-build");
  REQUIRE_MESSAGE(r.unset.code == 0, r.unset.err);
  CHECK((has(r.unset.out, "baseline GEMM,") || has(r.unset.out, "avx512 GEMM,")));
}

TEST_CASE("cli: TENSOROPT_DENORMALS keeps or flushes subnormals, and a bad value is refused before anything runs") {
  const EnvRuns r = run_with_env("TENSOROPT_DENORMALS", "keep", "sometimes");
  REQUIRE_MESSAGE(r.chosen.code == 0, r.chosen.err);
  CHECK(has(r.chosen.out, "subnormals keep;"));
  check_refused(r.bad, "TENSOROPT_DENORMALS=sometimes: expected flush or keep");
  REQUIRE_MESSAGE(r.unset.code == 0, r.unset.err);
  CHECK(has(r.unset.out, "subnormals flush;"));
}

TEST_CASE("cli: run takes its threads from --threads, else OMP_NUM_THREADS, and refuses a bad OMP_NUM_THREADS") {
  const std::string cmd = "run " + fixture("mlp.onnx") + " --steps 1 --batch 4";
  const auto with_omp = [&](const char* value, const std::string& args) {
    ::setenv("OMP_NUM_THREADS", value, 1);
    Result r = run(args);
    ::unsetenv("OMP_NUM_THREADS");
    return r;
  };
  CHECK(has(with_omp("3", cmd).out, "cpu, 3 thread(s)"));
  CHECK(has(with_omp("3", cmd + " --threads 2").out, "cpu, 2 thread(s)"));
  for (const char* bad : {"0", "two", "-4"}) {
    CAPTURE(bad);
    Result r = with_omp(bad, cmd);
    CHECK(r.code == 2);
    CHECK(has(r.err, std::string("OMP_NUM_THREADS=") + bad + ": expected a positive number"));
  }
}

// A copy of the int64 .npy fixture `src` with flat element `index` set to `value`.
std::string patched_npy(const std::string& src, const std::string& name, int64_t index, int64_t value) {
  std::string bytes = slurp(src);
  const size_t header = 10 + static_cast<size_t>(static_cast<unsigned char>(bytes[8]) | static_cast<unsigned char>(bytes[9]) << 8);
  std::memcpy(bytes.data() + header + 8 * static_cast<size_t>(index), &value, 8);
  return write_temp(name, bytes);
}

TEST_CASE("cli: run checks every label and token id a data file feeds before step 1, on one device and on workers") {
  const std::string labels = patched_npy(fixture("mlp.y.npy"), "bad_labels.npy", 5, 9000);
  for (const std::string workers : {"", " --gpus 2"}) {
    CAPTURE(workers);
    Result r = run("run " + fixture("mlp.onnx") + " --steps 1 --batch 4 --threads 1" + workers + " --data " + fixture("mlp.x.npy") +
                   " --labels " + labels);
    CHECK(r.code == 2);
    CHECK(has(r.err, "bad_labels.npy: label 9000 at [5] is not below the model's "));
    CHECK_FALSE(has(r.err, "internal"));
    CHECK_FALSE(has(r.out, "step 1"));
  }
  const std::string tokens = patched_npy(fixture("gpt.x.npy"), "bad_tokens.npy", 16 * 2 + 3, 99999);
  Result t = run("run " + fixture("gpt.onnx") + " --steps 1 --batch 4 --threads 1 --data " + tokens + " --labels " + fixture("gpt.y.npy"));
  CHECK(t.code == 2);
  CHECK(has(t.err, "bad_tokens.npy: index 99999 at [2,3] is outside ["));
  // Negative labels are ignored, as PyTorch's ignore_index: not an error.
  const std::string ignored = patched_npy(fixture("mlp.y.npy"), "ignored_labels.npy", 5, -100);
  CHECK(run("run " + fixture("mlp.onnx") + " --steps 1 --batch 4 --threads 1 --data " + fixture("mlp.x.npy") + " --labels " + ignored).code == 0);
}

TEST_CASE("cli: plan, evaluate and run name optimizers with one vocabulary: sgd, momentum, adam, adamw") {
  const std::string plan = "plan " + model("resnet18.onnx") + " --gpus 2 --batch 8 --mesh-axes 1 --rows 1 --optimizer ";
  for (const char* o : {"sgd", "momentum", "adam", "adamw"}) {
    CAPTURE(o);
    CHECK(run(plan + o).code == 0);
    CHECK(run("run " + fixture("mlp.onnx") + " --steps 1 --batch 4 --threads 1 --optimizer " + o).code == 0);
  }
  // AdamW is costed as Adam: the same state and passes.
  const auto rows = [](const std::string& out) {  // the table's rows and the chosen line, not the timings
    std::string kept;
    std::istringstream in(out);
    for (std::string line; std::getline(in, line);)
      if (line.rfind("  *", 0) == 0 || line.find("chosen:") != std::string::npos) kept += line + "\n";
    return kept;
  };
  CHECK(!rows(run(plan + "adam").out).empty());
  CHECK(rows(run(plan + "adamw").out) == rows(run(plan + "adam").out));
  for (const std::string& cmd : {plan + "lamb", "run " + fixture("mlp.onnx") + " --steps 1 --optimizer lamb"}) {
    Result r = run(cmd);
    CHECK(r.code == 2);
    CHECK(has(r.err, "unknown optimizer 'lamb' (accepted: sgd, momentum, adam, adamw)"));
  }
}

TEST_CASE("cli: run refuses bad input with one line and exit code 2, writing nothing") {
  auto save = (temp_dir() / "never.onnx").string();
  // The fixture's shapes (x [12,16] float32, y [12] int64) in types that do not fit.
  const std::string int_x = write_npy("int_x.npy", "<i8", {12, 16}, 8), float_y = write_npy("float_y.npy", "<f4", {12}, 4);
  const std::pair<std::string, std::string> cases[] = {
#ifdef TENSOROPT_HAVE_CUDA
      {"--device cuda", "--device cuda: "},  // no GPU visible, or the backend not built yet (test_devices.cc)
#else
      {"--device cuda", "--device cuda: this build has no CUDA support"},
#endif
      {"--device tpu", "--device tpu: no such backend"},
      {"--loss hinge", "--loss"},
      {"--optimizer lamb", "--optimizer"},
      {"--data " + fixture("mlp.y.npy") + " --labels " + fixture("mlp.y.npy"), "does not fit input"},
      {"--data " + fixture("mlp.x.npy") + " --labels " + fixture("mlp.x.npy"), "does not fit the labels"},
      {"--data " + fixture("mlp.x.npy"), "--data and --labels go together"},
      {"--data " + int_x + " --labels " + fixture("mlp.y.npy"), "dtype '<i8' does not fit input"},
      {"--data " + fixture("mlp.x.npy") + " --labels " + float_y, "dtype '<f4' does not fit the labels"},
      {"--resume " + fixture("gpt.onnx"), "not a checkpoint of"},
      {"--save /nonexistent/dir/m.onnx", "cannot be written"},
  };
  for (const auto& [flags, says] : cases) {
    CAPTURE(flags);
    Result r = run("run " + fixture("mlp.onnx") + " --steps 1 --batch 4 --threads 1 " + flags + " --report " + save);
    CHECK(r.code == 2);
    CHECK(has(r.err, says));
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') <= 1);
    CHECK(!std::filesystem::exists(save));
  }
  // A model with an op the catalogue does not know is refused at import, before anything runs.
  Result r = run("run " + std::string(TENSOROPT_SOURCE_DIR) + "/tests/fixtures/models/lstm_tiny.onnx --steps 1");
  CHECK(r.code == 2);
  CHECK(has(r.err, "LSTM"));
}

TEST_CASE("cli: run --plan runs a one-device plan point: its recompute choices, the same losses, less memory") {
  auto dir = temp_dir();
  auto plan = (dir / "gpt1.json").string(), plan2 = (dir / "gpt2.json").string();
  const std::string m = fixture("gpt.onnx"), data = " --data " + fixture("gpt.x.npy") + " --labels " + fixture("gpt.y.npy");
  Result p = run("plan " + m + " --gpus 1 --batch 4 --recompute all --json " + plan);
  REQUIRE_MESSAGE(p.code == 0, p.err);
  auto j = nlohmann::json::parse(slurp(plan));
  const auto& points = j["frontiers"][0]["points"];
  REQUIRE(points.size() > 1);
  const size_t smallest = points.size() - 1;  // sorted by time: the last point needs the least memory
  auto plain = (dir / "plain.json").string(), recomputed = (dir / "recomputed.json").string();
  Result a = run("run " + m + " --steps 2 --batch 4 --threads 1" + data + " --report " + plain);
  REQUIRE_MESSAGE(a.code == 0, a.err);
  Result b = run("run " + m + " --steps 2 --threads 1 --plan " + plan + " --point " + std::to_string(smallest) + data +
                 " --report " + recomputed);
  REQUIRE_MESSAGE(b.code == 0, b.err);
  CHECK(has(b.out, "recompute"));
  auto ra = nlohmann::json::parse(slurp(plain)), rb = nlohmann::json::parse(slurp(recomputed));
  CHECK(rb["model"]["batch"] == 4);  // the plan's batch
  CHECK(rb["strategy"]["recompute_ops"].get<int>() > 0);
  for (size_t k = 0; k < 2; ++k) CHECK(ra["steps"][k]["loss"].get<double>() == rb["steps"][k]["loss"].get<double>());
  CHECK(rb["measured"]["peak_memory_bytes"].get<double>() < ra["measured"]["peak_memory_bytes"].get<double>());
  CHECK(rb["predicted"]["memory_bytes"].get<double>() < ra["predicted"]["memory_bytes"].get<double>());

  Result p2 = run("plan " + m + " --gpus 2 --batch 4 --json " + plan2);
  REQUIRE_MESSAGE(p2.code == 0, p2.err);
  const std::pair<std::string, std::string> refused[] = {
      {"--point 0", "--point needs --plan"},
      {"--plan " + plan + " --batch 8", "--batch 8 differs from the plan's batch 4"},
      {"--plan " + plan + " --point 100000", "out of range"},
      {"--plan " + plan2, "no frontier for 1 GPU (it has"},
      {"--plan " + plan + " --dtype bf16", "--dtype bf16 differs from the plan's dtype fp32"},
      {"--dtype fp16", "--dtype"},
  };
  for (const auto& [flags, says] : refused) {
    CAPTURE(flags);
    Result r = run("run " + m + " --steps 1 --threads 1 " + flags);
    CHECK(r.code == 2);
    CHECK(has(r.err, says));
  }
  // Mixed precision: said in the header and the report.
  auto mixed = (dir / "mixed.json").string();
  Result c = run("run " + m + " --steps 1 --batch 4 --threads 1 --dtype bf16 --report " + mixed);
  REQUIRE_MESSAGE(c.code == 0, c.err);
  CHECK(has(c.out, "bf16 mixed precision"));
  CHECK(nlohmann::json::parse(slurp(mixed))["dtype"] == "bf16");
  Result other = run("run " + fixture("mlp.onnx") + " --steps 1 --threads 1 --plan " + plan);
  CHECK(other.code == 2);
  CHECK(has(other.err, "not the model the plan was made for"));
}

}  // namespace tensoropt
