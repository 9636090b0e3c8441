// One worker of an elastic job (`run --elastic`, docs/runtime.md "Elastic jobs"): it trains as
// run_worker does, in generations. A generation is a group of N workers meeting in the store under
// its own prefix and running the plan's point for N (the plan holds a frontier for every count the
// job may take). At check steps (every step at first, then about every 0.2 s of steps) rank 0
// looks for the launcher's go-ahead (switch.json, launcher/elastic/control.h) and tells the others
// (a broadcast of four integers, with the next check and checkpoint) the step to switch after, about 0.05 s on; meanwhile the workers
// that stay meet the joining ones as the next generation (its rendezvous overlaps those steps). At
// that step's end the group hands over: every worker gathers the whole model and optimizer state
// (ShardedExecutor::gather_whole), those whose rank is not below the new count exit, growing, rank
// 0 broadcasts the state to the new group (packed, one buffer per dtype), and each
// worker takes its shard of the new point. The step count and the data position go on: the
// global batch is the same at every size and each step's batch a function of the step alone
// (runtime/data.h), so the losses and samples are those of an unresized run.
//
// A joining worker (TENSOROPT_GENERATION G > 0) imports the model and sets its backend up while
// the old group trains, says it is ready (control::ready_path), waits for the go-ahead, then meets
// generation G.
//
// Every --checkpoint-every K steps (by default after 100 steps, then at intervals of at least 100
// steps that keep the checkpoints near 0.5% of the time: 200 times the last checkpoint's seconds
// over the typical step's) the group gathers the whole state and rank 0 writes
// DIR/checkpoint.onnx, after DIR/history.json (the report's steps so far, resizes, recoveries). A
// generation the launcher restarts after a lost worker (TENSOROPT_RESTART) resumes from that
// checkpoint and history, and adds the recovery DIR/recovery.json describes.
//
// Rank 0 writes the control directory's status.json (step, workers, samples consumed, the point
// and mesh, predicted and measured step time, the resizes with their pause) and, with --report,
// every step (with its "workers" and "samples") and the resizes.
// Errors: as run_worker. Not thread-safe (one per process).
#pragma once

#include <iosfwd>

#include "launcher/launch/place.h"
#include "launcher/train/settings.h"

namespace tensoropt {

int run_elastic_worker(const TrainSettings& s, const WorkerPlace& place, std::ostream& out, std::ostream& err);

}  // namespace tensoropt
