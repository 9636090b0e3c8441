// The parts of a worker's run (worker.cc) that the elastic worker (worker.cc) shares: the
// model imported for a point's settings, the point's prediction, a --resume checkpoint read whole,
// --save, and the closing figures gathered from every rank. Not thread-safe (one per process).
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <vector>

#include "graph/ir.h"
#include "launcher/comm/communicator.h"
#include "launcher/runtime/array.h"
#include "launcher/runtime/optimizer.h"
#include "launcher/runtime/sharded_executor.h"
#include "launcher/runtime/weights.h"
#include "launcher/train/loop.h"
#include "launcher/train/prediction.h"
#include "launcher/train/report.h"
#include "launcher/train/settings.h"
#include "planner/plan_file.h"

namespace tensoropt {

Graph import_for(const TrainSettings& s, const planner::PlanSettings& ps);

PointPrediction predict_for(const TrainSettings& s, const Graph& g, const planner::PlanSettings& ps, const planner::StoredStrategy& stored,
                            int threads, const profiler::ProfileCosts& costs);

// --resume: a checkpoint is the whole model (whatever strategy wrote it), read whole into `loaded`;
// its optimizer state is kept whole here until the executor can take this worker's part of it.
struct Resumed {
  std::map<int, std::vector<runtime::Array>> state;
  int64_t steps = 0;
  bool had_state = false;
};
Resumed read_checkpoint(const TrainSettings& s, const Graph& g, runtime::Backend& backend, runtime::LoadedState& loaded);

// --save: every worker takes part in gathering the whole model; worker 0 writes it.
void save_whole(const TrainSettings& s, const Graph& g, runtime::Backend& backend, runtime::ShardedExecutor& ex,
                const runtime::Optimizer& optimizer, comm::Communicator& communicator, bool lead, std::ostream& out);

// Every rank's median step time, peak memory, median time blocked in collectives and memory by
// kind at its peak, gathered on every rank (a collective): kEach figures per rank.
constexpr size_t kEach = 3 + runtime::kMemoryKinds;
std::vector<double> gather_figures(const LoopResult& loop, runtime::Allocator& allocator, comm::Communicator& communicator, int world);

// One training step of the sharded executor: forward, loss, backward, the optimizer's update and
// ZeRO-2's gather of the updated chunks, synchronised with the device.
TrainStep sharded_step(runtime::ShardedExecutor& ex, runtime::Optimizer& optimizer, runtime::Backend& backend);

// The report's opening objects: the model, the strategy run, the device, the costs, the optimizer.
nlohmann::ordered_json report_head(const TrainSettings& s, const Graph& g, const planner::StoredStrategy& stored, const runtime::Backend& backend,
                                   int workers, int threads, const profiler::ProfileCosts& costs);

// Rank 0's closing table: the slowest rank's time, the largest peak's memory by kind, each rank's
// peak; returns the report's predicted and measured objects, with every rank's figures.
ReportPair print_group_table(std::ostream& out, const PointPrediction& predicted, const std::vector<double>& all, int world);

}  // namespace tensoropt
