#include "launcher/cluster/policy.h"

#include <algorithm>

#include "graph/error.h"

namespace tensoropt::cluster {

std::vector<std::string> policy_names() { return {"fifo", "tiresias", "doubling", "edl", "frontier"}; }

std::unique_ptr<Policy> make_policy(std::string_view name) {
  if (name == "fifo") return make_fifo();
  if (name == "tiresias") return make_tiresias();
  if (name == "doubling") return make_doubling();
  if (name == "edl") return make_edl();
  if (name == "frontier") return make_frontier();
  std::string known;
  for (const std::string& n : policy_names()) known.append(known.empty() ? "" : ", ").append(n);
  throw InputError("--policy " + std::string(name) + ": unknown (" + known + ")");
}

int requested_fit(const Job& j, int gpus) {
  if (const int k = fitting_at_least(j, std::min(j.requested, gpus)); k > 0) return k;
  for (int k = std::min(j.requested, gpus); k >= 1; --k)
    if (j.speed[static_cast<size_t>(k)] > 0) return k;
  return 0;
}

int keep_running(const std::vector<JobView>& active, int gpus, Decision& d) {
  d.gpus.clear();
  for (const JobView& v : active) {
    d.gpus.push_back(v.gpus);
    gpus -= v.gpus;
  }
  return gpus;
}

int admit_on_fewest(const std::vector<JobView>& active, int gpus, Decision& d) {
  d.gpus.assign(active.size(), 0);
  for (size_t i = 0; i < active.size(); ++i) {
    const int least = fitting_at_least(*active[i].job, 1);
    if (least > gpus) continue;
    d.gpus[i] = least;
    gpus -= least;
  }
  return gpus;
}

}  // namespace tensoropt::cluster
