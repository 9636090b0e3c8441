// One worker of an elastic job (`run --elastic`, docs/runtime.md "Elastic jobs"): it trains as
// run_worker does, in generations. A generation is a group of N workers meeting in the store under
// its own prefix (meeting.h) and running the plan's point for N (the plan holds a frontier for
// every count the job may take; each count's point is worked out when the worker starts).
//
// A resize. At check steps (every step at first, then about every 0.2 s of steps) rank 0 looks for
// the launcher's go-ahead (switch.json, control.h) and tells the others (a broadcast of four
// integers, with the next check and checkpoint) the step to switch after, about 0.05 s on;
// meanwhile the workers that stay meet the joining ones as the next generation. At that step's
// end every worker takes its shards (ShardedExecutor::local_shards) and the buffers whole, and the
// shards move to the new point's layouts (reshard.h): in the old group when shrinking (then the
// workers not below the new count exit), in the new one when growing (after rank 0 broadcast the
// buffers and step count, handover.h). The step count and the data position go on: the global
// batch is the same at every size and each step's batch a function of the step alone
// (runtime/data.h), so the losses and samples are those of an unresized run.
//
// A joining worker (TENSOROPT_GENERATION G > 0) imports the model and sets its backend up while
// the old group trains, says it is ready (control::ready_path), waits for the go-ahead, then meets
// generation G.
//
// A lost worker. A collective that fails (CommError: a peer died), or the launcher's regroup seen
// at a check, ends the generation: the worker keeps what it holds (a whole replica,
// ShardedExecutor::local_whole; its shards), closes the group, and meets the group regroup.json
// names; the members agree (handover.h) to go on from their own shards, or from the newest whole
// state one holds (sent to the others), or exit kExitNoReplica for the launcher to restart them
// from the checkpoint. The report's history (history.h) comes from the member with the longest.
//
// Every --checkpoint-every K steps (by default after 100 steps, then at intervals of at least 100
// steps that keep the checkpoints near 0.5% of the time: 200 times the last checkpoint's seconds
// over the typical step's) the group gathers the whole state and rank 0 writes
// DIR/checkpoint.onnx, after DIR/history.json. A generation the launcher restarts
// (TENSOROPT_RESTART) resumes from that checkpoint and history, and adds the recovery
// DIR/recovery.json describes.
//
// Rank 0 writes the control directory's status.json (step, workers, samples consumed, the point
// and mesh, predicted and measured step time, the resizes with their pause, the recoveries) and,
// with --report, every step (with its "workers" and "samples"), the resizes and the recoveries.
// Errors: as run_worker. Not thread-safe (one per process).
#pragma once

#include <iosfwd>

#include "launcher/launch/place.h"
#include "launcher/train/settings.h"

namespace tensoropt {

int run_elastic_worker(const TrainSettings& s, const WorkerPlace& place, std::ostream& out, std::ostream& err);

}  // namespace tensoropt
