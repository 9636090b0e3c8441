// fifo (policy.h): first come, first served, never resized.
#include "launcher/cluster/policy.h"

namespace tensoropt::cluster {
namespace {

class Fifo final : public Policy {
 public:
  std::string name() const override { return "fifo"; }
  bool elastic() const override { return false; }
  Decision decide(double, const std::vector<JobView>& active, int gpus) override {
    Decision d;
    int free = keep_running(active, gpus, d);
    for (size_t i = 0; i < active.size(); ++i) {
      if (active[i].gpus > 0) continue;
      const int need = requested_fit(*active[i].job, gpus);
      if (need > free) break;  // the head of the queue waits, and so does everyone behind it
      d.gpus[i] = need;
      free -= need;
    }
    return d;
  }
};

}  // namespace

std::unique_ptr<Policy> make_fifo() { return std::make_unique<Fifo>(); }

}  // namespace tensoropt::cluster
