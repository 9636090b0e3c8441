// doubling (policy.h): Capes et al.'s doubling heuristic for ring all-reduce jobs.
#include "launcher/cluster/policy.h"

namespace tensoropt::cluster {
namespace {

class Doubling final : public Policy {
 public:
  std::string name() const override { return "doubling"; }
  bool elastic() const override { return true; }
  Decision decide(double, const std::vector<JobView>& active, int gpus) override {
    Decision d;
    int free = admit_on_fewest(active, gpus, d);
    // Double the job that gains most speed per added GPU, while one can.
    while (true) {
      int best = -1;
      double best_gain = 0;
      for (size_t i = 0; i < active.size(); ++i) {
        const int k = d.gpus[i];
        if (k == 0 || k > free) continue;
        const std::vector<double>& s = active[i].job->speed;
        const double gain = (s[static_cast<size_t>(2 * k)] / s[static_cast<size_t>(k)] - 1) / k;
        if (gain > best_gain) {
          best = static_cast<int>(i);
          best_gain = gain;
        }
      }
      if (best < 0) break;
      free -= d.gpus[static_cast<size_t>(best)];
      d.gpus[static_cast<size_t>(best)] *= 2;
    }
    return d;
  }
};

}  // namespace

std::unique_ptr<Policy> make_doubling() { return std::make_unique<Doubling>(); }

}  // namespace tensoropt::cluster
