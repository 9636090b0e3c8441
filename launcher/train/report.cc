#include "launcher/train/report.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "launcher/runtime/allocator.h"

namespace tensoropt {

std::string human_seconds(double s) {
  char buf[32];
  if (s < 1) std::snprintf(buf, sizeof buf, "%.1f ms", s * 1e3);
  else std::snprintf(buf, sizeof buf, "%.3f s", s);
  return buf;
}

planner::Cluster worker_cluster(const std::string& name, int threads) {
  planner::Cluster cluster = planner::load_cluster(name);
  if (cluster.name == "cpu") {
    cluster.gpu.peak_flops_fp32 *= threads;
    cluster.gpu.peak_flops_tf32 *= threads;
    cluster.gpu.peak_flops_bf16 *= threads;
    cluster.gpu.memory_bandwidth *= std::min(threads, 4);
  }
  return cluster;
}

std::string step_line(int64_t step, double loss, double seconds, int64_t batch, double live_bytes, double peak_bytes) {
  char line[200];
  std::snprintf(line, sizeof line, "step %-5lld loss %-10.5f time %-10s %9.1f samples/s   memory %s (peak %s)\n",
                static_cast<long long>(step), loss, human_seconds(seconds).c_str(), static_cast<double>(batch) / seconds,
                bytes_human(live_bytes).c_str(), bytes_human(peak_bytes).c_str());
  return line;
}

namespace {

struct KindPair {
  const char* name;
  runtime::MemoryKind measured;
  planner::Term predicted;
};
const KindPair kKinds[] = {
    {"parameters", runtime::MemoryKind::Parameters, planner::Term::Weights},
    {"gradients", runtime::MemoryKind::Gradients, planner::Term::Gradients},
    {"optimizer_state", runtime::MemoryKind::OptimizerState, planner::Term::OptimizerState},
    {"activations", runtime::MemoryKind::Activations, planner::Term::Activations},
    {"data_inputs", runtime::MemoryKind::Inputs, planner::Term::DataInputs},
    {"buffers", runtime::MemoryKind::Buffers, planner::Term::Buffers},
    {"transients", runtime::MemoryKind::Transients, planner::Term::Workspace},
};

}  // namespace

ReportPair print_against_predicted(std::ostream& out, const planner::Cost& predicted, const planner::Breakdown& breakdown,
                                   const Measured& measured) {
  out << "\n                    predicted    measured    measured/predicted\n";
  auto row = [&](const std::string& name, double p, double m, bool bytes) {
    char buf[160];
    const std::string ps = bytes ? bytes_human(p) : human_seconds(p), ms = bytes ? bytes_human(m) : human_seconds(m);
    char ratio[32] = "-";
    if (p > 0) std::snprintf(ratio, sizeof ratio, "%.3fx", m / p);
    std::snprintf(buf, sizeof buf, "  %-17s %11s %11s    %s\n", name.c_str(), ps.c_str(), ms.c_str(), ratio);
    out << buf;
  };
  row("time/step", predicted.time, measured.time, false);
  ReportPair r;
  r.predicted = {{"time_s", predicted.time}, {"memory_bytes", predicted.memory}};
  r.measured = {{"time_s", measured.time}, {"peak_memory_bytes", measured.peak}};
  if (measured.collectives >= 0) {
    double comm = 0;
    for (int t = static_cast<int>(planner::Term::CommFirst); t <= static_cast<int>(planner::Term::CommLast); ++t)
      comm += breakdown[static_cast<planner::Term>(t)];
    row("collectives", comm, measured.collectives, false);
    const double ps = predicted.time > 0 ? comm / predicted.time : 0, ms = measured.time > 0 ? measured.collectives / measured.time : 0;
    char buf[160];
    std::snprintf(buf, sizeof buf, "    %-15s %10.1f%% %10.1f%%\n", "share of step", 100 * ps, 100 * ms);
    out << buf;
    r.predicted["collectives_s"] = comm;
    r.predicted["collectives_share"] = ps;
    r.measured["collectives_s"] = measured.collectives;
    r.measured["collectives_share"] = ms;
  }
  row("peak memory", predicted.memory, measured.peak, true);
  nlohmann::ordered_json pk, mk;
  for (const KindPair& k : kKinds) {
    const double p = breakdown[k.predicted], m = measured.at_peak[static_cast<size_t>(k.measured)];
    row("  " + std::string(k.name), p, m, true);
    pk[k.name] = p;
    mk[k.name] = m;
  }
  r.predicted["memory_by_kind"] = pk;
  r.measured["memory_by_kind_at_peak"] = mk;
  return r;
}

std::string model_line(const TrainSettings& s, int64_t batch, bool bf16) {
  std::ostringstream line;
  line << "model    " << s.model << ", batch " << batch << ", " << runtime::optimizer_kind_name(s.optimizer.kind) << " lr " << s.optimizer.lr
       << ", " << (s.loss == runtime::LossKind::CrossEntropy ? "cross-entropy" : "mse")
       << (bf16 ? ", bf16 mixed precision (fp32 master weights)" : ", fp32") << "\n";
  return line.str();
}

nlohmann::ordered_json report_model(const TrainSettings& s, int64_t batch) { return {{"path", s.model}, {"batch", batch}}; }

nlohmann::ordered_json report_device(const runtime::Backend& backend, int workers, int threads, const std::string& cluster) {
  nlohmann::ordered_json d = {{"kind", backend.name()}};
  if (workers > 0) d["workers"] = workers;
  d["threads"] = threads;
  for (const auto& [key, value] : backend.facts().fields) d[key] = value;
  d["cluster"] = cluster;
  return d;
}

nlohmann::ordered_json report_optimizer(const TrainSettings& s) {
  return {{"name", runtime::optimizer_kind_name(s.optimizer.kind)}, {"lr", s.optimizer.lr}};
}

void finish_report(nlohmann::ordered_json& report, std::string_view dtype, const nlohmann::ordered_json& steps, const ReportPair& against,
                   const std::string& path) {
  report["dtype"] = std::string(dtype);
  report["steps"] = steps;
  report["predicted"] = against.predicted;
  report["measured"] = against.measured;
  write_report(path, report);
}

void write_report(const std::string& path, const nlohmann::ordered_json& report) {
  std::ofstream f(path + ".part");
  f << report.dump(2) << "\n";
  if (!f) throw InputError(path + ": cannot be written");
  f.close();
  std::filesystem::rename(path + ".part", path);
}

nlohmann::ordered_json print_kernel_times(std::ostream& out, runtime::KernelTimer& timer, const std::vector<double>& step_seconds) {
  const size_t timed = step_seconds.size() > 1 ? step_seconds.size() - 1 : 1;
  double step = 0;
  for (size_t i = step_seconds.size() > 1 ? 1 : 0; i < step_seconds.size(); ++i) step += step_seconds[i];
  step /= static_cast<double>(timed);
  const std::vector<runtime::KernelTimer::Row> rows = timer.report();
  double total = 0;
  for (const auto& r : rows) total += r.seconds;
  char line[200];
  std::snprintf(line, sizeof line, "kernels  per step, over %zu step%s: %.2f ms in kernels of a %.2f ms step\n", timed, timed == 1 ? "" : "s",
                total / static_cast<double>(timed) * 1e3, step * 1e3);
  out << line;
  nlohmann::ordered_json json = nlohmann::ordered_json::array();
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    const double ms = r.seconds / static_cast<double>(timed) * 1e3, share = step > 0 ? r.seconds / static_cast<double>(timed) / step : 0;
    const double calls = static_cast<double>(r.calls) / static_cast<double>(timed);
    if (i < 25) {
      std::snprintf(line, sizeof line, "  %-34s %7.1f calls %10.3f ms %6.1f%%\n", r.label.c_str(), calls, ms, share * 100);
      out << line;
    }
    json.push_back({{"kernels", r.label}, {"calls_per_step", calls}, {"ms_per_step", ms}, {"share_of_step", share}});
  }
  if (rows.size() > 25) out << "  (" << rows.size() - 25 << " more in the report)\n";
  return json;
}

}  // namespace tensoropt
