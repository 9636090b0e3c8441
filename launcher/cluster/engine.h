// The cluster simulator's event engine (`tensoropt simulate`, docs/design.md "launcher/cluster"):
// a workload of training jobs on a cluster of G GPUs under one scheduling policy, from event to
// event (arrivals, completions, and the times a policy asks to decide again), with no fixed tick.
//
// A job has a submit time, an amount of work (samples), and a speed at every GPU count k (samples
// per second; 0 where it does not fit, as its frontier says: no plan point fits k GPUs' memory).
// At each event the policy gives every active job (submitted, unfinished) its GPUs; the engine
// applies them and charges each change:
//   - a job started for the first time pauses for its launch cost (0: at once);
//   - a running job whose count changes pauses for its resize cost under an elastic policy
//     (Policy::elastic), for its stop-resume cost otherwise;
//   - a job stopped (0 GPUs, a preemption) pays its stop-resume cost when it runs again.
// A pause holds the job's GPUs (they count as used) while it makes no progress. Between events
// each running job progresses at its speed; the next event is the earliest arrival, completion,
// or decision time a policy asked for, so completions fall exactly where the speeds put them.
//
// Load. Where jobs slow each other down (CPU workers on one machine share its memory bandwidth:
// `tensoropt schedule`), a job also has its speeds alone (Job::speed_alone, measured with the
// rest of the cluster idle), and Job::speed is then its speed with the cluster full. Between
// events a job on k of G GPUs, with `busy` GPUs held by all jobs, runs at
// alone + (full - alone) * (busy - k) / (G - k), the line between the two measurements (exact at
// both; on G = 2 the only two loads a job on 1 GPU sees). Policies decide on Job::speed.
//
// Errors: InternalError for a policy's bad decision (more GPUs than the cluster has, a count a job
// does not fit, a wrong number of entries) or one that leaves every active job waiting with no
// event to come. Pure; thread-safe for distinct policies.
#pragma once

#include <limits>
#include <string>
#include <vector>

namespace tensoropt::cluster {

struct Job {
  std::string name;
  double submit_s = 0;
  double work = 0;            // samples to train; > 0
  int requested = 1;          // the GPUs the workload asked for (what non-elastic policies give)
  std::vector<double> speed;  // speed[k], k = 0..G: samples per second on k GPUs; 0 where it does not fit
  std::vector<double> speed_alone;  // empty, or as speed, with the rest of the cluster idle (see Load)
  double launch_s = 0;        // the pause its first start costs (process start, import, load)
  double resize_s = 0;        // the pause an elastic resize costs it
  double restart_s = 0;       // what stopping and resuming it costs (a preemption, a non-elastic change)
};

// An active job as a policy sees it, in submit order.
struct JobView {
  const Job* job = nullptr;
  double done = 0;            // samples trained
  double attained_gpu_s = 0;  // GPU-seconds held so far (Tiresias' attained service)
  int gpus = 0;               // held now
  bool started = false;       // has run before
};

struct Decision {
  std::vector<int> gpus;  // per active job, in the views' order
  double next_s = std::numeric_limits<double>::infinity();  // when to decide again with no other event
};

class Policy {
 public:
  virtual ~Policy() = default;
  virtual std::string name() const = 0;
  // Elastic: may change a running job's GPU count (a resize); otherwise a change is a stop-resume.
  virtual bool elastic() const = 0;
  virtual Decision decide(double now, const std::vector<JobView>& active, int gpus) = 0;
};

struct JobResult {
  std::string name;
  double submit_s = 0, start_s = 0, finish_s = 0;
  int resizes = 0;         // changes of a running job's count, and restarts after a preemption
  double paused_s = 0;     // time spent in their pauses
  double gpu_s = 0;        // GPU-seconds held
  double jct_s() const { return finish_s - submit_s; }
};

struct Result {
  std::string policy;
  int gpus = 0;
  std::vector<JobResult> jobs;  // in submit order
  double makespan_s = 0;        // from the first submit to the last finish
  double avg_jct_s() const;
  double median_jct_s() const;
  double p99_jct_s() const;     // nearest rank
  double gpu_hours() const;
  double utilisation() const;   // GPU-seconds held over gpus x makespan
  int resizes() const;
  double paused_s() const;
};

// A policy's decision for `active` on a cluster of `gpus`: InternalError naming the policy when it
// has the wrong number of counts, gives a job a count it does not fit, or more GPUs than there are.
void check_decision(const Decision& d, const std::vector<JobView>& active, int gpus, const std::string& policy);

// Job j's speed on k GPUs of `gpus` while `busy` GPUs are held in all (see Load). REQUIRES: k <= busy.
double speed_at(const Job& j, int k, int busy, int gpus);

// REQUIRES: every job fits some k <= gpus (speed[k] > 0); speed has gpus + 1 entries, and
// speed_alone none or as many.
Result simulate(const std::vector<Job>& jobs, int gpus, Policy& policy);

// The smallest count >= k (and <= the cluster) a job fits, else 0.
int fitting_at_least(const Job& j, int k);
// The smallest count above k at which the job is faster than at k, else 0 (counts between
// planned ones run as the planned count below them, no faster).
int next_faster(const Job& j, int k);

}  // namespace tensoropt::cluster
