#include "launcher/train/loop.h"

#include <algorithm>
#include <chrono>

#include "graph/error.h"
#include "launcher/train/report.h"

namespace tensoropt {

LoopResult run_steps(runtime::DataSource& data, runtime::Allocator& allocator, runtime::StepContext ctx, const TrainStep& step,
                     const LoopOptions& o) {
  LoopResult r;
  ctx.timer = o.timer;
  for (int64_t s = o.first; s < o.first + o.count; ++s) {
    runtime::Batch batch = data.next(s);
    ctx.step = s;
    if (o.timer && s == o.first + 1) o.timer->reset();
    const auto t0 = std::chrono::steady_clock::now();
    const double blocked0 = o.blocked_clock ? o.blocked_clock() : 0;
    const double loss = step(std::move(batch), ctx);
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    r.seconds.push_back(dt);
    if (o.blocked_clock) r.blocked.push_back(o.blocked_clock() - blocked0);
    const runtime::MemoryStats ms = allocator.stats();
    if (o.out) *o.out << step_line(s, loss, dt, o.batch, static_cast<double>(ms.live_total), static_cast<double>(ms.peak_total)) << std::flush;
    if (o.out) {
      nlohmann::ordered_json entry = {{"step", s}, {"loss", loss}, {"time_s", dt}, {"samples_per_s", static_cast<double>(o.batch) / dt}};
      if (o.memory_in_report) {
        entry["live_memory_bytes"] = ms.live_total;
        entry["peak_memory_bytes"] = ms.peak_total;
      }
      entry["samples"] = data.samples(s);
      r.steps.push_back(std::move(entry));
    }
    if (o.stop_after && o.stop_after(s, loss, dt)) break;
  }
  return r;
}

double steady_median(const std::vector<double>& v) {
  TO_CHECK(!v.empty());
  std::vector<double> later(v.size() > 1 ? v.begin() + 1 : v.begin(), v.end());
  std::sort(later.begin(), later.end());
  return later[later.size() / 2];
}


}  // namespace tensoropt
