// `tensoropt run --gpus N` for N > 1: the workers and the launcher that starts them (issue 13).
//
// A worker is one process of the group: it reads its rank and the world size from the variables
// of the launcher that started it (worker_place), meets the others through a store
// (--rendezvous file:DIR or redis://HOST:PORT; the local launcher sets TENSOROPT_RENDEZVOUS), and
// trains its shard of one point of a plan for N GPUs with the ShardedExecutor over Gloo: every
// worker takes the same global batch (seeded synthetic data or the .npy files) and keeps its
// shard. Rank 0 prints the step lines and, at the end, measured against predicted with every
// rank's step time and peak memory, and writes --report.
//
// Launching: launcher/launch/ (where a worker sits in its group: place.h; N workers on this
// machine: local.h).
//
// Checkpoints: --resume reads the one-device checkpoint whole and each worker takes its shard;
// --save gathers the whole model (ShardedExecutor::gather_whole) and worker 0 writes it, so a
// checkpoint moves between strategies and GPU counts. The peak memory reported is that of the
// training steps (what was read whole to start is gone).
//
// Not yet: bf16 with N > 1.
#pragma once

#include <iosfwd>
#include <string>

#include "launcher/launch/place.h"
#include "launcher/train/settings.h"
#include "planner/plan_file.h"

namespace tensoropt {

// The plan point to run with `gpus` workers (--plan, --point), checked against the model and the
// flags (--batch, --dtype): InputError otherwise. A strategy file (docs/plan-format.md, names or
// rules) is checked against --gpus (its mesh's size) and --batch (its "batch", when it gives one).
// The launcher checks it before any worker starts.
planner::StoredStrategy checked_point(const TrainSettings& s, int gpus);

// The settings the point runs with: a plan file's own; for a strategy file the flags' (--batch,
// else the file's "batch", else 8; --frozen; --dtype) in the space `evaluate` costs strategy files
// in (recompute on every op that can, ZeRO-2 offered, every parameter splittable).
planner::PlanSettings point_settings(const TrainSettings& s, const planner::StoredStrategy& stored);

// Imports the model and resolves `stored` in its strategy space as the workers will: InputError
// (a rule that fits no op, a name not in the space) before any worker starts.
void check_strategy_resolves(const TrainSettings& s, const planner::StoredStrategy& stored, int threads);

// One worker's training; `gpus` is the --gpus value (it must be the world size).
int run_worker(const TrainSettings& s, int gpus, const WorkerPlace& place, std::ostream& out, std::ostream& err);

}  // namespace tensoropt
