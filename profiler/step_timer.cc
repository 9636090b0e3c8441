#include "profiler/step_timer.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "graph/error.h"
#include "launcher/runtime/data.h"
#include "launcher/runtime/executor.h"
#include "launcher/runtime/weights.h"

namespace tensoropt::profiler {

std::optional<StepOverhead> time_step_overhead(const Graph& g, const std::string& model_path, runtime::Backend& backend, int threads,
                                               bool bf16, int steps) {
  for (runtime::LossKind loss : {runtime::LossKind::CrossEntropy, runtime::LossKind::Mse}) {
    try {
      runtime::LoadedState loaded = runtime::load_state(g, model_path, backend, 1);
      runtime::ExecutorOptions eo;
      eo.loss = loss;
      eo.bf16 = bf16;
      runtime::Executor ex(g, backend, loaded.arrays, eo);
      std::unique_ptr<runtime::DataSource> data = runtime::synthetic_data(g, loss, 1, backend);
      const std::unique_ptr<runtime::KernelTimer> timer = backend.kernel_timer();
      std::vector<double> per_call;
      int last = steps + 1;
      for (int s = 1; s <= last; ++s) {
        runtime::Batch batch = data->next(s);
        timer->reset();
        runtime::StepContext ctx{&backend.allocator(), true, 1, s, std::max(threads, 1), timer.get()};
        backend.synchronize();
        const auto t0 = std::chrono::steady_clock::now();
        (void)ex.train_step(batch.inputs, batch.target, ctx);
        backend.synchronize();
        const double step = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        // Short steps: more of them (half a second's worth, at most 50), so the median holds.
        if (s == 1) last = 1 + std::clamp(static_cast<int>(0.5 / std::max(step, 1e-6)), steps, 50);
        double kernels = 0, calls = 0;
        for (const runtime::KernelTimer::Row& r : timer->report()) {
          kernels += r.seconds;
          calls += static_cast<double>(r.calls);
        }
        if (s > 1 && calls > 0) per_call.push_back(std::max(step - kernels, 0.0) / calls);
      }
      if (per_call.empty()) return std::nullopt;
      std::sort(per_call.begin(), per_call.end());
      return StepOverhead{per_call[per_call.size() / 2], static_cast<int>(per_call.size())};
    } catch (const InputError&) {
      // The other loss, or none.
    }
  }
  return std::nullopt;
}

}  // namespace tensoropt::profiler
