#include "planner/parallel/cluster.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "graph/error.h"

namespace tensoropt::planner {
namespace {

constexpr double GiB = 1024.0 * 1024 * 1024;

// Every figure below is cited, with its source, in docs/cost-model.md ("Cluster presets").
std::vector<Cluster> presets() {
  Cluster h100;
  h100.name = "h100-sxm";
  h100.gpu = {"NVIDIA H100 SXM5 80GB", 80 * GiB, 3.35e12, 67e12, 494.7e12, 989.4e12};
  h100.gpus_per_node = 8;
  h100.intra_node = {"NVLink 4 via NVSwitch (900 GB/s bidirectional per GPU)", 450e9, 3e-6};
  h100.inter_node = {"InfiniBand NDR, one 400 Gb/s ConnectX-7 port per GPU", 50e9, 6e-6};
  h100.memory_reserve_bytes = 4 * GiB;

  Cluster a100;
  a100.name = "a100-80gb-sxm";
  a100.gpu = {"NVIDIA A100 SXM4 80GB", 80 * GiB, 2.039e12, 19.5e12, 156e12, 312e12};
  a100.gpus_per_node = 8;
  a100.intra_node = {"NVLink 3 via NVSwitch (600 GB/s bidirectional per GPU)", 300e9, 3e-6};
  a100.inter_node = {"InfiniBand HDR, one 200 Gb/s ConnectX-6 port per GPU", 25e9, 6e-6};
  a100.memory_reserve_bytes = 4 * GiB;

  // This development machine and CI: 2 cores, 24 GiB, the CPU backend over Gloo on loopback.
  Cluster cpu;
  cpu.name = "cpu";
  cpu.gpu = {"CPU worker (one core, Eigen)", 8 * GiB, 10e9, 50e9, 50e9, 50e9};
  cpu.gpus_per_node = 2;
  cpu.intra_node = {"Gloo over loopback TCP", 2e9, 30e-6};
  cpu.inter_node = {"Gloo over TCP, 10 Gb/s Ethernet", 1.25e9, 50e-6};
  cpu.memory_reserve_bytes = 0.5 * GiB;
  return {h100, a100, cpu};
}

double positive(const nlohmann::json& j, const std::string& key, const std::string& where) {
  if (!j.contains(key)) throw InputError(where + ": missing field '" + key + "'");
  const auto& v = j.at(key);
  if (!v.is_number()) throw InputError(where + ": field '" + key + "' must be a number");
  double d = v.get<double>();
  if (!(d > 0) || d > 1e30) throw InputError(where + ": field '" + key + "' must be positive");
  return d;
}

std::string text(const nlohmann::json& j, const std::string& key, const std::string& where) {
  if (!j.contains(key) || !j.at(key).is_string()) throw InputError(where + ": field '" + key + "' must be a string");
  return j.at(key).get<std::string>();
}

const nlohmann::json& object(const nlohmann::json& j, const std::string& key, const std::string& where) {
  if (!j.contains(key) || !j.at(key).is_object()) throw InputError(where + ": field '" + key + "' must be an object");
  return j.at(key);
}

LinkLevel link_from(const nlohmann::json& j, const std::string& where) {
  return {text(j, "name", where), positive(j, "bandwidth_bytes_per_s", where), positive(j, "latency_s", where)};
}

Cluster from_json(const nlohmann::json& j, const std::string& path) {
  if (!j.is_object()) throw InputError(path + ": a cluster file holds one JSON object");
  Cluster c;
  c.name = text(j, "name", path);
  const auto& g = object(j, "gpu", path);
  std::string gw = path + ": gpu";
  c.gpu = {text(g, "name", gw), positive(g, "memory_bytes", gw), positive(g, "memory_bandwidth_bytes_per_s", gw),
           positive(g, "peak_flops_fp32", gw), positive(g, "peak_flops_tf32", gw), positive(g, "peak_flops_bf16", gw)};
  double per_node = positive(j, "gpus_per_node", path);
  if (per_node != static_cast<int>(per_node) || per_node > 1024) throw InputError(path + ": field 'gpus_per_node' must be a whole number up to 1024");
  c.gpus_per_node = static_cast<int>(per_node);
  c.intra_node = link_from(object(j, "intra_node", path), path + ": intra_node");
  c.inter_node = link_from(object(j, "inter_node", path), path + ": inter_node");
  c.memory_reserve_bytes = j.contains("memory_reserve_bytes") ? j.at("memory_reserve_bytes").get<double>() : 0;
  if (c.memory_reserve_bytes < 0 || c.memory_reserve_bytes >= c.gpu.memory_bytes) {
    throw InputError(path + ": field 'memory_reserve_bytes' must be at least 0 and below gpu.memory_bytes");
  }
  return c;
}

}  // namespace

std::vector<std::string> cluster_presets() {
  std::vector<std::string> names;
  for (const Cluster& c : presets()) names.push_back(c.name);
  return names;
}

Cluster load_cluster(const std::string& name_or_path) {
  bool file = name_or_path.size() > 5 && name_or_path.substr(name_or_path.size() - 5) == ".json";
  if (!file) {
    for (Cluster& c : presets()) {
      if (c.name == name_or_path) return c;
    }
    std::string names;
    for (const auto& n : cluster_presets()) names += (names.empty() ? "" : ", ") + n;
    throw InputError("--cluster: unknown preset '" + name_or_path + "' (presets: " + names + "; or give a .json file)");
  }
  std::ifstream f(name_or_path);
  if (!f) throw InputError(name_or_path + ": cannot be read");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(f);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(name_or_path + ": not valid JSON (" + std::string(e.what()) + ")");
  }
  try {
    return from_json(j, name_or_path);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(name_or_path + ": " + e.what());
  }
}

Cluster parse_cluster(const std::string& json_text, const std::string& where) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json_text);
    return from_json(j, where);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(where + ": " + e.what());
  }
}

std::string cluster_json(const Cluster& c) {
  nlohmann::ordered_json j;
  j["name"] = c.name;
  j["gpu"] = {{"name", c.gpu.name},
              {"memory_bytes", c.gpu.memory_bytes},
              {"memory_bandwidth_bytes_per_s", c.gpu.memory_bandwidth},
              {"peak_flops_fp32", c.gpu.peak_flops_fp32},
              {"peak_flops_tf32", c.gpu.peak_flops_tf32},
              {"peak_flops_bf16", c.gpu.peak_flops_bf16}};
  j["gpus_per_node"] = c.gpus_per_node;
  j["intra_node"] = {{"name", c.intra_node.name}, {"bandwidth_bytes_per_s", c.intra_node.bandwidth}, {"latency_s", c.intra_node.latency}};
  j["inter_node"] = {{"name", c.inter_node.name}, {"bandwidth_bytes_per_s", c.inter_node.bandwidth}, {"latency_s", c.inter_node.latency}};
  j["memory_reserve_bytes"] = c.memory_reserve_bytes;
  return j.dump(2);
}

}  // namespace tensoropt::planner
