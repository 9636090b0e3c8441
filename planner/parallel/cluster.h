// The machine a plan is for: one GPU type, how many GPUs share a node, and the links of each
// level of the hierarchy (inside a node, between nodes). Presets name real machines, each number
// cited in docs/cost-model.md; any other machine is described by a JSON file (same fields).
//
// Errors: an unknown preset name, an unreadable file, or a missing, mistyped or non-positive field
// throws InputError naming the file and the field. Values are immutable after loading;
// thread-safe to read.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tensoropt::planner {

class MeasuredCollectives;  // collectives.h

struct GpuSpec {
  std::string name;
  double memory_bytes = 0;              // device memory
  double memory_bandwidth = 0;          // bytes/s
  double peak_flops_fp32 = 0;           // dense FP32 (CUDA cores), FLOP/s
  double peak_flops_tf32 = 0;           // dense TF32 tensor cores
  double peak_flops_bf16 = 0;           // dense BF16 tensor cores
};

// One level of the interconnect: every GPU reaches its peers at this level at `bandwidth` bytes/s
// in each direction, after `latency` seconds per message.
struct LinkLevel {
  std::string name;
  double bandwidth = 0;  // bytes/s per GPU per direction
  double latency = 0;    // seconds
  // Collective times measured on this level (a profile, docs/profile.md); null: the alpha-beta
  // model above prices every collective. Not part of a cluster file.
  std::shared_ptr<const MeasuredCollectives> measured = nullptr;
};

struct Cluster {
  std::string name;
  GpuSpec gpu;
  int gpus_per_node = 1;
  LinkLevel intra_node;   // GPUs of one node
  LinkLevel inter_node;   // GPUs on different nodes
  double memory_reserve_bytes = 0;  // kept free per GPU (CUDA context, allocator slack, NCCL buffers)

  // Memory a plan may use per GPU: device memory less the reserve.
  double usable_memory() const { return gpu.memory_bytes - memory_reserve_bytes; }
  // Its devices are CPU worker processes (the `cpu` preset, or a cluster file whose device name
  // starts with "CPU"), not GPUs: messages speak of workers and Gloo, not of a CUDA context.
  bool cpu_workers() const { return gpu.name.rfind("CPU", 0) == 0; }
};

// Names of the presets, e.g. "h100-sxm".
std::vector<std::string> cluster_presets();
// A preset by name, or a JSON file when `name_or_path` ends in ".json".
Cluster load_cluster(const std::string& name_or_path);
// A cluster from the JSON text of a cluster file; `where` names it in errors.
Cluster parse_cluster(const std::string& json_text, const std::string& where);
// The JSON form of a cluster (what a file holds; what plan files record).
std::string cluster_json(const Cluster& c);

}  // namespace tensoropt::planner
