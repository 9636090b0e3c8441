#include "launcher/train_common.h"

#include <algorithm>
#include <cstdio>

namespace tensoropt {

std::string human_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.2f %s", b, units[u]);
  return buf;
}

std::string human_seconds(double s) {
  char buf[32];
  if (s < 1) std::snprintf(buf, sizeof buf, "%.1f ms", s * 1e3);
  else std::snprintf(buf, sizeof buf, "%.3f s", s);
  return buf;
}

planner::Cluster worker_cluster(const std::string& name, int threads) {
  planner::Cluster cluster = planner::load_cluster(name);
  if (cluster.name == "cpu") {
    cluster.gpu.peak_flops_fp32 *= threads;
    cluster.gpu.peak_flops_tf32 *= threads;
    cluster.gpu.peak_flops_bf16 *= threads;
    cluster.gpu.memory_bandwidth *= std::min(threads, 4);
  }
  return cluster;
}

std::string step_line(int64_t step, double loss, double seconds, int64_t batch, double live_bytes, double peak_bytes) {
  char line[200];
  std::snprintf(line, sizeof line, "step %-5lld loss %-10.5f time %-10s %9.1f samples/s   memory %s (peak %s)\n",
                static_cast<long long>(step), loss, human_seconds(seconds).c_str(), static_cast<double>(batch) / seconds,
                human_bytes(live_bytes).c_str(), human_bytes(peak_bytes).c_str());
  return line;
}

}  // namespace tensoropt
