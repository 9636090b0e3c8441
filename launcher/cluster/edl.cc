// edl (policy.h): shrink running jobs to admit new ones, grow the smallest into idle GPUs.
#include <algorithm>

#include "launcher/cluster/policy.h"

namespace tensoropt::cluster {
namespace {

// The largest count below k that j fits, else 0.
int fitting_below(const Job& j, int k) {
  for (int c = k - 1; c >= 1; --c)
    if (j.speed[static_cast<size_t>(c)] > 0) return c;
  return 0;
}

class Edl final : public Policy {
 public:
  std::string name() const override { return "edl"; }
  bool elastic() const override { return true; }
  Decision decide(double, const std::vector<JobView>& active, int gpus) override {
    Decision d;
    int free = keep_running(active, gpus, d);
    for (size_t i = 0; i < active.size(); ++i) {
      if (d.gpus[i] > 0) continue;
      const int need = fitting_at_least(*active[i].job, 1);
      // Shrink the job holding the most GPUs, a step at a time, until the new one fits.
      while (free < need) {
        int widest = -1;
        for (size_t k = 0; k < active.size(); ++k)
          if (d.gpus[k] > 0 && fitting_below(*active[k].job, d.gpus[k]) > 0 && (widest < 0 || d.gpus[k] > d.gpus[static_cast<size_t>(widest)]))
            widest = static_cast<int>(k);
        if (widest < 0) break;
        const auto w = static_cast<size_t>(widest);
        const int to = fitting_below(*active[w].job, d.gpus[w]);
        free += d.gpus[w] - to;
        d.gpus[w] = to;
      }
      if (free < need) break;  // no room even with every job at its least
      d.gpus[i] = need;
      free -= need;
    }
    // Idle GPUs: grow the job holding the fewest, where its speed gains.
    while (free > 0) {
      int fewest = -1, to_best = 0;
      for (size_t i = 0; i < active.size(); ++i) {
        if (d.gpus[i] == 0) continue;
        const int to = next_faster(*active[i].job, d.gpus[i]);
        if (to == 0 || to - d.gpus[i] > free) continue;
        const std::vector<double>& s = active[i].job->speed;
        if (s[static_cast<size_t>(to)] <= s[static_cast<size_t>(d.gpus[i])]) continue;
        if (fewest < 0 || d.gpus[i] < d.gpus[static_cast<size_t>(fewest)]) {
          fewest = static_cast<int>(i);
          to_best = to;
        }
      }
      if (fewest < 0) break;
      free -= to_best - d.gpus[static_cast<size_t>(fewest)];
      d.gpus[static_cast<size_t>(fewest)] = to_best;
    }
    return d;
  }
};

}  // namespace

std::unique_ptr<Policy> make_edl() { return std::make_unique<Edl>(); }

}  // namespace tensoropt::cluster
