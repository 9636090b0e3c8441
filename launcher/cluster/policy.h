// The scheduling policies `tensoropt simulate` and `tensoropt schedule` take (--policy), each in a
// file of its own behind engine.h's Policy:
//   fifo      first come, first served: each job its requested GPUs once that many are free, in
//             submit order (the head of the queue blocks the rest); never resized.
//   tiresias  Tiresias-style discretised two-dimensional least attained service: jobs whose
//             attained GPU-seconds are below a threshold come first, then by submit time; each
//             gets its requested GPUs, others are skipped (not blocking) or preempted; not elastic.
//   doubling  Capes et al.'s doubling heuristic: every admitted job starts on its fewest GPUs, then
//             the job whose speed gains most per GPU from doubling its count doubles, while GPUs last.
//   edl       in the spirit of EDL: running jobs shrink to admit a new one, idle GPUs grow the
//             jobs holding the fewest.
//   frontier  ours: every admitted job on its fewest GPUs, then each further GPU to the job whose
//             frontier gains most from it (speed gained per GPU, over the work it has left), a
//             running job grown only where the time saved outweighs the resize.
// Errors: make_policy throws InputError naming an unknown policy and the known ones.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "launcher/cluster/engine.h"

namespace tensoropt::cluster {

std::vector<std::string> policy_names();
std::unique_ptr<Policy> make_policy(std::string_view name);

// What a non-elastic policy gives a job: the fewest GPUs at least its request (at most the
// cluster's) that it fits, else the most below the request that it fits.
int requested_fit(const Job& j, int gpus);

// Decisions' common starts. keep_running: every active job on the count it holds now; returns
// the GPUs left free. admit_on_fewest: from no GPUs given, each job in submit order on its fewest
// where they fit; returns the GPUs left free.
int keep_running(const std::vector<JobView>& active, int gpus, Decision& d);
int admit_on_fewest(const std::vector<JobView>& active, int gpus, Decision& d);

// The policies, one file each.
std::unique_ptr<Policy> make_fifo();
std::unique_ptr<Policy> make_tiresias();
std::unique_ptr<Policy> make_doubling();
std::unique_ptr<Policy> make_edl();
std::unique_ptr<Policy> make_frontier();

}  // namespace tensoropt::cluster
