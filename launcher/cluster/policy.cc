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

}  // namespace tensoropt::cluster
