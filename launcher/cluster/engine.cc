#include "launcher/cluster/engine.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "graph/error.h"

namespace tensoropt::cluster {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Live {
  size_t index = 0;  // into jobs
  JobView view;
  double pause_until = 0;
  bool done = false;
};

std::vector<double> sorted_jcts(const Result& r) {
  std::vector<double> v;
  for (const JobResult& j : r.jobs) v.push_back(j.jct_s());
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace

double Result::avg_jct_s() const {
  if (jobs.empty()) return 0;
  double s = 0;
  for (const JobResult& j : jobs) s += j.jct_s();
  return s / static_cast<double>(jobs.size());
}

double Result::median_jct_s() const {
  const std::vector<double> v = sorted_jcts(*this);
  if (v.empty()) return 0;
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double Result::p99_jct_s() const {
  const std::vector<double> v = sorted_jcts(*this);
  if (v.empty()) return 0;
  const auto rank = static_cast<size_t>(std::ceil(0.99 * static_cast<double>(v.size())));
  return v[std::max<size_t>(rank, 1) - 1];
}

double Result::gpu_hours() const {
  double s = 0;
  for (const JobResult& j : jobs) s += j.gpu_s;
  return s / 3600;
}

double Result::utilisation() const { return makespan_s > 0 ? gpu_hours() * 3600 / (gpus * makespan_s) : 0; }

int Result::resizes() const {
  int n = 0;
  for (const JobResult& j : jobs) n += j.resizes;
  return n;
}

double Result::paused_s() const {
  double s = 0;
  for (const JobResult& j : jobs) s += j.paused_s;
  return s;
}

int fitting_at_least(const Job& j, int k) {
  for (int c = std::max(k, 1); c < static_cast<int>(j.speed.size()); ++c)
    if (j.speed[static_cast<size_t>(c)] > 0) return c;
  return 0;
}

int next_faster(const Job& j, int k) {
  const double now = k > 0 ? j.speed[static_cast<size_t>(k)] : 0;
  for (int c = k + 1; c < static_cast<int>(j.speed.size()); ++c)
    if (j.speed[static_cast<size_t>(c)] > now) return c;
  return 0;
}

double speed_at(const Job& j, int k, int busy, int gpus) {
  const double full = j.speed[static_cast<size_t>(k)];
  if (j.speed_alone.empty() || k >= gpus) return full;
  const double alone = j.speed_alone[static_cast<size_t>(k)];
  const double f = std::clamp(static_cast<double>(busy - k) / (gpus - k), 0.0, 1.0);
  return alone + (full - alone) * f;
}

void check_decision(const Decision& d, const std::vector<JobView>& active, int gpus, const std::string& policy) {
  if (d.gpus.size() != active.size()) throw InternalError("policy " + policy + ": " + std::to_string(d.gpus.size()) + " counts for " + std::to_string(active.size()) + " jobs");
  int used = 0;
  for (size_t i = 0; i < active.size(); ++i) {
    const int k = d.gpus[i];
    const Job& j = *active[i].job;
    if (k < 0 || k > gpus || (k > 0 && j.speed[static_cast<size_t>(k)] <= 0))
      throw InternalError("policy " + policy + ": " + std::to_string(k) + " GPUs for job " + j.name + ", which does not fit them");
    used += k;
  }
  if (used > gpus) throw InternalError("policy " + policy + ": " + std::to_string(used) + " GPUs given on a cluster of " + std::to_string(gpus));
}

Result simulate(const std::vector<Job>& jobs, int gpus, Policy& policy) {
  Result r;
  r.policy = policy.name();
  r.gpus = gpus;
  std::vector<size_t> order(jobs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return jobs[a].submit_s < jobs[b].submit_s; });
  for (const Job& j : jobs) {
    TO_CHECK(static_cast<int>(j.speed.size()) == gpus + 1 && j.work > 0);
    TO_CHECK(j.speed_alone.empty() || j.speed_alone.size() == j.speed.size());
    TO_CHECK(fitting_at_least(j, 1) > 0);
  }
  r.jobs.resize(jobs.size());
  for (size_t i = 0; i < order.size(); ++i) {
    const Job& j = jobs[order[i]];
    r.jobs[i] = {j.name, j.submit_s, 0, 0, 0, 0, 0};
  }
  std::vector<Live> active;
  size_t next_arrival = 0, finished = 0;
  double now = jobs.empty() ? 0 : jobs[order[0]].submit_s;
  const double first = now;
  double decide_at = kInf;
  int still = 0;  // events in a row at the same time
  while (finished < jobs.size()) {
    while (next_arrival < order.size() && jobs[order[next_arrival]].submit_s <= now) {
      Live l;
      l.index = next_arrival;
      l.view.job = &jobs[order[next_arrival]];
      active.push_back(l);
      ++next_arrival;
    }
    if (active.empty()) {
      now = jobs[order[next_arrival]].submit_s;
      continue;
    }
    std::vector<JobView> views;
    for (const Live& l : active) views.push_back(l.view);
    const Decision d = policy.decide(now, views, gpus);
    check_decision(d, views, gpus, r.policy);
    for (size_t i = 0; i < active.size(); ++i) {
      Live& l = active[i];
      const int was = l.view.gpus, k = d.gpus[i];
      JobResult& out = r.jobs[l.index];
      if (k == was) continue;
      if (k > 0) {
        double cost = 0;
        if (was == 0 && !l.view.started) {
          out.start_s = now;
          cost = l.view.job->launch_s;
        } else if (was == 0) {
          cost = l.view.job->restart_s;
        } else {
          cost = policy.elastic() ? l.view.job->resize_s : l.view.job->restart_s;
        }
        if (l.view.started) {
          ++out.resizes;
          out.paused_s += cost;  // what resizes and restarts lose; a launch is not one
        }
        l.pause_until = now + cost;
        l.view.started = true;
      }
      l.view.gpus = k;
    }
    decide_at = d.next_s > now ? d.next_s : kInf;
    int busy = 0;
    for (const Live& l : active) busy += l.view.gpus;
    // The next event: an arrival, a completion, or the policy's own time.
    double next = decide_at;
    if (next_arrival < order.size()) next = std::min(next, jobs[order[next_arrival]].submit_s);
    for (const Live& l : active) {
      if (l.view.gpus == 0) continue;
      const double speed = speed_at(*l.view.job, l.view.gpus, busy, gpus);
      next = std::min(next, std::max(now, l.pause_until) + (l.view.job->work - l.view.done) / speed);
    }
    if (next == kInf) throw InternalError("policy " + r.policy + " runs none of " + std::to_string(active.size()) + " waiting jobs on " + std::to_string(gpus) + " GPUs, and no event is to come");
    for (Live& l : active) {
      if (l.view.gpus == 0) continue;
      const double speed = speed_at(*l.view.job, l.view.gpus, busy, gpus);
      const double from = std::max(now, l.pause_until);
      if (next > from) l.view.done += speed * (next - from);
      l.view.attained_gpu_s += l.view.gpus * (next - now);
      r.jobs[l.index].gpu_s += l.view.gpus * (next - now);
      // Done within rounding (what is left takes less than the clock can tell apart at this
      // time): its completion is this event.
      if (l.view.job->work - l.view.done <= speed * 1e-9 * std::max(1.0, next)) {
        l.done = true;
        r.jobs[l.index].finish_s = next;
        ++finished;
      }
    }
    active.erase(std::remove_if(active.begin(), active.end(), [](const Live& l) { return l.done; }), active.end());
    // Time must move: a policy asking to decide again at once, over and over, is a fault.
    still = next > now ? 0 : still + 1;
    if (still > 4 * static_cast<int>(jobs.size()) + 16) throw InternalError("policy " + r.policy + ": the simulation does not advance past " + std::to_string(now) + " s");
    now = next;
  }
  for (const JobResult& j : r.jobs) r.makespan_s = std::max(r.makespan_s, j.finish_s - first);
  return r;
}

}  // namespace tensoropt::cluster
