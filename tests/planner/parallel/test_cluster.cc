// Cluster presets and files; the --gpus grammar.
#include <doctest/doctest.h>

#include <filesystem>
#include <functional>
#include <fstream>

#include "graph/error.h"
#include "planner/parallel/cluster.h"
#include "planner/gpu_counts.h"

namespace tensoropt::planner {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  FAIL("expected an InputError");
  return "";
}

std::string temp_file(const std::string& name, const std::string& text) {
  auto p = std::filesystem::temp_directory_path() / name;
  std::ofstream(p) << text;
  return p.string();
}

}  // namespace

TEST_CASE("cluster: presets hold the datasheet figures") {
  Cluster h = load_cluster("h100-sxm");
  CHECK(h.gpus_per_node == 8);
  CHECK(h.gpu.peak_flops_bf16 == 989.4e12);
  CHECK(h.gpu.memory_bandwidth == 3.35e12);
  CHECK(h.intra_node.bandwidth == 450e9);
  CHECK(h.inter_node.bandwidth == 50e9);
  CHECK(h.usable_memory() == 76.0 * 1024 * 1024 * 1024);
  Cluster a = load_cluster("a100-80gb-sxm");
  CHECK(a.gpu.peak_flops_bf16 == 312e12);
  CHECK(a.intra_node.bandwidth == 300e9);
  CHECK(load_cluster("cpu").gpus_per_node == 2);
  CHECK(cluster_presets() == std::vector<std::string>{"h100-sxm", "a100-80gb-sxm", "cpu"});
}

TEST_CASE("cluster: a preset written to JSON reads back the same") {
  Cluster h = load_cluster("h100-sxm");
  Cluster back = load_cluster(temp_file("tensoropt_h100.json", cluster_json(h)));
  CHECK(cluster_json(back) == cluster_json(h));
}

TEST_CASE("cluster: bad names and files are refused naming the field") {
  CHECK(error_of([] { load_cluster("h200-magic"); }).find("unknown preset 'h200-magic'") != std::string::npos);
  CHECK(error_of([] { load_cluster("/no/such/cluster.json"); }).find("cannot be read") != std::string::npos);
  std::string bad = temp_file("tensoropt_bad.json", "{\"name\": \"x\"}");
  CHECK(error_of([&] { load_cluster(bad); }).find("'gpu'") != std::string::npos);
  std::string j = cluster_json(load_cluster("h100-sxm"));
  std::string neg = j;
  neg.replace(neg.find("\"gpus_per_node\": 8"), 18, "\"gpus_per_node\": -8");
  CHECK(error_of([&] { load_cluster(temp_file("tensoropt_neg.json", neg)); }).find("'gpus_per_node'") != std::string::npos);
  CHECK(error_of([&] { load_cluster(temp_file("tensoropt_junk.json", "{oops")); }).find("not valid JSON") != std::string::npos);
}

TEST_CASE("cluster: --gpus takes a count, a list or a range of powers of two") {
  CHECK(parse_gpu_counts("8") == std::vector<int>{8});
  CHECK(parse_gpu_counts("1,2,4,8") == std::vector<int>{1, 2, 4, 8});
  CHECK(parse_gpu_counts("8,1,8,3") == std::vector<int>{1, 3, 8});
  CHECK(parse_gpu_counts("1-64") == std::vector<int>{1, 2, 4, 8, 16, 32, 64});
  CHECK(parse_gpu_counts("3-20") == std::vector<int>{3, 4, 8, 16, 20});
  CHECK(parse_gpu_counts("12") == std::vector<int>{12});
  for (const char* bad : {"", "0", "-3", "abc", "8,", "4-2", "1-", "70000", "2.5"}) {
    CAPTURE(bad);
    CHECK(error_of([&] { parse_gpu_counts(bad); }).rfind("--gpus", 0) == 0);
  }
}

}  // namespace tensoropt::planner
