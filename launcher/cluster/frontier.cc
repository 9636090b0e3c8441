// frontier (policy.h): each GPU to the job whose frontier gains most from it.
#include <algorithm>

#include "launcher/cluster/policy.h"

namespace tensoropt::cluster {
namespace {

class Frontier final : public Policy {
 public:
  std::string name() const override { return "frontier"; }
  bool elastic() const override { return true; }
  Decision decide(double, const std::vector<JobView>& active, int gpus) override {
    Decision d;
    int free = admit_on_fewest(active, gpus, d);
    // Then the step (to the next count it fits) that adds the most speed per GPU, over the work
    // the job has left: finishing short jobs soon is what lowers the average completion time.
    while (free > 0) {
      int best = -1, best_to = 0;
      double best_gain = 0;
      for (size_t i = 0; i < active.size(); ++i) {
        const int k = d.gpus[i];
        if (k == 0) continue;
        const Job& j = *active[i].job;
        const int to = next_faster(j, k);
        if (to == 0 || to - k > free) continue;
        const double left = std::max(j.work - active[i].done, 1e-9);
        const double gain = (j.speed[static_cast<size_t>(to)] - j.speed[static_cast<size_t>(k)]) / (to - k) / left;
        if (gain > best_gain) {
          best = static_cast<int>(i);
          best_gain = gain;
          best_to = to;
        }
      }
      if (best < 0) break;
      free -= best_to - d.gpus[static_cast<size_t>(best)];
      d.gpus[static_cast<size_t>(best)] = best_to;
    }
    // A running job changes count only where it pays: shrinking (others need the GPUs) always; a
    // grow where the time it saves is more than twice the resize's pause.
    for (size_t i = 0; i < active.size(); ++i) {
      const int was = active[i].gpus, to = d.gpus[i];
      if (was == 0 || to <= was) continue;
      const Job& j = *active[i].job;
      const double left = j.work - active[i].done;
      const double saved = left / j.speed[static_cast<size_t>(was)] - left / j.speed[static_cast<size_t>(to)];
      if (saved <= 2 * j.resize_s) d.gpus[i] = was;
    }
    return d;
  }
};

}  // namespace

std::unique_ptr<Policy> make_frontier() { return std::make_unique<Frontier>(); }

}  // namespace tensoropt::cluster
