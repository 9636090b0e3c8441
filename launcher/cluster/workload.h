// The workloads `tensoropt simulate` and `tensoropt schedule` read, as the field publishes them, and
// the mapping that says which ONNX model stands for each of their applications.
//
// A workload is Pollux's CSV (petuum/adaptdl simulator/workloads*/workload-N.csv):
//   name,time,application,num_replicas,batch_size
//   cifar10-0,107,cifar10,6,2048
// time: the submit time in seconds; num_replicas: the GPUs the job asked for (what non-elastic
// policies give it); batch_size: the job's global batch (kept for the record: a job's speed comes
// from its application's model and batch in the mapping).
//
// Or a Philly trace (the same repository's simulator/traces/philly.csv, Microsoft's Philly cluster,
// 2017), a job per row, derived as Pollux's workload generator derives its workloads from it:
//   timestamp,duration,num_gpus,gpu_time,cluster
//   2017-10-09 06:13:03,2951.0,1,2951.0,6214e9
// rows of under a minute or of 1,000 GPU-hours and more are left out; the submit time is the
// timestamp less the earliest kept; the GPUs asked for are num_gpus; the application comes from
// the GPU time (gpu_time, seconds): under an hour cifar10 (even rows) or ncf (odd rows), under 10
// hours deepspeech2 or bert (likewise), under 100 yolov3, else imagenet (Pollux draws between the
// pairs at random). Its name is the application and the row; it has no batch (0).
//
// A mapping is JSON: {"applications": {"cifar10": {"model": "resnet18.onnx", "batch": 128,
// "samples": 5000000, "note": "..."}, ...}}: per application the ONNX model (relative paths from
// the mapping file's directory), the global batch it is planned at, and the work of one job in
// samples (its dataset times the epochs Pollux trains it for). models/pollux.json is the default,
// for Pollux's six applications.
//
// Errors: InputError, one line naming the file and the row or application: a missing or
// malformed file, a row with the wrong number of fields, a bad number, an unknown application.
// Pure; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tensoropt::cluster {

struct WorkloadJob {
  std::string name;
  double submit_s = 0;
  std::string application;
  int replicas = 1;
  int64_t batch = 0;  // 0 where the workload has none (a Philly trace)
  int row = 0;  // the file's line number (the header is line 1)
};

struct Application {
  std::string model;      // a path (made absolute from the mapping file's directory)
  int64_t batch = 0;
  double samples = 0;
  std::string note;
};

using Mapping = std::map<std::string, Application>;

std::vector<WorkloadJob> read_workload(const std::string& path);
Mapping read_mapping(const std::string& path);
// Every job's application is in the mapping, else InputError naming the row.
void check_applications(const std::vector<WorkloadJob>& jobs, const Mapping& mapping, const std::string& workload);

}  // namespace tensoropt::cluster
