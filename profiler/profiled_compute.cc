#include "profiler/profiled_compute.h"

#include <algorithm>
#include <cctype>

#include "planner/parallel/redistribute.h"
#include "profiler/signature.h"

namespace tensoropt::profiler {

namespace {

bool fits(int entry, int wanted) { return wanted == 0 || entry == 0 || entry == wanted; }

std::optional<planner::StepKind> step_kind(const std::string& kind) {
  if (kind == "all_reduce") return planner::StepKind::AllReduce;
  if (kind == "all_gather") return planner::StepKind::AllGather;
  if (kind == "reduce_scatter") return planner::StepKind::ReduceScatter;
  if (kind == "all_to_all") return planner::StepKind::AllToAll;
  return std::nullopt;
}

// The GPU model of a name: its first word with a digit ("H100" in "NVIDIA H100 SXM5 80GB").
std::vector<std::string> model_words(const std::string& name) {
  std::vector<std::string> words;
  std::string w;
  for (char c : name + " ") {
    if (std::isspace(static_cast<unsigned char>(c))) {
      bool digit = false;
      for (char d : w) digit = digit || std::isdigit(static_cast<unsigned char>(d));
      if (digit) words.push_back(w);
      w.clear();
    } else {
      w += c;
    }
  }
  return words;
}

}  // namespace

ProfiledCompute::ProfiledCompute(const ProfileDb& db, std::string source, const planner::Cluster& cluster,
                                 planner::Precision precision, int workers, int threads)
    : source_(std::move(source)), analytic_(cluster, precision), precision_(precision) {
  for (const OpEntry& e : db.ops)
    if (fits(e.workers, workers) && fits(e.threads, threads)) ops_[e.signature] = planner::OpTime{e.forward_s, e.backward_s};
  for (const ExecutorEntry& e : db.executor)
    if (fits(e.workers, workers) && fits(e.threads, threads) && e.dtype == planner::precision_name(precision)) per_call_ = e.per_call_s;
  for (const OptimizerEntry& e : db.optimizer)
    if (fits(e.workers, workers) && fits(e.threads, threads)) {
      Points p = e.points;
      for (size_t i = 1; i < p.size(); ++i) p[i].second = std::max(p[i].second, p[i - 1].second);
      optimizer_[e.kind + " " + e.dtype] = std::move(p);
    }
}

planner::OpTime ProfiledCompute::op_time(const planner::ShardWork& work) const {
  const std::string sig = shard_signature(work, precision_);
  auto it = ops_.find(sig);
  std::lock_guard<std::mutex> lock(mu_);
  if (it == ops_.end()) {
    modelled_.insert(sig);
    return analytic_.op_time(work);
  }
  measured_.insert(sig);
  planner::OpTime t = it->second;
  t.forward += per_call_;
  if (work.has_backward) t.backward += per_call_;
  return t;
}

double ProfiledCompute::optimizer_time(double elements, const planner::Training& tr) const {
  if (elements <= 0) return 0;
  const std::string key = std::string(planner::optimizer_name(tr.optimizer)) + " " + std::string(planner::precision_name(tr.precision));
  auto it = optimizer_.find(key);
  std::lock_guard<std::mutex> lock(mu_);
  if (it == optimizer_.end()) {
    modelled_.insert("optimizer " + key);
    return analytic_.optimizer_time(elements, tr);
  }
  measured_.insert("optimizer " + key);
  return planner::interpolate(it->second, elements * tr.weight_bytes());
}

TermCounts ProfiledCompute::counts() const {
  std::lock_guard<std::mutex> lock(mu_);
  return TermCounts{static_cast<int>(measured_.size()), static_cast<int>(modelled_.size())};
}

TermCounts ProfileCosts::counts() const {
  TermCounts c = profiled ? profiled->counts() : TermCounts{};
  for (const planner::LinkLevel* l : {&cluster.intra_node, &cluster.inter_node}) {
    if (!l->measured) continue;
    const auto m = l->measured->counts();
    c.measured += m.measured;
    c.modelled += m.modelled;
  }
  return c;
}

std::string ProfileCosts::counts_text() const {
  const TermCounts n = counts();
  return "measured " + std::to_string(n.measured) + " terms, modelled " + std::to_string(n.modelled) + " (" + source + ")";
}

std::optional<std::string> profile_mismatch(const DeviceId& db, const DeviceId* here, const planner::Cluster& cluster) {
  const std::string made = "it was made on " + db.line();
  if (db.backend == "cpu" && !cluster.cpu_workers())
    return made + ", and cluster '" + cluster.name + "' has GPUs (" + cluster.gpu.name + ")";
  if (db.backend != "cpu") {
    if (cluster.cpu_workers()) return made + ", and cluster '" + cluster.name + "' has CPU workers";
    bool same_model = false;
    const std::vector<std::string> words = model_words(cluster.gpu.name);
    same_model = !words.empty() && db.name.find(words.front()) != std::string::npos;
    if (!same_model) return made + ", and cluster '" + cluster.name + "' has " + cluster.gpu.name;
  }
  if (here && !(*here == db)) return made + ", this is " + here->line();
  return std::nullopt;
}

ProfileCosts profile_costs(const std::optional<std::string>& path, const planner::Cluster& cluster, planner::Precision precision,
                           int workers, int threads, const DeviceId* here) {
  ProfileCosts pc;
  pc.cluster = cluster;
  if (path) {
    const ProfileDb db = read_profile(*path);
    if (const auto why = profile_mismatch(db.device, here, cluster)) {
      pc.warning = "profile " + *path + " does not apply (" + *why + "): ignored, costs are analytic";
    } else {
      pc.source = "profile " + *path;
      // A CPU profile's workers are this machine's processes: one node holds them all.
      if (db.device.backend == "cpu") pc.cluster.gpus_per_node = std::max(pc.cluster.gpus_per_node, workers);
      auto intra = std::make_shared<planner::MeasuredCollectives>();
      auto inter = std::make_shared<planner::MeasuredCollectives>();
      for (const CollectiveEntry& e : db.collectives) {
        const auto kind = step_kind(e.kind);
        if (!kind || !fits(e.workers, workers)) continue;
        (e.level == "inter" ? inter : intra)->add(*kind, e.group, e.points);
      }
      for (const OverlapEntry& e : db.overlap)
        if (fits(e.workers, workers)) intra->set_exposed(e.group, e.exposed);
      pc.cluster.intra_node.measured = intra;
      pc.cluster.inter_node.measured = inter;
      pc.profiled = std::make_shared<ProfiledCompute>(db, *path, pc.cluster, precision, workers, threads);
      pc.compute = pc.profiled;
      return pc;
    }
  }
  pc.compute = std::make_shared<planner::AnalyticCompute>(pc.cluster, precision);
  return pc;
}

}  // namespace tensoropt::profiler
