#include "cli/profile_use.h"

#include "launcher/runtime/backend_registry.h"
#include "launcher/train/settings.h"
#include "profiler/device_id.h"

namespace tensoropt::cli {

profiler::ProfileCosts cli_costs(const std::optional<std::string>& profile, const planner::Cluster& cluster, planner::Precision precision,
                                 int gpus) {
  const bool cpu = cluster.cpu_workers();
  std::optional<profiler::DeviceId> here;
  if (profile && cpu) here = profiler::device_id(*runtime::make_backend("cpu", runtime::BackendOptions{1, 0}));
  const int threads = cpu ? kernel_threads(TrainSettings{}, gpus) : 0;
  return profiler::profile_costs(profile, cluster, precision, cpu ? gpus : 0, threads, here ? &*here : nullptr);
}

}  // namespace tensoropt::cli
