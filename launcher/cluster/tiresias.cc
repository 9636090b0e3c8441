// tiresias (policy.h): discretised two-dimensional least attained service, not elastic.
#include <algorithm>
#include <numeric>

#include "launcher/cluster/policy.h"

namespace tensoropt::cluster {
namespace {

// Attained service (GPU-seconds) below which a job is in the first queue: an hour of one GPU.
constexpr double kFirstQueueGpuSeconds = 3600;

class Tiresias final : public Policy {
 public:
  std::string name() const override { return "tiresias"; }
  bool elastic() const override { return false; }
  Decision decide(double now, const std::vector<JobView>& active, int gpus) override {
    std::vector<size_t> order(active.size());
    std::iota(order.begin(), order.end(), 0);
    // The first queue before the second; in each, by submit time (the views' order).
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return (active[a].attained_gpu_s >= kFirstQueueGpuSeconds) < (active[b].attained_gpu_s >= kFirstQueueGpuSeconds);
    });
    Decision d;
    d.gpus.assign(active.size(), 0);
    int free = gpus;
    for (size_t i : order) {
      const int need = requested_fit(*active[i].job, gpus);
      if (need > free) continue;  // skipped: a smaller job behind it may fit
      d.gpus[i] = need;
      free -= need;
    }
    // Decide again when a running job leaves the first queue.
    for (size_t i = 0; i < active.size(); ++i)
      if (d.gpus[i] > 0 && active[i].attained_gpu_s < kFirstQueueGpuSeconds)
        d.next_s = std::min(d.next_s, now + (kFirstQueueGpuSeconds - active[i].attained_gpu_s) / d.gpus[i]);
    return d;
  }
};

}  // namespace

std::unique_ptr<Policy> make_tiresias() { return std::make_unique<Tiresias>(); }

}  // namespace tensoropt::cluster
